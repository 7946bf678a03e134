// Call one gateway RPC method, once or N times over ONE WebSocket connection.
//
// Why not `openclaw gateway call`: every CLI invocation boots the whole OpenClaw CLI (3-10 s
// on this class of machine), which makes "inject 1,000 events" impossible and slows the
// compatibility suite to a crawl. This speaks the gateway protocol directly, as the loopback
// device-less operator of docs/gateway-protocol.md §4.1:
// client {id:"cli", mode:"cli"}, shared token, scopes ["operator.admin"] (chat.inject needs
// admin), no device, no Origin header. The `ws` package comes from the openclaw install, so
// nothing else is downloaded.
//
// Usage:
//   node gateway_rpc.mjs --openclaw-pkg DIR --url ws://127.0.0.1:PORT --token-file FILE
//        [--count N] [--in-flight K] [--timeout-ms MS] [--latencies] [--tls-fingerprint SHA256]
//        [--forwarded-for IP] METHOD [PARAMS_JSON]
// --tls-fingerprint: for a wss:// URL (start.sh --tls), the gateway's leaf certificate must have
// this SHA-256 (hex, colons optional); it is self-signed, so CA verification is off and the pin,
// checked on the upgrade before any frame is sent, is the only trust.
// --forwarded-for IP: send `X-Forwarded-For: IP` on the upgrade, so that a gateway whose
// gateway.trustedProxies lists 127.0.0.1 attributes the socket to IP (not direct loopback): how a
// device-less client fares on a remote gateway (its scopes are cleared, so this fails saying so).
// In PARAMS_JSON every "{i}" is replaced by the call index (0..N-1), so repeated calls can
// carry unique texts / idempotency keys.
// Output: count 1 -> the response payload as JSON on stdout; count > 1 -> one summary line
// {"method","count","ok","failed","elapsed_ms","first_error"} (+ "latencies_ms", one per call,
// with --latencies). Exit 1 on any failed call,
// on a handshake failure, or when --timeout-ms (whole run, default 120000) expires.
//
// Session mode (--session [--caps CAP,...]): one connection driven line by line, for flows
// that must stay on ONE connection (the gateway binds an exec approval to the connection that
// requested it: the re-invoke must come from the same connId) or that need the gateway's
// events (an approval client, caps "exec-approvals", receives exec.approval.requested).
// stdin: one {"id","method","params"} per line, sent as a request frame with that id.
// stdout: one line per frame: {"type":"hello","connId"} once connected, then
// {"type":"res","id","ok","payload"|"error"} (a twoPhase request answers twice with the same
// id) and {"type":"event","event","payload"}. Ends (exit 0) when stdin closes; exit 1 when the
// gateway closes the socket or --timeout-ms (the whole session) expires.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { randomUUID } from "node:crypto";

const USAGE =
  "usage: gateway_rpc.mjs --openclaw-pkg DIR --url URL --token-file FILE [--count N] [--in-flight K] [--timeout-ms MS] [--latencies] [--tls-fingerprint SHA256] [--forwarded-for IP] METHOD [PARAMS_JSON]\n" +
  "       gateway_rpc.mjs --openclaw-pkg DIR --url URL --token-file FILE --session [--caps CAP,...] [--timeout-ms MS] [--tls-fingerprint SHA256]";
const MAX_COUNT = 100000;
const MAX_IN_FLIGHT = 64;

function fail(message) {
  console.error(`gateway_rpc: ${message}`);
  process.exit(1);
}

function parseArgs(argv) {
  const opts = { count: 1, inFlight: 1, timeoutMs: 120000, positional: [], caps: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) fail(`${arg} needs a value\n${USAGE}`);
      return argv[++i];
    };
    if (arg === "--openclaw-pkg") opts.pkg = value();
    else if (arg === "--url") opts.url = value();
    else if (arg === "--token-file") opts.tokenFile = value();
    else if (arg === "--count") opts.count = Number(value());
    else if (arg === "--latencies") opts.latencies = true;
    else if (arg === "--session") opts.session = true;
    else if (arg === "--caps") opts.caps = value().split(",").filter(Boolean);
    else if (arg === "--in-flight") opts.inFlight = Number(value());
    else if (arg === "--timeout-ms") opts.timeoutMs = Number(value());
    else if (arg === "--tls-fingerprint") opts.tlsFingerprint = value();
    else if (arg === "--forwarded-for") opts.forwardedFor = value();
    else if (arg.startsWith("--")) fail(`unknown option ${arg}\n${USAGE}`);
    else opts.positional.push(arg);
  }
  if (!opts.pkg || !opts.url || !opts.tokenFile) fail(USAGE);
  if (opts.session ? opts.positional.length !== 0 : opts.positional.length < 1 || opts.positional.length > 2) fail(USAGE);
  if (!opts.session && opts.caps.length) fail(`--caps needs --session\n${USAGE}`);
  if (!Number.isInteger(opts.count) || opts.count < 1 || opts.count > MAX_COUNT) fail(`--count must be 1..${MAX_COUNT}`);
  if (!Number.isInteger(opts.inFlight) || opts.inFlight < 1 || opts.inFlight > MAX_IN_FLIGHT)
    fail(`--in-flight must be 1..${MAX_IN_FLIGHT}`);
  if (!Number.isInteger(opts.timeoutMs) || opts.timeoutMs < 1) fail("--timeout-ms must be a positive integer");
  const parsedUrl = new URL(opts.url);
  const host = parsedUrl.hostname;
  if (parsedUrl.protocol === "wss:") {
    const pin = normalizeFingerprint(opts.tlsFingerprint);
    if (!pin) fail("a wss:// URL needs --tls-fingerprint (64 hex digits, colons optional)");
    opts.tlsFingerprint = pin;
  } else if (opts.tlsFingerprint !== undefined) fail("--tls-fingerprint needs a wss:// URL");
  if (!["127.0.0.1", "localhost", "[::1]", "::1"].includes(host)) fail(`refusing non-loopback gateway URL ${opts.url}`);
  if (opts.session) return opts;
  [opts.method, opts.paramsTemplate] = [opts.positional[0], opts.positional[1] ?? "{}"];
  try {
    JSON.parse(opts.paramsTemplate.replaceAll("{i}", "0"));
  } catch (err) {
    fail(`PARAMS_JSON is not JSON: ${err.message}`);
  }
  return opts;
}

function normalizeFingerprint(value) {
  const hex = String(value ?? "").trim().replace(/^sha256:/i, "").replaceAll(":", "").toLowerCase();
  return /^[0-9a-f]{64}$/.test(hex) ? hex : "";
}

const opts = parseArgs(process.argv.slice(2));
const WebSocket = createRequire(path.join(path.resolve(opts.pkg), "package.json"))("ws");
const token = fs.readFileSync(opts.tokenFile, "utf8").trim();
const version = JSON.parse(fs.readFileSync(path.join(opts.pkg, "package.json"), "utf8")).version;

const deadline = setTimeout(() => fail(`timed out after ${opts.timeoutMs} ms`), opts.timeoutMs);
const pending = new Map(); // request id -> {resolve}
let sessionOpen = false; // --session: after the handshake every res/event frame goes to stdout
const emit = (line) => process.stdout.write(JSON.stringify(line) + "\n");
const ws = new WebSocket(opts.url, {
  maxPayload: 26214400,
  ...(opts.tlsFingerprint ? { rejectUnauthorized: false } : {}),
  ...(opts.forwardedFor ? { headers: { "X-Forwarded-For": opts.forwardedFor } } : {}),
});
if (opts.tlsFingerprint) {
  ws.on("upgrade", (res) => {
    const seen = normalizeFingerprint(res.socket.getPeerCertificate?.()?.fingerprint256);
    if (seen !== opts.tlsFingerprint) {
      ws.terminate();
      fail(`TLS pin mismatch: the gateway's certificate is sha256 ${seen || "(none)"}, pinned ${opts.tlsFingerprint}`);
    }
  });
}
ws.on("error", (err) => fail(`websocket error: ${err.message}`));
ws.on("close", (code, reason) => {
  if (pending.size > 0) fail(`gateway closed the socket (${code} ${reason}) with ${pending.size} request(s) pending`);
});

function request(method, params) {
  const id = randomUUID();
  return new Promise((resolve) => {
    pending.set(id, resolve);
    ws.send(JSON.stringify({ type: "req", id, method, params }));
  });
}

const challenge = new Promise((resolve) => {
  ws.on("message", (data) => {
    let frame;
    try {
      frame = JSON.parse(data.toString("utf8"));
    } catch {
      return;
    }
    if (frame.type === "event" && frame.event === "connect.challenge") resolve(frame.payload);
    else if (sessionOpen && frame.type === "res")
      emit({ type: "res", id: frame.id, ok: frame.ok === true, ...(frame.ok ? { payload: frame.payload } : { error: frame.error }) });
    else if (sessionOpen && frame.type === "event") emit({ type: "event", event: frame.event, payload: frame.payload });
    else if (frame.type === "res" && pending.has(frame.id)) {
      const resolveRequest = pending.get(frame.id);
      pending.delete(frame.id);
      resolveRequest(frame);
    }
  });
});

await challenge;
const hello = await request("connect", {
  minProtocol: 4,
  maxProtocol: 4,
  client: { id: "cli", mode: "cli", version, platform: "linux", displayName: "clawmcp e2e rpc" },
  role: "operator",
  scopes: ["operator.admin"],
  ...(opts.caps.length ? { caps: opts.caps } : {}),
  auth: { token },
});
if (!hello.ok) fail(`connect refused: ${JSON.stringify(hello.error)}`);
const grantedScopes = hello.payload?.auth?.scopes ?? [];
if (!grantedScopes.includes("operator.admin"))
  fail(`connected but without operator.admin (got ${JSON.stringify(grantedScopes)}); is this a loopback token gateway?`);

if (opts.session) {
  // The socket closing first is a failure (the close handler only fails with requests pending).
  ws.on("close", (code, reason) => fail(`gateway closed the session socket (${code} ${reason})`));
  sessionOpen = true;
  emit({ type: "hello", connId: hello.payload?.server?.connId ?? null });
  const { createInterface } = await import("node:readline");
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    let call;
    try {
      call = JSON.parse(line);
    } catch (err) {
      fail(`session input is not JSON: ${err.message}`);
    }
    if (typeof call?.id !== "string" || typeof call?.method !== "string") fail("session input needs string id and method");
    ws.send(JSON.stringify({ type: "req", id: call.id, method: call.method, params: call.params ?? {} }));
  }
  clearTimeout(deadline);
  ws.removeAllListeners("close");
  ws.close(1000);
  process.exit(0);
}

const started = Date.now();
let next = 0;
let ok = 0;
let failed = 0;
let firstError = null;
let lastPayload = null;
const latencies = [];
async function worker() {
  while (next < opts.count) {
    const index = next++;
    const params = JSON.parse(opts.paramsTemplate.replaceAll("{i}", String(index)));
    const sent = performance.now();
    const res = await request(opts.method, params);
    if (opts.latencies) latencies.push(performance.now() - sent);
    if (res.ok) {
      ok++;
      lastPayload = res.payload;
    } else {
      failed++;
      firstError ??= res.error;
    }
  }
}
await Promise.all(Array.from({ length: Math.min(opts.inFlight, opts.count) }, worker));
clearTimeout(deadline);
ws.close(1000);

// process.exit() does not wait for a pipe to take a large write (an 8 MiB file.fetch answer
// was cut at the pipe's 64 KiB): exit once the write has been flushed.
const flushed = (text) => new Promise((resolve) => process.stdout.write(text, resolve));
if (opts.count === 1) {
  if (failed) fail(`${opts.method} failed: ${JSON.stringify(firstError)}`);
  await flushed(JSON.stringify(lastPayload) + "\n");
} else {
  const summary = { method: opts.method, count: opts.count, ok, failed, elapsed_ms: Date.now() - started, first_error: firstError };
  if (opts.latencies) summary.latencies_ms = latencies;
  await flushed(JSON.stringify(summary) + "\n");
  if (failed) process.exit(1);
}
process.exit(0);
