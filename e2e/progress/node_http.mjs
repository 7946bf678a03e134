// Progress over the loopback HTTP server of `clawmcp node`, with the TypeScript SDK's
// StreamableHTTPClientTransport: `system.run ["sleep","30"]` under a 12 s client timeout (see
// checks.mjs for the three checks). Also asserts how each answer travelled: the call with a
// progress token came back as `text/event-stream` (progress events, then the result), the call
// without one as plain `application/json` with the result alone.
//
// Environment (set by e2e/run.sh or e2e/progress/run.sh): CLAWMCP_E2E_URL,
// CLAWMCP_E2E_TOKEN_FILE, CLAWMCP_E2E_NPM_DIR (where e2e/install.sh put node_modules). The
// node's exec-approvals.json must let system.run run `sleep` (e2e/lib/node_host.sh seeds it).

import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { CheckFailed, expect, countIncoming, requireEnv, runProgressChecks } from './checks.mjs';

const require = createRequire(join(requireEnv('CLAWMCP_E2E_NPM_DIR'), 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const url = new URL(requireEnv('CLAWMCP_E2E_URL'));
const token = readFileSync(requireEnv('CLAWMCP_E2E_TOKEN_FILE'), 'utf8').trim();
// Longer than the sleep, so the process is never what ends the call.
const RUN_TIMEOUT_MS = 60_000;

/** A fetch that remembers the media type and the raw body of every tools/call answer. */
function recordingFetch(calls) {
  return async (input, init) => {
    const response = await fetch(input, init);
    const body = typeof init?.body === 'string' ? init.body : '';
    if (init?.method === 'POST' && body.includes('"tools/call"')) {
      const entry = { contentType: response.headers.get('content-type'), text: null };
      calls.push(entry);
      response
        .clone()
        .text()
        .then((text) => (entry.text = text), (error) => (entry.text = `<body failed: ${error}>`));
    }
    return response;
  };
}

async function openSession() {
  const calls = [];
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: recordingFetch(calls),
  });
  const client = new Client({ name: 'clawmcp-e2e-progress', version: '0.1.0' });
  await client.connect(transport);
  const seen = countIncoming(transport);
  return { client, seen, calls, close: () => client.close() };
}

function checkRunResult(result) {
  expect(!result.isError, `system.run returned isError: ${JSON.stringify(result.content)}`);
  const payload = JSON.parse(result.content.find((block) => block.type === 'text').text);
  expect(payload.success === true && payload.exitCode === 0 && payload.timedOut === false, `sleep 30 did not succeed: ${JSON.stringify(payload)}`);
}

async function checkHowTheAnswerTravelled(kind, session) {
  expect(session.calls.length === 1, `expected one tools/call POST, saw ${session.calls.length}`);
  const [call] = session.calls;
  // The SDK has the result, so the body is complete; its clone settles right after.
  for (let i = 0; call.text === null && i < 100; i += 1) await new Promise((r) => setTimeout(r, 10));
  const progressInBody = (call.text.match(/notifications\/progress/g) ?? []).length;
  if (kind === 'with-token') {
    expect(call.contentType === 'text/event-stream', `with a token: expected text/event-stream, got ${call.contentType}`);
    expect(progressInBody >= 2, `the event stream carried ${progressInBody} progress events`);
    const events = call.text.trimEnd().split('\n\n');
    const last = JSON.parse(events.at(-1).split('\n').find((line) => line.startsWith('data: ')).slice(6));
    expect(last.result && last.id !== undefined, `the last event is not the response: ${events.at(-1)}`);
  } else {
    expect(call.contentType === 'application/json', `without a token: expected application/json, got ${call.contentType}`);
    expect(progressInBody === 0 && JSON.parse(call.text).result, `plain answer was not the result alone: ${call.text}`);
  }
}

const results = await runProgressChecks({
  label: 'node-http system.run',
  openSession,
  request: { name: 'system.run', arguments: { command: ['sleep', '30'], timeoutMs: RUN_TIMEOUT_MS } },
  checkResult: checkRunResult,
  afterCall: checkHowTheAnswerTravelled,
}).catch((error) => {
  console.log(`FAIL node-http: ${error instanceof CheckFailed ? error.message : error?.stack ?? error}`);
  return [{ ok: false }];
});
const failed = results.filter((r) => !r.ok).length;
console.log(`progress node-http: ${results.length - failed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
