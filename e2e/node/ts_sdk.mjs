// Drive a running `clawmcp node` with the official TypeScript SDK (@modelcontextprotocol/sdk 1.x):
// Client + StreamableHTTPClientTransport, the bearer token in requestInit.headers.
//
// Why this exists: the TS SDK is what most MCP hosts embed. It uses undici fetch (sends
// `sec-fetch-mode: cors`, never Origin), opens a GET stream after initialize, treats any
// non-2xx POST as a transport error, and cancels by POSTing notifications/cancelled when an
// AbortSignal fires.
//
// Checks (each prints `PASS <name>` or `FAIL <name>: <why>`; exit 1 if any failed):
//   initialize, tools-list, system-which, device-info, screen-snapshot (an image block the SDK
//   validated, PNG of e2e/run.sh's white Xvfb root, every pixel decoded), screen-record (an
//   embedded video/mp4 blob resource the SDK validated, an MP4 ftyp box), unknown-tool,
//   cancel-system-run (AbortSignal -> notifications/cancelled accepted with 2xx; the sh + sleep
//   process tree is gone afterwards; the client still works), no-token-rejected.
//
// Environment: CLAWMCP_E2E_URL, CLAWMCP_E2E_TOKEN_FILE, CLAWMCP_E2E_NPM_DIR (where install.sh
// put node_modules; the packages are resolved from there, not from the repo).

import { createRequire } from 'node:module';
import { readFileSync, readdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { inflateSync } from 'node:zlib';

function requireEnv(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; run this driver through e2e/run.sh`);
  return value;
}

const require = createRequire(join(requireEnv('CLAWMCP_E2E_NPM_DIR'), 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const expectations = JSON.parse(readFileSync(new URL('./expectations.json', import.meta.url), 'utf8'));
const url = new URL(requireEnv('CLAWMCP_E2E_URL'));
const token = readFileSync(requireEnv('CLAWMCP_E2E_TOKEN_FILE'), 'utf8').trim();
// Generous bound for processes to appear/disappear; far below the sleep so a leak is caught.
const PROCESS_WAIT_MS = 15_000;

class CheckFailed extends Error {}
function expect(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

/**
 * Every request this client sends: JSON-RPC method, request body, HTTP status, and (for POSTs)
 * the response body, so a check can read the server's answer even after the SDK dropped it.
 */
const sent = [];
const transportErrors = [];
async function recordingFetch(input, init) {
  const response = await fetch(input, init);
  let method = `<${init?.method ?? 'GET'}>`;
  const body = typeof init?.body === 'string' ? init.body : '';
  if (body) {
    try {
      method = JSON.parse(body).method ?? '<response>';
    } catch {
      method = '<unparsable body>';
    }
  }
  const entry = { method, body, status: response.status, responseText: null };
  if (init?.method === 'POST') response.clone().text().then((text) => (entry.responseText = text));
  sent.push(entry);
  return response;
}

function newClient(headers) {
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers }, fetch: recordingFetch });
  const client = new Client({ name: 'clawmcp-e2e-ts-sdk', version: '0.1.0' });
  client.onerror = (error) => transportErrors.push(String(error));
  return { client, transport };
}

function toolPayload(result) {
  expect(!result.isError, `tool returned isError: ${JSON.stringify(result.content)}`);
  const texts = result.content.filter((block) => block.type === 'text');
  expect(texts.length === 1, `expected one text content block, got ${JSON.stringify(result.content)}`);
  return JSON.parse(texts[0].text);
}

/** Live processes whose argv contains `marker` (zombies have an empty cmdline). */
function markerProcesses(marker) {
  const found = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let argv;
    try {
      argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue;
    }
    if (argv.some((arg) => arg.includes(marker))) found.set(Number(name), argv);
  }
  return found;
}

async function waitFor(predicate, what) {
  const deadline = Date.now() + PROCESS_WAIT_MS;
  while (!predicate()) {
    if (Date.now() > deadline) throw new CheckFailed(`${what} (waited ${PROCESS_WAIT_MS / 1000}s)`);
    await sleep(50);
  }
}

/** An 8-bit RGB PNG (what screen.snapshot sends) as rows of RGB bytes, row filters undone. */
function pngRgbPixels(data) {
  expect(data.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'not a PNG');
  let at = 8;
  let header = null;
  const idat = [];
  while (at < data.length) {
    const length = data.readUInt32BE(at);
    const kind = data.toString('latin1', at + 4, at + 8);
    const body = data.subarray(at + 8, at + 8 + length);
    at += 12 + length;
    if (kind === 'IHDR') header = { width: body.readUInt32BE(0), height: body.readUInt32BE(4), depth: body[8], colour: body[9], interlace: body[12] };
    if (kind === 'IDAT') idat.push(body);
  }
  expect(header && header.depth === 8 && header.colour === 2 && header.interlace === 0, `PNG header ${JSON.stringify(header)}`);
  const raw = inflateSync(Buffer.concat(idat));
  const stride = header.width * 3;
  const rows = [];
  let previous = Buffer.alloc(stride);
  for (let y = 0; y < header.height; y += 1) {
    const kind = raw[y * (stride + 1)];
    const line = Buffer.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)));
    for (let x = 0; x < stride; x += 1) {
      const left = x >= 3 ? line[x - 3] : 0;
      const up = previous[x];
      const upLeft = x >= 3 ? previous[x - 3] : 0;
      let add = 0;
      if (kind === 1) add = left;
      else if (kind === 2) add = up;
      else if (kind === 3) add = (left + up) >> 1;
      else if (kind === 4) {
        const p = left + up - upLeft;
        const pa = Math.abs(p - left);
        const pb = Math.abs(p - up);
        const pc = Math.abs(p - upLeft);
        add = pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft;
      }
      line[x] = (line[x] + add) & 0xff;
    }
    rows.push(line);
    previous = line;
  }
  return { width: header.width, height: header.height, rows };
}

let passed = 0;
const failures = [];
async function check(name, body) {
  try {
    await body();
    passed += 1;
    console.log(`PASS ${name}`);
  } catch (error) {
    failures.push(name);
    console.log(`FAIL ${name}: ${error instanceof CheckFailed ? error.message : error?.stack ?? error}`);
  }
}

async function sessionChecks(client) {
  await check('initialize', async () => {
    expect(client.getServerVersion()?.name, `no serverInfo.name: ${JSON.stringify(client.getServerVersion())}`);
    expect(client.getServerCapabilities()?.tools, `no tools capability: ${JSON.stringify(client.getServerCapabilities())}`);
  });

  await check('tools-list', async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    const missing = expectations.requiredTools.filter((name) => !byName.has(name));
    expect(missing.length === 0, `tools/list lacks ${missing}; got ${[...byName.keys()].sort()}`);
    for (const name of expectations.requiredTools) {
      const tool = byName.get(name);
      expect(tool.description?.trim(), `${name}: empty description`);
      expect(tool.inputSchema?.type === 'object', `${name}: inputSchema ${JSON.stringify(tool.inputSchema)}`);
    }
  });

  await check('system-which', async () => {
    const payload = toolPayload(await client.callTool({ name: 'system.which', arguments: { bins: ['sh'] } }));
    const path = payload?.bins?.sh;
    expect(typeof path === 'string' && isAbsolute(path), `system.which sh: ${JSON.stringify(payload)}`);
  });

  await check('device-info', async () => {
    const payload = toolPayload(await client.callTool({ name: 'device.info', arguments: {} }));
    for (const field of expectations.deviceInfoStringFields) {
      expect(typeof payload[field] === 'string', `device.info.${field} missing or not a string: ${JSON.stringify(payload)}`);
    }
    expect(payload.deviceName === hostname(), `deviceName ${payload.deviceName} != hostname ${hostname()}`);
  });

  await check('screen-snapshot', async () => {
    const want = expectations.screenshot;
    const result = await client.callTool({ name: 'screen.snapshot', arguments: { includePointer: false } });
    expect(!result.isError, `screen.snapshot failed: ${JSON.stringify(result).slice(0, 300)}`);
    // The SDK validated the result against its own schema; the image block is ImageContent.
    const images = result.content.filter((block) => block.type === 'image');
    expect(images.length === 1 && images[0].mimeType === 'image/png', `image blocks: ${JSON.stringify(result.content.map((b) => b.type))}`);
    const meta = toolPayload(result);
    expect(meta.width === want.width && meta.height === want.height, `metadata ${JSON.stringify(meta)}`);
    expect(!JSON.stringify(meta).includes(images[0].data), 'base64 in the text block');
    const { width, height, rows } = pngRgbPixels(Buffer.from(images[0].data, 'base64'));
    expect(width === want.width && height === want.height, `decoded ${width}x${height}`);
    const white = Buffer.from(Array(width).fill(want.rgb).flat());
    expect(rows.every((row) => row.equals(white)), "not every pixel is the white root Xvfb shows");
  });

  await check('screen-record', async () => {
    const result = await client.callTool({ name: 'screen.record', arguments: { durationMs: 500, fps: 5 } });
    expect(!result.isError, `screen.record failed: ${JSON.stringify(result).slice(0, 300)}`);
    // The SDK validated the result against its own schema: an embedded resource with a blob.
    const embedded = result.content.filter((block) => block.type === 'resource');
    expect(embedded.length === 1 && embedded[0].resource.mimeType === 'video/mp4' && typeof embedded[0].resource.blob === 'string',
      `resource blocks: ${JSON.stringify(result.content.map((b) => b.type))}`);
    const video = Buffer.from(embedded[0].resource.blob, 'base64');
    expect(video.subarray(4, 8).toString('latin1') === 'ftyp', `not an MP4: ${video.subarray(0, 12).toString('hex')}`);
    const meta = toolPayload(result);
    expect(meta.bytes === video.length && meta.format === 'mp4', `metadata ${JSON.stringify(meta)} for ${video.length} bytes`);
    expect(!JSON.stringify(meta).includes(embedded[0].resource.blob), 'base64 in the text block');
  });

  await check('unknown-tool', async () => {
    const result = await client.callTool({ name: 'no.such.tool', arguments: {} });
    expect(result.isError === true, `unknown tool: expected isError, got ${JSON.stringify(result)}`);
  });

  await check('cancel-system-run', async () => {
    // A unique fractional sleep length marks the sh and its sleep grandchild in /proc.
    const marker = `${expectations.cancelSleepSeconds}.${String(randomInt(1_000_000)).padStart(6, '0')}`;
    const abort = new AbortController();
    const call = client.callTool(
      { name: 'system.run', arguments: { command: ['sh', '-c', `sleep ${marker} & wait`] } },
      undefined,
      { signal: abort.signal, timeout: 120_000 },
    );
    const outcome = call.then(
      (result) => ({ result }),
      (error) => ({ error }),
    );
    await waitFor(
      () => [...markerProcesses(marker).values()].some((argv) => argv[0].endsWith('sleep')),
      `system.run never started the sleep grandchild (${marker})`,
    );
    const started = Object.fromEntries(markerProcesses(marker));
    const reason = `clawmcp-e2e abort ${marker}`;
    abort.abort(reason);
    const { result, error } = await outcome;
    expect(!result, `aborted call resolved anyway: ${JSON.stringify(result)}`);
    expect(String(error?.message).includes(reason), `aborted call rejected with an unrelated error: ${error}`);
    await waitFor(
      () => sent.some((entry) => entry.method === 'notifications/cancelled'),
      'the SDK never POSTed notifications/cancelled',
    );
    const notification = sent.find((entry) => entry.method === 'notifications/cancelled');
    expect(notification.status >= 200 && notification.status < 300, `notifications/cancelled got HTTP ${notification.status}`);
    // The SDK ignores the late answer to the aborted POST; the server must still settle it
    // as a tool error saying it was cancelled (docs/node-http.md §9.5, notifications/cancelled).
    const callEntry = sent.find((entry) => entry.method === 'tools/call' && entry.body.includes(marker));
    await waitFor(() => callEntry?.responseText != null, 'no HTTP answer to the cancelled tools/call');
    const late = JSON.parse(callEntry.responseText);
    expect(
      late.result?.isError === true && /cancel/i.test(JSON.stringify(late.result.content)),
      `cancelled tools/call should end as a tool error mentioning cancellation, got ${callEntry.responseText}`,
    );
    await waitFor(
      () => markerProcesses(marker).size === 0,
      `process tree survived cancellation: was ${JSON.stringify(started)}, still ${JSON.stringify(Object.fromEntries(markerProcesses(marker)))}`,
    );
    await client.ping(); // the client and server still talk after a cancelled call
  });
}

async function main() {
  const { client, transport } = newClient({ Authorization: `Bearer ${token}` });
  try {
    await client.connect(transport);
  } catch (error) {
    failures.push('connect');
    console.log(`FAIL connect: ${error?.stack ?? error}`);
  }
  if (!failures.includes('connect')) {
    await sessionChecks(client);
    await client.close();
  }

  await check('no-token-rejected', async () => {
    const bare = newClient({});
    let error;
    try {
      await bare.client.connect(bare.transport);
    } catch (caught) {
      error = caught;
    }
    await bare.client.close();
    expect(error?.code === 401, `connect without token: expected StreamableHTTPError 401, got ${error ?? 'success'}`);
  });

  if (transportErrors.length > 0) {
    // Not failures by themselves (e.g. the optional GET stream), but worth seeing in the log.
    console.log(`note: transport onerror events: ${JSON.stringify(transportErrors)}`);
  }
  console.log(`ts-sdk: ${passed} passed, ${failures.length} failed`);
  process.exitCode = failures.length > 0 ? 1 : 0;
}

await main();
