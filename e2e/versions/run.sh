#!/usr/bin/env bash
# Real SDK clients pinned to each MCP revision against every clawmcp surface (issue 9): the
# Python `mcp` SDK (python_versions.py) and the TypeScript SDK (ts_versions.mjs), each pinned to
# 2025-11-25 and 2025-06-18 (and 2024-11-05 on the node), against
#   node   `clawmcp node` over HTTP (inside e2e/run.sh: that node; otherwise our own)
#   tools  `clawmcp tools` over stdio, on the real OpenClaw gateway
#   serve  `clawmcp serve` over stdio, on the real OpenClaw gateway
# A PASS/FAIL row per (sdk, revision, surface, check); matrix.json says what is called.
#
# Usage: e2e/versions/run.sh [node] [tools] [serve]   (default: all three)
# The gateway (e2e/gateway/start.sh --seed, installed by e2e/gateway/install.sh) is started only
# for tools/serve, in a throwaway dir, and stopped by PID, like the node. Everything binds to
# 127.0.0.1. About 5 s per surface once built and installed, plus the gateway's start (10 s-3 min).
# Exits non-zero if any check fails; nothing is skipped.
#
# Environment: CLAWMCP_E2E_BIN (else `cargo build --release`), CLAWMCP_E2E_CACHE (see
#   e2e/install.sh), CLAWMCP_E2E_URL/_TOKEN_FILE/_DATA_DIR (a node to drive, set by e2e/run.sh).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
E2E_LOG_TAG=e2e-versions
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/node_host.sh
source "$HERE/../lib/node_host.sh"

PARTS=()
for arg in "$@"; do
  case "$arg" in
    node | tools | serve) PARTS+=("$arg") ;;
    -h | --help)
      e2e_usage
      exit 0
      ;;
    *) e2e_die "unknown argument: $arg (see --help)" ;;
  esac
done
((${#PARTS[@]})) || PARTS=(node tools serve)

e2e_require node python3 timeout

e2e_client_env
[[ -x "${CLAWMCP_E2E_VENV_PYTHON:-}" ]] || e2e_die "no Python mcp SDK venv recorded by e2e/install.sh"
BIN="$(e2e_clawmcp_bin "${CLAWMCP_E2E_BIN:-}")" || exit 1
export CLAWMCP_E2E_BIN="$BIN"

TMP="$(mktemp -d /tmp/clawmcp-e2e-versions.XXXXXX)"
export CLAWMCP_VERSIONS_HOME="$TMP/homes"
mkdir -m 700 "$CLAWMCP_VERSIONS_HOME"
GW_ROOT=""
finish() {
  local rc=$?
  e2e_stop_owned_node || rc=1
  if [[ -n "$GW_ROOT" && -f "$GW_ROOT/gateway.env" ]]; then
    bash "$ROOT/e2e/gateway/stop.sh" "$GW_ROOT" >&2 || rc=1
  fi
  if ((rc)); then e2e_log "kept $TMP (bridge stderr per cell in homes/, gateway log)"; else rm -rf -- "$TMP"; fi
  exit "$rc"
}
trap finish EXIT

ensure_gateway() {
  [[ -z "$GW_ROOT" ]] || return 0
  bash "$ROOT/e2e/gateway/install.sh" >/dev/null || e2e_die "gateway install failed (e2e/gateway/install.sh)"
  GW_ROOT="$TMP/gateway"
  bash "$ROOT/e2e/gateway/start.sh" --seed --root "$GW_ROOT" >/dev/null || e2e_die "the OpenClaw gateway did not start"
  set -a
  # shellcheck disable=SC1091
  source "$GW_ROOT/gateway.env"
  set +a
}

failed=()
for part in "${PARTS[@]}"; do
  if [[ "$part" == node ]]; then e2e_use_or_start_node "$BIN" "$TMP"; else ensure_gateway; fi
  printf '\n===== e2e versions: %s =====\n' "$part"
  # Bounded: each cell has its own deadline inside the drivers; this catches anything else.
  timeout 600 "$CLAWMCP_E2E_VENV_PYTHON" "$HERE/python_versions.py" "$part" || failed+=("python:$part")
  timeout 600 node "$HERE/ts_versions.mjs" "$part" || failed+=("ts:$part")
done
((${#failed[@]} == 0)) || e2e_die "revision checks failed: ${failed[*]}"
e2e_log "revision checks passed: ${PARTS[*]}"
