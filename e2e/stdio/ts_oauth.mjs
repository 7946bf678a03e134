// The official TypeScript SDK (@modelcontextprotocol/sdk 1.x) configured the way OAuth-capable
// MCP hosts configure it, against a running `clawmcp node`, plus the same SDK over stdio through
// `clawmcp call --stdio`.
//
// What the SDK does (read from its client/streamableHttp.js and client/auth.js, 1.32.2): with an
// `authProvider`, the headers from `requestInit` are merged over the provider's token, and OAuth
// discovery (`auth()`: protected-resource metadata, then authorization-server metadata, then
// dynamic client registration) starts only when the server answers 401 (or 403
// insufficient_scope). So a working static header means no discovery at all; hosts that probe
// discovery on their own before connecting call the same discovery functions, which is what
// `discovery-answers-no-oauth` does. Against the node, every discovery URL answers 404 before the
// token check, which the SDK reads as "no OAuth here" instead of failing.
//
// Checks (each prints `PASS <name>` or `FAIL <name>: <why>`; exit 1 if any failed):
//   static-header-no-discovery  authProvider + static Authorization header: connects, lists and
//                               calls a tool; no /.well-known request is made, no OAuth flow starts
//   discovery-answers-no-oauth  the SDK's own discoverOAuthServerInfo() for the node's URL (root
//                               and /mcp), with and without the header: every probe is 404, the
//                               result is "no metadata", nothing throws; the client then connects
//   wrong-token-no-oauth-flow   a wrong static token: the SDK's 401-driven discovery gets 404s, its
//                               registration attempt is refused, connect fails naming the bearer
//                               token, and the provider is never asked to redirect to a login page
//   stdio-relay                 Client + StdioClientTransport spawning `clawmcp call --stdio`:
//                               tools/list, system.which, and progress of a 6 s system.run
//
// Environment: CLAWMCP_E2E_URL, CLAWMCP_E2E_TOKEN_FILE, CLAWMCP_E2E_DATA_DIR, CLAWMCP_E2E_BIN,
// CLAWMCP_E2E_NPM_DIR (where e2e/install.sh put node_modules).

import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

function requireEnv(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; run this driver through e2e/stdio/run.sh`);
  return value;
}

const require = createRequire(join(requireEnv('CLAWMCP_E2E_NPM_DIR'), 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { discoverOAuthServerInfo } = require('@modelcontextprotocol/sdk/client/auth.js');

const url = new URL(requireEnv('CLAWMCP_E2E_URL'));
const token = readFileSync(requireEnv('CLAWMCP_E2E_TOKEN_FILE'), 'utf8').trim();
const CALL_TIMEOUT_MS = 60_000;

class CheckFailed extends Error {}
function expect(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

/** A fetch that records path, method and status of every request the SDK makes. */
function recordingFetch() {
  const requests = [];
  const fetchFn = async (input, init) => {
    const response = await fetch(input, init);
    const target = new URL(input instanceof Request ? input.url : String(input));
    requests.push({ path: target.pathname, method: init?.method ?? 'GET', status: response.status });
    return response;
  };
  return { requests, fetchFn };
}

/**
 * An OAuth client provider like an interactive host's: it would register a client and send the
 * user to a login page if discovery found an authorization server. Records what it is asked.
 */
function recordingAuthProvider() {
  const calls = [];
  const provider = {
    get redirectUrl() {
      return 'http://127.0.0.1:1/oauth/callback';
    },
    get clientMetadata() {
      return { client_name: 'clawmcp-e2e-oauth-host', redirect_uris: ['http://127.0.0.1:1/oauth/callback'] };
    },
    clientInformation: () => (calls.push('clientInformation'), undefined),
    saveClientInformation: (info) => calls.push(`saveClientInformation ${JSON.stringify(info)}`),
    tokens: () => (calls.push('tokens'), undefined),
    saveTokens: () => calls.push('saveTokens'),
    redirectToAuthorization: (authorizationUrl) => calls.push(`redirectToAuthorization ${authorizationUrl}`),
    saveCodeVerifier: () => calls.push('saveCodeVerifier'),
    codeVerifier: () => 'unused',
  };
  return { calls, provider };
}

function httpClient(bearer) {
  const { requests, fetchFn } = recordingFetch();
  const { calls, provider } = recordingAuthProvider();
  const transport = new StreamableHTTPClientTransport(url, {
    authProvider: provider,
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
    fetch: fetchFn,
  });
  const client = new Client({ name: 'clawmcp-e2e-oauth-host', version: '0.1.0' });
  return { client, transport, requests, calls };
}

function toolPayload(result) {
  expect(!result.isError, `tool returned isError: ${JSON.stringify(result.content)}`);
  const texts = result.content.filter((block) => block.type === 'text');
  expect(texts.length === 1, `expected one text content block, got ${JSON.stringify(result.content)}`);
  return JSON.parse(texts[0].text);
}

async function listAndCall(client) {
  const { tools } = await client.listTools();
  expect(tools.some((tool) => tool.name === 'system.which'), `tools/list lacks system.which: ${tools.map((t) => t.name)}`);
  const payload = toolPayload(await client.callTool({ name: 'system.which', arguments: { bins: ['sh'] } }));
  expect(typeof payload.bins?.sh === 'string' && payload.bins.sh.startsWith('/'), `system.which sh: ${JSON.stringify(payload)}`);
}

function noOAuthFlow(calls) {
  const started = calls.filter((call) => /^(redirectToAuthorization|saveClientInformation|saveTokens|saveCodeVerifier)/.test(call));
  expect(started.length === 0, `the SDK started an OAuth flow: ${started.join('; ')}`);
}

async function staticHeaderNoDiscovery() {
  const { client, transport, requests, calls } = httpClient(token);
  await client.connect(transport);
  try {
    await listAndCall(client);
  } finally {
    await client.close();
  }
  const probes = requests.filter((request) => request.path.includes('/.well-known/'));
  expect(probes.length === 0, `discovery requests with a working header: ${JSON.stringify(probes)}`);
  expect(calls.includes('tokens'), `the authProvider was never consulted (calls: ${calls})`);
  noOAuthFlow(calls);
  const refused = requests.filter((request) => request.status === 401);
  expect(refused.length === 0, `requests refused with 401: ${JSON.stringify(refused)}`);
}

async function discoveryAnswersNoOAuth() {
  for (const serverUrl of [url, new URL('mcp', url)]) {
    for (const headers of [{ Authorization: `Bearer ${token}` }, {}]) {
      const { requests, fetchFn } = recordingFetch();
      const withHeaders = (input, init) => fetchFn(input, { ...init, headers: { ...(init?.headers ?? {}), ...headers } });
      const info = await discoverOAuthServerInfo(serverUrl, { fetchFn: withHeaders });
      const label = `${serverUrl} ${headers.Authorization ? 'with' : 'without'} the header`;
      expect(info.resourceMetadata === undefined, `${label}: protected-resource metadata ${JSON.stringify(info.resourceMetadata)}`);
      expect(
        info.authorizationServerMetadata === undefined,
        `${label}: authorization-server metadata ${JSON.stringify(info.authorizationServerMetadata)}`,
      );
      const paths = requests.map((request) => request.path);
      for (const document of ['oauth-protected-resource', 'oauth-authorization-server', 'openid-configuration']) {
        expect(paths.some((path) => path.includes(`/.well-known/${document}`)), `${label}: no ${document} probe in ${paths}`);
      }
      const notFound = requests.filter((request) => request.status !== 404);
      expect(notFound.length === 0, `${label}: probes not answered 404: ${JSON.stringify(notFound)}`);
    }
  }
  const { client, transport, calls } = httpClient(token);
  await client.connect(transport);
  try {
    await listAndCall(client);
  } finally {
    await client.close();
  }
  noOAuthFlow(calls);
}

async function wrongTokenNoOAuthFlow() {
  const { client, transport, requests, calls } = httpClient('not-the-token');
  let failure;
  try {
    await client.connect(transport);
  } catch (error) {
    failure = error;
  } finally {
    await client.close().catch(() => {});
  }
  expect(failure !== undefined, 'connect succeeded with a wrong token');
  expect(String(failure).includes('missing or invalid bearer token'), `the error does not name the bearer token: ${failure}`);
  const probes = requests.filter((request) => request.path.includes('/.well-known/'));
  expect(probes.length > 0, `a 401 with an authProvider should start discovery; requests: ${JSON.stringify(requests)}`);
  expect(probes.every((probe) => probe.status === 404), `discovery answers: ${JSON.stringify(probes)}`);
  const registration = requests.find((request) => request.path === '/register');
  expect(registration?.status === 401, `registration without a valid token must be refused: ${JSON.stringify(requests)}`);
  expect(!calls.some((call) => call.startsWith('redirectToAuthorization')), `a login page was opened: ${calls}`);
}

async function stdioRelay() {
  const port = url.port;
  const transport = new StdioClientTransport({
    command: requireEnv('CLAWMCP_E2E_BIN'),
    args: ['call', '--stdio', '--port', port, '--data-dir', requireEnv('CLAWMCP_E2E_DATA_DIR')],
    stderr: 'inherit',
  });
  const client = new Client({ name: 'clawmcp-e2e-ts-stdio', version: '0.1.0' });
  await client.connect(transport);
  try {
    await listAndCall(client);
    const progress = [];
    const result = await client.callTool({ name: 'system.run', arguments: { command: ['sleep', '6'] } }, undefined, {
      onprogress: (update) => progress.push(update),
      timeout: CALL_TIMEOUT_MS,
    });
    const payload = toolPayload(result);
    expect(payload.exitCode === 0 && payload.success === true, `sleep 6 failed: ${JSON.stringify(payload)}`);
    expect(progress.length > 0, 'no progress arrived through the relay during a 6 s call');
  } finally {
    await client.close();
  }
}

const checks = [
  ['static-header-no-discovery', staticHeaderNoDiscovery],
  ['discovery-answers-no-oauth', discoveryAnswersNoOAuth],
  ['wrong-token-no-oauth-flow', wrongTokenNoOAuthFlow],
  ['stdio-relay', stdioRelay],
];
let failed = 0;
for (const [name, check] of checks) {
  try {
    await check();
    console.log(`PASS ${name}`);
  } catch (error) {
    failed += 1;
    console.log(`FAIL ${name}: ${error instanceof CheckFailed ? error.message : error?.stack ?? error}`);
  }
}
console.log(`ts-oauth: ${checks.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
