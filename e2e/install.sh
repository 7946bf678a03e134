#!/usr/bin/env bash
# Idempotently install the real MCP clients the e2e suite drives, from the package
# registries only (PyPI and npm), into a private cache dir. Nothing lands in the repo
# or in the caller's global npm/pip state.
#
#   CLAWMCP_E2E_CACHE        install dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/clawmcp-e2e)
#   CLAWMCP_E2E_PYTHON       python used to create the venv (default python3; needs >= 3.10)
#   CLAWMCP_E2E_NPM          npm executable (default npm on PATH)
#   CLAWMCP_E2E_NPM_TIMEOUT  seconds per npm/pip call (default 900)
#
# Layout after install (also summarised in $CACHE/clients.env, which this script prints):
#   $CACHE/venv/bin/python                       Python with the `mcp` SDK
#   $CACHE/npm/node_modules/@modelcontextprotocol/{sdk,inspector-cli,conformance}
#   $CACHE/npm/run/                              cwd for inspector-cli (its ../package.json quirk)
#   $CACHE/node22/node_modules/node-linux-<arch>/bin/node   Node 22 for conformance
#
# Versions are pinned to the ones verified against plain-JSON loopback servers
# (see e2e/README.md); bump them here and nowhere else.
set -euo pipefail

PY_MCP_VERSION=2.3.0
TS_SDK_VERSION=1.32.2
INSPECTOR_CLI_VERSION=1.0.3
CONFORMANCE_VERSION=0.1.16
NODE22_SPEC=22 # npm dist-tag range for node-linux-<arch>; conformance needs Node >= 22

CACHE="${CLAWMCP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clawmcp-e2e}"
PYTHON="${CLAWMCP_E2E_PYTHON:-python3}"
NPM="${CLAWMCP_E2E_NPM:-npm}"
TIMEOUT="${CLAWMCP_E2E_NPM_TIMEOUT:-900}"

E2E_LOG_TAG=e2e-install
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/common.sh"

command -v "$PYTHON" >/dev/null 2>&1 || e2e_die "$PYTHON not found; install Python >= 3.10 (Debian: python3 python3-venv)"
command -v "$NPM" >/dev/null 2>&1 || e2e_die "npm not found; install Node.js >= 20 with npm (or set CLAWMCP_E2E_NPM)"
command -v node >/dev/null 2>&1 || e2e_die "node not found; the TS SDK and inspector-cli drivers run on the system Node (>= 20)"
command -v timeout >/dev/null 2>&1 || e2e_die "coreutils timeout not found"

mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"
VENV="$CACHE/venv"
NPM_DIR="$CACHE/npm"
mkdir -p "$NPM_DIR/run"

# npm's cache and logs stay inside the cache dir so nothing lands in the caller's HOME.
export npm_config_cache="$CACHE/.npm-cache"
export npm_config_update_notifier=false
export npm_config_fund=false
export npm_config_audit=false

npm_pkg_version() { # dir package -> installed version or ""
  local manifest="$1/node_modules/$2/package.json"
  [[ -f "$manifest" ]] || return 0
  node -p 'require(process.argv[1]).version' "$manifest" 2>/dev/null || true
}

# 1. Python venv with the mcp SDK ------------------------------------------------
have_py=""
if [[ -x "$VENV/bin/python" ]]; then
  have_py="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null || true)"
fi
if [[ "$have_py" == "$PY_MCP_VERSION" ]]; then
  e2e_log "python mcp $have_py already present in $VENV"
else
  "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' ||
    e2e_die "$PYTHON is $("$PYTHON" --version 2>&1); mcp $PY_MCP_VERSION needs >= 3.10"
  e2e_log "creating venv $VENV and installing mcp==$PY_MCP_VERSION from PyPI"
  [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV" ||
    e2e_die "python venv creation failed (Debian: apt-get install python3-venv)"
  timeout "$TIMEOUT" "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "mcp==$PY_MCP_VERSION" >&2 || e2e_die "pip install mcp==$PY_MCP_VERSION failed"
  have_py="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"
  [[ "$have_py" == "$PY_MCP_VERSION" ]] || e2e_die "unexpected mcp version $have_py"
fi
"$VENV/bin/python" -c 'import httpx2, mcp.client.streamable_http' ||
  e2e_die "the venv's mcp SDK does not import (httpx2 / mcp.client.streamable_http); delete $VENV and rerun"

# 2. Node 22 runtime (binary shipped inside the npm package node-linux-<arch>) ---
NODE22_BIN="$(e2e_npm_node "$CACHE/node22" "$NODE22_SPEC" 'v22.*')" || exit 1
have_node22="$("$NODE22_BIN" --version)"

# 3. npm clients -------------------------------------------------------------------
want_npm=(
  "@modelcontextprotocol/sdk@$TS_SDK_VERSION"
  "@modelcontextprotocol/inspector-cli@$INSPECTOR_CLI_VERSION"
  "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION"
)
npm_ok=1
for spec in "${want_npm[@]}"; do
  name="${spec%@*}" version="${spec##*@}"
  [[ "$(npm_pkg_version "$NPM_DIR" "$name")" == "$version" ]] || npm_ok=0
done
if [[ "$npm_ok" == 1 ]]; then
  e2e_log "npm clients already present in $NPM_DIR"
else
  e2e_log "installing ${want_npm[*]} into $NPM_DIR"
  [[ -f "$NPM_DIR/package.json" ]] || printf '{"name":"clawmcp-e2e-clients","private":true}\n' >"$NPM_DIR/package.json"
  # Node 22 first on PATH so engine checks (conformance wants >= 22) see a fitting runtime.
  # --ignore-scripts: none of these packages needs an install script to run.
  PATH="$(dirname "$NODE22_BIN"):$PATH" timeout "$TIMEOUT" "$NPM" install --prefix "$NPM_DIR" \
    --ignore-scripts --no-audit --no-fund --loglevel=warn --save-exact "${want_npm[@]}" >&2 ||
    e2e_die "npm install ${want_npm[*]} failed"
  for spec in "${want_npm[@]}"; do
    name="${spec%@*}" version="${spec##*@}"
    got="$(npm_pkg_version "$NPM_DIR" "$name")"
    [[ "$got" == "$version" ]] || e2e_die "$name is '$got' after install, expected $version"
  done
fi

INSPECTOR_CLI="$NPM_DIR/node_modules/@modelcontextprotocol/inspector-cli/build/cli.js"
CONFORMANCE_CLI="$NPM_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[[ -f "$INSPECTOR_CLI" ]] || e2e_die "inspector-cli entry missing: $INSPECTOR_CLI"
[[ -f "$CONFORMANCE_CLI" ]] || e2e_die "conformance entry missing: $CONFORMANCE_CLI"
# The drivers must start, not just be on disk: a client that cannot run fails the suite here.
(cd "$NPM_DIR/run" && timeout 60 node "$INSPECTOR_CLI" --help >/dev/null 2>&1) ||
  e2e_die "inspector-cli does not start on $(node --version) from $NPM_DIR/run"
timeout 60 "$NODE22_BIN" "$CONFORMANCE_CLI" --help >/dev/null 2>&1 ||
  e2e_die "conformance does not start on $have_node22"

cat >"$CACHE/clients.env" <<ENV
CLAWMCP_E2E_CACHE=$CACHE
CLAWMCP_E2E_VENV_PYTHON=$VENV/bin/python
CLAWMCP_E2E_PY_MCP_VERSION=$have_py
CLAWMCP_E2E_NPM_DIR=$NPM_DIR
CLAWMCP_E2E_SYSTEM_NODE=$(command -v node)
CLAWMCP_E2E_SYSTEM_NODE_VERSION=$(node --version)
CLAWMCP_E2E_NODE22=$NODE22_BIN
CLAWMCP_E2E_NODE22_VERSION=$have_node22
CLAWMCP_E2E_TS_SDK_VERSION=$(npm_pkg_version "$NPM_DIR" @modelcontextprotocol/sdk)
CLAWMCP_E2E_INSPECTOR_CLI=$INSPECTOR_CLI
CLAWMCP_E2E_INSPECTOR_CLI_VERSION=$(npm_pkg_version "$NPM_DIR" @modelcontextprotocol/inspector-cli)
CLAWMCP_E2E_INSPECTOR_CWD=$NPM_DIR/run
CLAWMCP_E2E_CONFORMANCE=$CONFORMANCE_CLI
CLAWMCP_E2E_CONFORMANCE_VERSION=$(npm_pkg_version "$NPM_DIR" @modelcontextprotocol/conformance)
ENV
e2e_log "ok; installed clients:"
cat "$CACHE/clients.env"
