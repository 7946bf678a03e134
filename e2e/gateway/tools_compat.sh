#!/usr/bin/env bash
# `clawmcp tools` against the REAL OpenClaw gateway from npm, on loopback, with the real Python
# `mcp` SDK as one of the clients (tools_compat.py lists every check).
#
#   1. build clawmcp (release), unless CLAWMCP_E2E_BIN names a binary
#   2. install Node 24 + openclaw@2026.9.6 (install.sh) and the MCP clients (e2e/install.sh);
#      both idempotent and cached
#   3. start one seeded gateway (start.sh --seed) in a throwaway dir; stopped by PID on exit
#   4. tools_compat.py: a PASS/FAIL row per check
# Exits non-zero if anything fails; nothing is skipped.
#
# Usage: e2e/gateway/tools_compat.sh [--keep]
#   --keep   keep the temp dir (gateway log, transcript, stderr, snapshot, SDK log); it is
#            always kept when the suite fails
# Environment: CLAWMCP_E2E_BIN (prebuilt clawmcp), CLAWMCP_E2E_CACHE / CLAWMCP_GW_PREFIX
#   (install dirs), CARGO_TARGET_DIR (honoured by the build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
E2E_LOG_TAG=tools-compat
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

KEEP=0
for arg in "$@"; do
  case "$arg" in
    --keep) KEEP=1 ;;
    -h | --help)
      sed -n '2,16p' "$0"
      exit 0
      ;;
    *) e2e_die "unknown argument: $arg (see --help)" ;;
  esac
done
for tool in curl python3 timeout npm; do
  command -v "$tool" >/dev/null 2>&1 || e2e_die "$tool not found; .ci/run installs what the e2e suite needs"
done

# 1. Binary -----------------------------------------------------------------------------------------
if [[ -n "${CLAWMCP_E2E_BIN:-}" ]]; then
  BIN="$CLAWMCP_E2E_BIN"
  e2e_log "using prebuilt binary $BIN"
else
  e2e_log "building clawmcp (release)"
  (cd "$ROOT" && cargo build --release -p clawmcp --bin clawmcp) || e2e_die "cargo build --release failed"
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/clawmcp"
fi
[[ -x "$BIN" ]] || e2e_die "binary not found or not executable: $BIN"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"

# 2. The real gateway and the real MCP clients ---------------------------------------------------------
bash "$HERE/install.sh" >/dev/null || e2e_die "installing openclaw failed (see the [gateway-install] lines above)"
bash "$ROOT/e2e/install.sh" >/dev/null || e2e_die "installing the MCP clients failed (see above)"
CACHE="${CLAWMCP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clawmcp-e2e}"
# shellcheck disable=SC1091
source "$CACHE/clients.env"
[[ -x "${CLAWMCP_E2E_VENV_PYTHON:-}" ]] || e2e_die "no Python mcp SDK venv in $CACHE/clients.env"

# 3. One seeded gateway for the whole suite -----------------------------------------------------------
TMP="$(mktemp -d /tmp/clawmcp-tools-compat.XXXXXX)"
GW_ROOT="$TMP/gateway"
finish() {
  local rc=$?
  if [[ -f "$GW_ROOT/gateway.pid" ]] && ! bash "$HERE/stop.sh" "$GW_ROOT"; then
    e2e_log "the gateway did not stop cleanly"
    rc=1
  fi
  if ((KEEP || rc)); then e2e_log "kept $TMP (gateway log, transcript, snapshot)"; else rm -rf -- "$TMP"; fi
  exit "$rc"
}
trap finish EXIT
bash "$HERE/start.sh" --seed --root "$GW_ROOT" >/dev/null || e2e_die "the gateway did not start (reason above)"

# 4. The suite ----------------------------------------------------------------------------------------
timeout 900 python3 "$HERE/tools_compat.py" --gateway-env "$GW_ROOT/gateway.env" --clawmcp-bin "$BIN" \
  --sdk-python "$CLAWMCP_E2E_VENV_PYTHON" --artifacts "$TMP/run"
