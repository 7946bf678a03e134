#!/usr/bin/env bash
# Idempotently install the REAL OpenClaw gateway (npm package `openclaw`) and the Node
# runtime it needs, from the npm registry only, into a private cache dir. Nothing lands in
# the repo, in ~/.openclaw, or in the caller's global npm state.
#
#   CLAWMCP_E2E_CACHE         e2e cache dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/clawmcp-e2e)
#   CLAWMCP_GW_PREFIX         install prefix (default $CLAWMCP_E2E_CACHE/gateway)
#   CLAWMCP_E2E_NPM           npm executable (default npm on PATH)
#   CLAWMCP_E2E_NPM_TIMEOUT   seconds per npm call (default 900)
#
# Layout after install (summarised in $PREFIX/gateway.env, which this script prints):
#   $PREFIX/node/node_modules/node-linux-<arch>/bin/node   Node 24 (npm package node-linux-<arch>)
#   $PREFIX/oc/node_modules/openclaw/openclaw.mjs           the OpenClaw CLI entry
#   $PREFIX/bin/openclaw                                     wrapper: pinned Node + entry (exec, same PID)
#
# Versions are pinned to the ones the golden transcripts were recorded with
# (openclaw 2026.9.6 needs Node >=24.16 <25 || >=26.1; the system Node is too old).
# Fresh install: ~30 s and ~1.1 GB; already installed: well under a second.
set -euo pipefail

NODE_VERSION=24.22.3
OPENCLAW_VERSION=2026.9.6

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=gateway-install
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

CACHE="${CLAWMCP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clawmcp-e2e}"
PREFIX="${CLAWMCP_GW_PREFIX:-$CACHE/gateway}"
NPM="${CLAWMCP_E2E_NPM:-npm}"
TIMEOUT="${CLAWMCP_E2E_NPM_TIMEOUT:-900}"

command -v "$NPM" >/dev/null 2>&1 || e2e_die "npm not found; install Node.js with npm (or set CLAWMCP_E2E_NPM)"
command -v timeout >/dev/null 2>&1 || e2e_die "coreutils timeout not found"

mkdir -p "$PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"
OC_DIR="$PREFIX/oc"
OC_PKG="$OC_DIR/node_modules/openclaw"
OC_ENTRY="$OC_PKG/openclaw.mjs"
mkdir -p "$PREFIX/bin" "$OC_DIR"

# npm's cache and logs stay inside the prefix so nothing lands in the caller's HOME.
export npm_config_cache="$PREFIX/.npm-cache"
export npm_config_update_notifier=false
export npm_config_fund=false
export npm_config_audit=false

# 1. Node runtime: the binary inside the npm package node-linux-<arch> --------------------
NODE_BIN="$(e2e_npm_node "$PREFIX/node" "$NODE_VERSION" "v$NODE_VERSION")" || exit 1
have_node="$("$NODE_BIN" --version)"

# 2. OpenClaw ------------------------------------------------------------------------------
have_oc=""
if [[ -f "$OC_PKG/package.json" ]]; then
  have_oc="$("$NODE_BIN" -p 'require(process.argv[1]).version' "$OC_PKG/package.json" 2>/dev/null || true)"
fi
if [[ "$have_oc" == "$OPENCLAW_VERSION" ]]; then
  e2e_log "openclaw $have_oc already present"
else
  e2e_log "installing openclaw@$OPENCLAW_VERSION into $OC_DIR (about 30-60 s)"
  [[ -f "$OC_DIR/package.json" ]] || printf '{"name":"clawmcp-e2e-gateway-openclaw","private":true}\n' >"$OC_DIR/package.json"
  # --ignore-scripts: openclaw's own lifecycle scripts only warn and prune stale dist files,
  # and npm >= 11 skips unapproved dependency scripts anyway; skipping them keeps the install
  # deterministic. The gateway and `mcp serve` run fine without them. The pinned Node goes
  # first on PATH so npm's engine check sees >= 24.16.
  PATH="$(dirname "$NODE_BIN"):$PATH" timeout "$TIMEOUT" "$NPM" install --prefix "$OC_DIR" \
    --ignore-scripts --no-audit --no-fund --loglevel=warn --save-exact "openclaw@$OPENCLAW_VERSION" >&2 ||
    e2e_die "npm install openclaw@$OPENCLAW_VERSION failed"
  have_oc="$("$NODE_BIN" -p 'require(process.argv[1]).version' "$OC_PKG/package.json")"
  [[ "$have_oc" == "$OPENCLAW_VERSION" ]] || e2e_die "unexpected openclaw version $have_oc"
fi
# gateway_rpc.mjs loads the `ws` package from the openclaw install (an openclaw dependency).
(cd "$OC_PKG" && "$NODE_BIN" -e 'require.resolve("ws")') 2>/dev/null ||
  e2e_die "openclaw's dependency 'ws' does not resolve from $OC_PKG; delete $OC_DIR and rerun"

# 3. Wrapper + summary ------------------------------------------------------------------------
# exec keeps the PID the Node PID, so callers can stop what they started by PID.
cat >"$PREFIX/bin/openclaw" <<WRAP
#!/usr/bin/env bash
exec "$NODE_BIN" "$OC_ENTRY" "\$@"
WRAP
chmod 755 "$PREFIX/bin/openclaw"

# The CLI must start, not just be on disk.
# Clean env with a throwaway HOME: nothing may touch the caller's ~/.openclaw.
mkdir -p "$PREFIX/.probe-home"
version_line="$(cd "$PREFIX" || exit; env -i "PATH=/usr/bin:/bin" "HOME=$PREFIX/.probe-home" OPENCLAW_OFFLINE=1 \
  OPENCLAW_NO_AUTO_UPDATE=1 timeout 120 "$NODE_BIN" "$OC_ENTRY" --version 2>/dev/null | tail -n1 || true)"
[[ "$version_line" == *"$OPENCLAW_VERSION"* ]] || e2e_die "'openclaw --version' failed (got '$version_line')"

cat >"$PREFIX/gateway.env" <<ENV
CLAWMCP_GW_PREFIX=$PREFIX
CLAWMCP_GW_NODE=$NODE_BIN
CLAWMCP_GW_NODE_VERSION=$have_node
CLAWMCP_GW_OPENCLAW_PKG=$OC_PKG
CLAWMCP_GW_OPENCLAW_ENTRY=$OC_ENTRY
CLAWMCP_GW_OPENCLAW_VERSION=$have_oc
CLAWMCP_GW_OPENCLAW_BIN=$PREFIX/bin/openclaw
ENV
e2e_log "ok: $version_line on node $have_node"
cat "$PREFIX/gateway.env"
