// Generates gateway-tools-<version>.json, the bundled snapshot of the OpenClaw gateway tools that
// `POST /tools/invoke` serves, with their argument schemas, from an installed `openclaw` package.
//
// Why this and not `clawmcp tools regen`: regen asks a running gateway, and the gateway's only
// live schema source (`attach.grant` -> loopback MCP `tools/list`) serves the loopback tool set
// to a non-owner, so it cannot see owner-only tools such as `sessions`. This script runs the
// package's own HTTP-surface resolution (`resolveGatewayScopedTools({surface: "http",
// senderIsOwner: true})`, what `/tools/invoke` calls for a shared-secret caller) and the
// package's own MCP schema builder (`buildMcpToolSchema`, what the loopback MCP `tools/list`
// returns), so every schema is the gateway's own. It executes no tool.
//
// Two passes over a default loopback config (no plugins, no channels): the default config gives
// the tools served out of the box; a second config that lifts the default HTTP deny list
// (`gateway.tools.allow`) adds the schemas of the tools an operator can allow (sessions_spawn,
// sessions_send, automations, ...). clawmcp filters the snapshot with the user's own
// `gateway.tools.allow/deny` at run time, so the extra entries appear only where allowed.
//
// Usage (the e2e harness installs the package; see e2e/gateway/install.sh):
//   source ~/.cache/clawmcp-e2e/gateway/gateway.env
//   "$CLAWMCP_GW_NODE" crates/tools/data/gen-gateway-tools.mjs "$CLAWMCP_GW_OPENCLAW_PKG" \
//     > crates/tools/data/gateway-tools-$CLAWMCP_GW_OPENCLAW_VERSION.json
// The state directory is a fresh temporary one, removed afterwards; ~/.openclaw is not read.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const pkg = process.argv[2];
if (!pkg || !fs.existsSync(path.join(pkg, "package.json"))) {
  console.error("usage: gen-gateway-tools.mjs <path to node_modules/openclaw>");
  process.exit(2);
}
const version = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).version;

const state = fs.mkdtempSync(path.join(os.tmpdir(), "clawmcp-gen-tools."));
const configPath = path.join(state, "openclaw.json");
// The config e2e/gateway/start.sh gives the real gateway, minus port and secret.
const baseConfig = {
  gateway: { mode: "local", bind: "loopback", auth: { mode: "token" }, tailscale: { mode: "off" } },
  agents: { defaults: { heartbeat: { every: "0m" } } },
  plugins: { enabled: false },
};
fs.writeFileSync(configPath, JSON.stringify(baseConfig));
Object.assign(process.env, {
  HOME: path.join(state, "home"),
  OPENCLAW_HOME: path.join(state, "home"),
  OPENCLAW_STATE_DIR: state,
  OPENCLAW_CONFIG_PATH: configPath,
  OPENCLAW_OFFLINE: "1",
  OPENCLAW_NO_AUTO_UPDATE: "1",
  OPENCLAW_SKIP_CHANNELS: "1",
});

/** The export named `name` of the first dist chunk whose text contains `marker` (chunk file
 * names and export aliases are hashed per release; function names are not). */
async function locate(marker, name) {
  const dist = path.join(pkg, "dist");
  for (const file of fs.readdirSync(dist).sort()) {
    if (!file.endsWith(".mjs")) continue;
    if (!fs.readFileSync(path.join(dist, file), "utf8").includes(marker)) continue;
    const module = await import(pathToFileURL(path.join(dist, file)).href);
    const found = Object.values(module).find((value) => typeof value === "function" && value.name === name);
    if (found) return found;
  }
  throw new Error(`${name} not found in ${dist} (the generator needs updating for openclaw ${version})`);
}

try {
  const loadConfig = await locate("function loadConfig(", "loadConfig");
  const resolveGatewayScopedTools = await locate("function resolveGatewayScopedTools(", "resolveGatewayScopedTools");
  const buildMcpToolSchema = await locate("function buildMcpToolSchema(", "buildMcpToolSchema");
  const denyChunk = fs
    .readdirSync(path.join(pkg, "dist"))
    .find((f) => f.endsWith(".mjs") && fs.readFileSync(path.join(pkg, "dist", f), "utf8").includes("const DEFAULT_GATEWAY_HTTP_TOOL_DENY = ["));
  const denyModule = await import(pathToFileURL(path.join(pkg, "dist", denyChunk)).href);
  const defaultDeny = Object.values(denyModule).find((v) => Array.isArray(v) && v.includes("exec") && v.includes("gateway"));
  if (!defaultDeny) throw new Error("DEFAULT_GATEWAY_HTTP_TOOL_DENY not found");

  const httpTools = (config) =>
    buildMcpToolSchema(
      resolveGatewayScopedTools({
        cfg: config,
        sessionKey: "agent:main:main",
        surface: "http",
        senderIsOwner: true,
        allowGatewaySubagentBinding: true,
        allowMediaInvokeCommands: true,
      }).tools,
    );
  const config = loadConfig();
  const served = httpTools(config);
  const lifted = { ...config, gateway: { ...config.gateway, tools: { ...config.gateway?.tools, allow: [...defaultDeny] } } };
  const allowable = httpTools(lifted).filter((tool) => !served.some((s) => s.name === tool.name));

  const tools = [...served, ...allowable]
    .map(({ name, description, inputSchema }) => ({ name, description: description ?? "", inputSchema }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const snapshot = {
    format: 1,
    openclawVersion: version,
    source: "bundled: resolveGatewayScopedTools(surface http, owner) + buildMcpToolSchema from the openclaw package",
    generatedBy: "crates/tools/data/gen-gateway-tools.mjs",
    defaultDenied: allowable.map((t) => t.name).sort(),
    tools,
  };
  process.stdout.write(JSON.stringify(snapshot, null, 2) + "\n");
  console.error(`gen-gateway-tools: openclaw ${version}: ${served.length} served by default, ${allowable.length} more when allowed`);
} finally {
  fs.rmSync(state, { recursive: true, force: true });
}
process.exit(0);
