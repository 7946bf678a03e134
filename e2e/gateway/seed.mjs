// Seed one routed conversation into an OpenClaw state dir BEFORE the gateway starts, so
// `mcp serve` bridges have something to list, read and fetch attachments from.
//
// Why through the package's own plugin-sdk exports: since 2026.9.x the gateway reads
// sessions only from SQLite ($OPENCLAW_STATE_DIR/agents/main/agent/openclaw-agent.sqlite);
// hand-written sessions.json/JSONL files are ignored (and block readiness until
// `openclaw doctor --fix`). Upstream's docker smoke (scripts/e2e/mcp-channels-seed.ts) seeds
// the same way.
//
// What it writes (the golden texts of crates/serve/tests depend on these values):
//   session agent:main:main (sessionId sess-main), displayName "Harness Seeded Conversation",
//   delivery route {channel imessage, to +15551234567, accountId imessage-default, threadId thread-42};
//   transcript msg-1 (user text), msg-2 (assistant text block), msg-attachment (user text
//   with one __openclaw.media image fact).
//
// Usage (env must already point OpenClaw at the throwaway state dir; start.sh does this):
//   OPENCLAW_STATE_DIR=... OPENCLAW_CONFIG_PATH=... HOME=... node seed.mjs <openclaw package dir>
// Prints one JSON line describing what it seeded.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const packageDir = process.argv[2];
if (!packageDir || !fs.existsSync(path.join(packageDir, "package.json"))) {
  console.error("usage: seed.mjs <path to node_modules/openclaw>");
  process.exit(2);
}
if (!process.env.OPENCLAW_STATE_DIR) {
  console.error("seed.mjs: OPENCLAW_STATE_DIR is not set; refusing to seed the default ~/.openclaw");
  process.exit(2);
}
const requireFromOpenclaw = createRequire(path.join(path.resolve(packageDir), "package.json"));
const load = (specifier) => import(pathToFileURL(requireFromOpenclaw.resolve(specifier)).href);

const { normalizeSessionDeliveryState, upsertSessionEntry } = await load("openclaw/plugin-sdk/session-store-runtime");
const { appendSessionTranscriptMessagesByIdentity } = await load("openclaw/plugin-sdk/session-transcript-runtime");
const { resolveOpenClawAgentSqlitePath } = await load("openclaw/plugin-sdk/sqlite-runtime");

const configPath = process.env.OPENCLAW_CONFIG_PATH;
const config = configPath && fs.existsSync(configPath) ? JSON.parse(fs.readFileSync(configPath, "utf8")) : {};
const now = Date.now();
const agentId = "main";
const sessionKey = "agent:main:main";
const sessionId = "sess-main";
const route = { channel: "imessage", to: "+15551234567", accountId: "imessage-default", threadId: "thread-42" };
const storePath = resolveOpenClawAgentSqlitePath({ agentId });

await upsertSessionEntry({
  agentId,
  sessionKey,
  storePath,
  entry: {
    sessionId,
    updatedAt: now,
    delivery: normalizeSessionDeliveryState({ context: route }),
    displayName: "Harness Seeded Conversation",
  },
});

const attachment = {
  url: "media://inbound/seeded-image.png",
  contentType: "image/png",
  kind: "image",
  fileName: "seeded-image.png",
  sizeBytes: 3,
};
await appendSessionTranscriptMessagesByIdentity({
  agentId,
  sessionKey,
  sessionId,
  storePath,
  config,
  messages: [
    { eventId: "msg-1", now, message: { role: "user", content: "hello from the harness user", timestamp: now } },
    {
      eventId: "msg-2",
      now: now + 1,
      message: { role: "assistant", content: [{ type: "text", text: "hello from seeded transcript" }], timestamp: now + 1 },
    },
    {
      eventId: "msg-attachment",
      now: now + 2,
      message: {
        role: "user",
        content: "seeded image attachment",
        __openclaw: { media: [attachment] },
        timestamp: now + 2,
      },
    },
  ],
});
process.stdout.write(JSON.stringify({ ok: true, storePath, sessionKey, sessionId, route, messages: 3 }) + "\n");
// The sdk keeps SQLite handles and timers open; the seed is complete, so leave now.
process.exit(0);
