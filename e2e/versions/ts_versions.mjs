// The official TypeScript SDK (@modelcontextprotocol/sdk 1.x) pinned to each MCP revision
// against every clawmcp surface: `clawmcp node` (StreamableHTTPClientTransport), `clawmcp tools`
// and `clawmcp serve` (StdioClientTransport, on the real gateway). The same checks, rows and
// matrix (matrix.json) as python_versions.py, whose header explains each check:
//   negotiated, tools-list, fields, call:<tool>, schema-enforced:<tool>, header (HTTP),
//   same-definitions (per surface, across revisions).
//
// Pinning: Client.connect always offers LATEST_PROTOCOL_VERSION (2025-11-25) and has no option
// for another, so a transport wrapper rewrites initialize's params.protocolVersion on the way
// out when the pin differs. The SDK then checks the answer itself (SUPPORTED_PROTOCOL_VERSIONS)
// and, over HTTP, calls transport.setProtocolVersion, which the wrapper forwards.
// Validation: the SDK parses every result with its zod schemas (ListToolsResultSchema,
// CallToolResultSchema) and callTool validates structuredContent against the outputSchema
// cached by listTools.
//
// Usage: node ts_versions.mjs SURFACE...   (node, tools, serve)
// Environment: CLAWMCP_E2E_NPM_DIR; node: CLAWMCP_E2E_URL, CLAWMCP_E2E_TOKEN_FILE;
// tools/serve: CLAWMCP_E2E_BIN, CLAWMCP_GW_URL, CLAWMCP_GW_TOKEN_FILE, CLAWMCP_VERSIONS_HOME.

import { createRequire } from 'node:module';
import { mkdirSync, openSync, closeSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { CheckFailed, expect, privateOpenClawEnv, requireEnv } from '../progress/checks.mjs';

const require = createRequire(join(requireEnv('CLAWMCP_E2E_NPM_DIR'), 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const MATRIX = JSON.parse(readFileSync(new URL('./matrix.json', import.meta.url), 'utf8'));
const CALL_TIMEOUT_MS = 60_000;
/** A whole (revision, surface) cell: a hang is a FAIL row, not a stuck run. */
const CELL_TIMEOUT_MS = 180_000;
/** Each gated field and the first revision that defines it (ISO dates compare as strings). */
const FIELD_SINCE = {
  title: '2025-06-18',
  outputSchema: '2025-06-18',
  structuredContent: '2025-06-18',
  'content:resource_link': '2025-06-18',
  'content:audio': '2025-03-26',
  icons: '2025-11-25',
  'serverInfo.title': '2025-06-18',
  'serverInfo.icons': '2025-11-25',
};
const GATED_TOOL_KEYS = ['title', 'outputSchema', 'icons'];

/** The JSON-RPC messages of one session as they crossed the transport, before the SDK parsed them. */
class Wire {
  constructor() {
    this.requests = new Map(); // id -> { method, params }
    this.answers = new Map(); // id -> the response message
    this.httpPosts = []; // [method, MCP-Protocol-Version header]
    this.tamperSchema = null; // when set, the next tools/call answer gets invalid structuredContent
    this.tamperedIds = new Set();
    this.offered = null;
  }
  resultsOf(method) {
    return [...this.requests]
      .filter(([id, request]) => request.method === method && this.answers.get(id)?.result)
      .map(([id]) => this.answers.get(id).result);
  }
}

/** A copy of `structured` that `schema` rejects: a required key dropped, else a typed property retyped. */
function invalidate(structured, schema) {
  const broken = structuredClone(structured);
  const required = schema.required ?? [];
  if (required.length && required[0] in broken) {
    delete broken[required[0]];
    return broken;
  }
  for (const [key, prop] of Object.entries(schema.properties ?? {})) {
    if (prop && typeof prop === 'object' && 'type' in prop) {
      broken[key] = prop.type === 'string' ? 0 : `not-a-${prop.type}`;
      return broken;
    }
  }
  throw new CheckFailed(`outputSchema has no required key or typed property to violate: ${JSON.stringify(schema)}`);
}

/** The SDK's own transport behind a wrapper that pins initialize's protocolVersion and records the wire. */
class PinnedTransport {
  constructor(inner, revision, wire) {
    this.inner = inner;
    this.revision = revision;
    this.wire = wire;
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
    inner.onmessage = (message, extra) => {
      if (message.id !== undefined && (message.result !== undefined || message.error !== undefined)) {
        if (message.result && this.wire.tamperedIds.has(message.id) && message.result.structuredContent) {
          message.result.structuredContent = invalidate(message.result.structuredContent, this.wire.tamperSchema ?? {});
        }
        this.wire.answers.set(message.id, structuredClone(message));
      }
      this.onmessage?.(message, extra);
    };
  }
  get sessionId() {
    return this.inner.sessionId;
  }
  get protocolVersion() {
    return this.inner.protocolVersion;
  }
  setProtocolVersion(version) {
    this.negotiated = version;
    this.inner.setProtocolVersion?.(version);
  }
  start() {
    return this.inner.start();
  }
  close() {
    return this.inner.close();
  }
  async send(message, options) {
    let outgoing = message;
    if (message.method === 'initialize') {
      this.wire.offered = message.params?.protocolVersion;
      outgoing = { ...message, params: { ...message.params, protocolVersion: this.revision } };
    }
    if (outgoing.method !== undefined && outgoing.id !== undefined) {
      if (outgoing.method === 'tools/call' && this.wire.tamperSchema) this.wire.tamperedIds.add(outgoing.id);
      this.wire.requests.set(outgoing.id, { method: outgoing.method, params: structuredClone(outgoing.params ?? {}) });
    }
    return this.inner.send(outgoing, options);
  }
}

function gatedFieldsPresent(wire) {
  const found = {};
  const note = (field, where) => {
    if (!(field in found)) found[field] = where;
  };
  for (const result of wire.resultsOf('initialize')) {
    for (const key of ['title', 'icons']) if (key in (result.serverInfo ?? {})) note(`serverInfo.${key}`, 'initialize');
  }
  for (const result of wire.resultsOf('tools/list')) {
    for (const tool of result.tools ?? []) for (const key of GATED_TOOL_KEYS) if (key in tool) note(key, `tools/list ${tool.name}`);
  }
  for (const [id, request] of wire.requests) {
    const result = wire.answers.get(id)?.result;
    if (request.method !== 'tools/call' || !result || wire.tamperedIds.has(id)) continue;
    if ('structuredContent' in result) note('structuredContent', `tools/call ${request.params.name}`);
    for (const block of result.content ?? []) {
      const kind = `content:${block.type}`;
      if (kind in FIELD_SINCE) note(kind, `tools/call ${request.params.name}`);
    }
  }
  return found;
}

const rows = [];
const listings = {}; // surface -> revision -> name -> tool (wire)

function row(ok, revision, surface, check, detail) {
  const name = `ts ${revision} ${surface} ${check}`;
  rows.push({ ok, name });
  const text = String(detail ?? '');
  console.log(`${ok ? 'PASS' : 'FAIL'}  ${name}  ${ok ? text.split('\n')[0] : text}`);
}

async function check(revision, surface, name, body) {
  try {
    row(true, revision, surface, name, (await body()) ?? '');
  } catch (error) {
    row(false, revision, surface, name, error instanceof CheckFailed ? error.message : error?.stack ?? String(error));
  }
}

function transportFor(surface, wire, revision) {
  if (surface === 'node') {
    const token = readFileSync(requireEnv('CLAWMCP_E2E_TOKEN_FILE'), 'utf8').trim();
    const recordingFetch = async (input, init) => {
      if (init?.method === 'POST' && typeof init.body === 'string') {
        let method = '<unparsable>';
        try {
          method = JSON.parse(init.body).method ?? '<response>';
        } catch {}
        wire.httpPosts.push([method, new Headers(init.headers).get('mcp-protocol-version')]);
      }
      return fetch(input, init);
    };
    return new StreamableHTTPClientTransport(new URL(requireEnv('CLAWMCP_E2E_URL')), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch: recordingFetch,
    });
  }
  const homes = requireEnv('CLAWMCP_VERSIONS_HOME');
  const env = privateOpenClawEnv(homes, `ts-${surface}-`);
  const args = [surface, '--url', requireEnv('CLAWMCP_GW_URL'), '--token-file', requireEnv('CLAWMCP_GW_TOKEN_FILE')];
  if (surface === 'serve') {
    args.push('--claude-channel-mode', 'off');
  } else {
    env.OPENCLAW_WORKSPACE = join(env.HOME, 'workspace');
    mkdirSync(env.OPENCLAW_WORKSPACE, { mode: 0o700 });
  }
  const stderr = openSync(join(homes, `ts-${surface}-${revision}.stderr`), 'w');
  const transport = new StdioClientTransport({ command: requireEnv('CLAWMCP_E2E_BIN'), args, env, cwd: env.HOME, stderr });
  transport.stderrFd = stderr;
  return transport;
}

async function callChecks(client, wire, revision, surface, listed) {
  for (const call of MATRIX.surfaces[surface].calls) {
    const schema = listed[call.name]?.outputSchema;
    await check(revision, surface, `call:${call.name}`, async () => {
      const result = await client.callTool(call, undefined, { timeout: CALL_TIMEOUT_MS });
      expect(result.isError !== true, `isError: ${JSON.stringify(result.content)}`);
      expect(result.content?.length > 0, 'no content blocks');
      const kinds = result.content.map((block) => block.type);
      if (result.structuredContent !== undefined) {
        // The spec (2025-06-18, tools): structured results SHOULD also come as a text block.
        expect(kinds.includes('text'), `structuredContent needs a text block beside it for older clients: ${kinds}`);
      }
      if (!schema) {
        // Allowed without an outputSchema; `clawmcp serve` does it like openclaw's TS SDK server.
        const extra = result.structuredContent !== undefined ? '; structuredContent (no schema to validate it against)' : '';
        return `content ${JSON.stringify(kinds)}, no outputSchema${extra}`;
      }
      expect(result.structuredContent && typeof result.structuredContent === 'object', 'outputSchema but no structuredContent');
      return `content ${JSON.stringify(kinds)}; structuredContent validated by the SDK against the outputSchema`;
    });
    if (!schema) continue;
    await check(revision, surface, `schema-enforced:${call.name}`, async () => {
      wire.tamperSchema = schema;
      try {
        await client.callTool(call, undefined, { timeout: CALL_TIMEOUT_MS });
      } catch (error) {
        expect(/does not match the tool's output schema/.test(String(error)), `rejected, but not by the schema check: ${error}`);
        return `SDK rejected invalid structuredContent: ${String(error).slice(0, 120)}`;
      } finally {
        wire.tamperSchema = null;
      }
      throw new CheckFailed('the SDK accepted structuredContent that violates the outputSchema');
    });
  }
}

async function cell(revision, surface) {
  const wire = new Wire();
  const inner = transportFor(surface, wire, revision);
  const transport = new PinnedTransport(inner, revision, wire);
  const client = new Client({ name: 'clawmcp-e2e-versions-ts', version: '0.1.0' });
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`cell did not finish in ${CELL_TIMEOUT_MS} ms`)), CELL_TIMEOUT_MS);
  });
  const body = async () => {
    await check(revision, surface, 'negotiated', async () => {
      await client.connect(transport, { timeout: CALL_TIMEOUT_MS });
      const [answer] = wire.resultsOf('initialize');
      expect(answer?.protocolVersion === revision, `initialize answered ${answer?.protocolVersion}`);
      if (surface === 'node') {
        expect(inner.protocolVersion === revision, `the HTTP transport adopted ${inner.protocolVersion}, pinned ${revision}`);
      }
      const how = wire.offered === revision ? 'as the SDK offered it' : `rewritten from the SDK's ${wire.offered}`;
      return `initialize ${revision} (${how}); SDK accepted it; server ${JSON.stringify(client.getServerVersion())}`;
    });
    if (!wire.resultsOf('initialize').length) return;
    const listed = {};
    await check(revision, surface, 'tools-list', async () => {
      const { tools } = await client.listTools(undefined, { timeout: CALL_TIMEOUT_MS });
      for (const tool of tools) listed[tool.name] = tool;
      const missing = MATRIX.surfaces[surface].calls.map((c) => c.name).filter((name) => !(name in listed));
      expect(!missing.length, `not listed: ${missing}; listed: ${Object.keys(listed)}`);
      const [raw] = wire.resultsOf('tools/list');
      (listings[surface] ??= {})[revision] = Object.fromEntries(raw.tools.map((tool) => [tool.name, tool]));
      const titled = tools.filter((t) => t.title).map((t) => t.name);
      const withSchema = tools.filter((t) => t.outputSchema).map((t) => t.name);
      return `${tools.length} tools; title: ${titled.length ? titled : 'none'}; outputSchema: ${withSchema.length ? withSchema : 'none'}`;
    });
    await callChecks(client, wire, revision, surface, listed);
  };
  try {
    await Promise.race([body(), deadline]);
  } catch (error) {
    row(false, revision, surface, 'connect', error?.stack ?? String(error));
  } finally {
    clearTimeout(timer);
    await client.close().catch(() => {});
    if (inner.stderrFd !== undefined) closeSync(inner.stderrFd);
  }
  await check(revision, surface, 'fields', async () => {
    const present = gatedFieldsPresent(wire);
    const early = Object.fromEntries(Object.entries(present).filter(([field]) => FIELD_SINCE[field] > revision));
    expect(!Object.keys(early).length, `fields ${revision} does not define: ${JSON.stringify(early)}`);
    return `present: ${Object.keys(present).sort().join(', ') || 'none'}; none beyond ${revision}`;
  });
  if (surface === 'node') {
    await check(revision, surface, 'header', async () => {
      const after = wire.httpPosts.slice(wire.httpPosts.findIndex(([method]) => method === 'initialize') + 1);
      expect(after.length, 'no requests after initialize');
      const wrong = after.filter(([, header]) => header !== revision);
      expect(!wrong.length, `MCP-Protocol-Version != ${revision}: ${JSON.stringify(wrong)}`);
      return `${after.length} POSTs after initialize, all MCP-Protocol-Version: ${revision}`;
    });
  }
}

function sameDefinitions(surface) {
  const seen = listings[surface] ?? {};
  const revisions = Object.keys(seen).sort();
  if (revisions.length < 2) {
    row(false, 'all', surface, 'same-definitions', `tools/list seen at ${JSON.stringify(revisions)} only`);
    return;
  }
  const core = (tool) => JSON.stringify(Object.fromEntries(Object.entries(tool).filter(([key]) => !GATED_TOOL_KEYS.includes(key))));
  const definedHere = MATRIX.surfaces[surface].definedHere;
  const problems = [];
  let compared = seen;
  if (definedHere) {
    const names = Object.fromEntries(revisions.map((revision) => [revision, Object.keys(seen[revision])]));
    if (revisions.some((revision) => JSON.stringify(names[revision]) !== JSON.stringify(names[revisions[0]]))) {
      problems.push(`the tool names differ between revisions: ${JSON.stringify(names)}`);
    }
    compared = Object.fromEntries(
      revisions.map((revision) => [revision, Object.fromEntries(Object.entries(seen[revision]).filter(([name]) => definedHere.includes(name)))]),
    );
  }
  const base = compared[revisions[0]];
  for (const revision of revisions.slice(1)) {
    const other = compared[revision];
    if (JSON.stringify(Object.keys(other)) !== JSON.stringify(Object.keys(base))) {
      problems.push(`${revision} lists ${Object.keys(other)}, ${revisions[0]} lists ${Object.keys(base)}`);
      continue;
    }
    for (const name of Object.keys(base)) {
      if (core(other[name]) !== core(base[name])) {
        problems.push(`${name} at ${revision}: ${core(other[name]).slice(0, 300)} vs ${core(base[name]).slice(0, 300)}`);
      }
    }
  }
  row(!problems.length, 'all', surface, 'same-definitions', problems.join('\n') || `${Object.keys(base).length} tools identical at ${revisions} beside gated fields${definedHere ? ' (the tools clawmcp defines; names of all equal)' : ''}`);
}

const surfaces = process.argv.slice(2);
const unknown = surfaces.filter((s) => !(s in MATRIX.surfaces));
if (!surfaces.length || unknown.length) {
  console.error(`usage: node ts_versions.mjs ${Object.keys(MATRIX.surfaces).join('|')}... (unknown: ${unknown})`);
  process.exit(2);
}
for (const surface of surfaces) {
  const revisions = [...MATRIX.revisions, ...Object.entries(MATRIX.legacyRevisions).filter(([, where]) => where.includes(surface)).map(([rev]) => rev)];
  for (const revision of revisions) {
    const started = performance.now();
    await cell(revision, surface);
    console.log(`TIME  ts ${revision} ${surface}  ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  sameDefinitions(surface);
}
const failed = rows.filter((r) => !r.ok).length;
console.log(`ts-versions: ${rows.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
