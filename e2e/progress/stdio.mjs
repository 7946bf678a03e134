// Progress over stdio from the two stdio surfaces, with the TypeScript SDK's
// StdioClientTransport and a 12 s client timeout (see checks.mjs for the three checks):
//
//   serve  `clawmcp serve`: events_wait {timeout_ms: 30000} on a gateway where no event
//          arrives. The wait reaching its own limit is a normal result that says `timeout`.
//   tools  `clawmcp tools`: the local exec tool running ["sleep", "30"] in the foreground
//          (yieldMs above the run time, so it is not handed to the background). The result is
//          the normal finished-command result.
//
// Each session is its own bridge process with a private HOME and state dir (nothing reads or
// writes ~/.openclaw), connected to the real gateway.
//
// Usage: node stdio.mjs serve|tools
// Environment (set by e2e/progress/run.sh): CLAWMCP_E2E_BIN, CLAWMCP_E2E_NPM_DIR,
// CLAWMCP_GW_URL and CLAWMCP_GW_TOKEN_FILE (from e2e/gateway/start.sh's gateway.env),
// CLAWMCP_PROGRESS_HOME (a directory to create the private homes under).

import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { CheckFailed, expect, countIncoming, privateOpenClawEnv, requireEnv, runProgressChecks } from './checks.mjs';

const require = createRequire(join(requireEnv('CLAWMCP_E2E_NPM_DIR'), 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const bin = requireEnv('CLAWMCP_E2E_BIN');
const gatewayUrl = requireEnv('CLAWMCP_GW_URL');
const tokenFile = requireEnv('CLAWMCP_GW_TOKEN_FILE');
const homes = requireEnv('CLAWMCP_PROGRESS_HOME');
const CALL_SECONDS = 30;

function resultText(result) {
  return result.content.find((block) => block.type === 'text')?.text ?? '';
}

const SURFACES = {
  serve: {
    label: 'serve-stdio events_wait',
    args: ['serve', '--url', gatewayUrl, '--token-file', tokenFile, '--claude-channel-mode', 'off'],
    extraEnv: () => ({}),
    request: { name: 'events_wait', arguments: { timeout_ms: CALL_SECONDS * 1000 } },
    checkResult(result) {
      expect(!result.isError, `events_wait returned isError: ${JSON.stringify(result.content)}`);
      const text = resultText(result);
      expect(text.startsWith('timeout'), `events_wait should end at its own limit with "timeout", got ${JSON.stringify(text)}`);
    },
  },
  tools: {
    label: 'tools-stdio exec',
    args: ['tools', '--url', gatewayUrl, '--token-file', tokenFile],
    extraEnv(home) {
      const workspace = join(home, 'workspace');
      mkdirSync(workspace, { mode: 0o700 });
      return { OPENCLAW_WORKSPACE: workspace };
    },
    request: {
      name: 'exec',
      arguments: { command: ['sleep', String(CALL_SECONDS)], yieldMs: 2 * CALL_SECONDS * 1000, timeout: 4 * CALL_SECONDS },
    },
    checkResult(result) {
      const text = resultText(result);
      expect(!result.isError, `exec returned isError: ${JSON.stringify(text)}`);
      expect(text.includes('(no output)'), `exec should finish in the foreground with "(no output)", got ${JSON.stringify(text)}`);
    },
  },
};

const surfaceName = process.argv[2];
const surface = SURFACES[surfaceName];
if (!surface) {
  console.error(`usage: node stdio.mjs ${Object.keys(SURFACES).join('|')}`);
  process.exit(2);
}

async function openSession() {
  const env = privateOpenClawEnv(homes, `${surfaceName}-`);
  const transport = new StdioClientTransport({
    command: bin,
    args: surface.args,
    env: { ...env, ...surface.extraEnv(env.HOME) },
    stderr: 'inherit',
  });
  const client = new Client({ name: 'clawmcp-e2e-progress', version: '0.1.0' });
  await client.connect(transport);
  const seen = countIncoming(transport);
  // Closing stdin ends the session; the SDK then stops the child if it lingers.
  return { client, seen, close: () => client.close() };
}

const results = await runProgressChecks({
  label: surface.label,
  openSession,
  request: surface.request,
  checkResult: surface.checkResult,
}).catch((error) => {
  console.log(`FAIL ${surface.label}: ${error instanceof CheckFailed ? error.message : error?.stack ?? error}`);
  return [{ ok: false }];
});
const failed = results.filter((r) => !r.ok).length;
console.log(`progress ${surface.label}: ${results.length - failed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
