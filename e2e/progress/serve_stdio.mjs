// Progress over stdio from `clawmcp serve`, with the TypeScript SDK's StdioClientTransport:
// `events_wait {timeout_ms: 30000}` on a gateway where no event arrives, under a 12 s client
// timeout (see checks.mjs for the three checks). The wait reaching its own limit is a normal
// result that says `timeout`, not an error. Each session is its own `clawmcp serve` process
// with a private HOME and state dir (nothing reads or writes ~/.openclaw).
//
// Environment (set by e2e/progress/run.sh): CLAWMCP_E2E_BIN, CLAWMCP_E2E_NPM_DIR,
// CLAWMCP_GW_URL and CLAWMCP_GW_TOKEN_FILE (from e2e/gateway/start.sh's gateway.env),
// CLAWMCP_PROGRESS_HOME (a directory to create the private homes under).

import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { CheckFailed, expect, countIncoming, requireEnv, runProgressChecks } from './checks.mjs';

const require = createRequire(join(requireEnv('CLAWMCP_E2E_NPM_DIR'), 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const bin = requireEnv('CLAWMCP_E2E_BIN');
const gatewayUrl = requireEnv('CLAWMCP_GW_URL');
const tokenFile = requireEnv('CLAWMCP_GW_TOKEN_FILE');
const homes = requireEnv('CLAWMCP_PROGRESS_HOME');
mkdirSync(homes, { recursive: true, mode: 0o700 });
const WAIT_MS = 30_000;

/** A clean environment with a private HOME and state dir, shaped like e2e/gateway/harness.py's. */
function privateEnv() {
  const home = mkdtempSync(join(homes, 'serve-'));
  const state = join(home, 'state');
  for (const dir of [state, join(home, '.config'), join(home, '.local/share'), join(home, '.local/state'), join(home, '.cache')]) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }
  const config = join(state, 'openclaw.json');
  writeFileSync(config, `${JSON.stringify({ logging: { file: join(home, 'openclaw.log') } })}\n`, { mode: 0o600 });
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    LANG: 'C.UTF-8',
    HOME: home,
    OPENCLAW_HOME: home,
    OPENCLAW_STATE_DIR: state,
    OPENCLAW_CONFIG_PATH: config,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local/share'),
    XDG_STATE_HOME: join(home, '.local/state'),
    XDG_CACHE_HOME: join(home, '.cache'),
  };
}

async function openSession() {
  const transport = new StdioClientTransport({
    command: bin,
    args: ['serve', '--url', gatewayUrl, '--token-file', tokenFile, '--claude-channel-mode', 'off'],
    env: privateEnv(),
    stderr: 'inherit',
  });
  const client = new Client({ name: 'clawmcp-e2e-progress', version: '0.1.0' });
  await client.connect(transport);
  const seen = countIncoming(transport);
  // Closing stdin ends the session; the SDK then stops the child if it lingers.
  return { client, seen, close: () => client.close() };
}

function checkWaitResult(result) {
  expect(!result.isError, `events_wait returned isError: ${JSON.stringify(result.content)}`);
  const text = result.content.find((block) => block.type === 'text')?.text ?? '';
  expect(text.startsWith('timeout'), `events_wait should end at its own limit with "timeout", got ${JSON.stringify(text)}`);
}

const results = await runProgressChecks({
  label: 'serve-stdio events_wait',
  openSession,
  request: { name: 'events_wait', arguments: { timeout_ms: WAIT_MS } },
  checkResult: checkWaitResult,
}).catch((error) => {
  console.log(`FAIL serve-stdio: ${error instanceof CheckFailed ? error.message : error?.stack ?? error}`);
  return [{ ok: false }];
});
const failed = results.filter((r) => !r.ok).length;
console.log(`progress serve-stdio: ${results.length - failed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
