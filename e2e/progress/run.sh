#!/usr/bin/env bash
# Progress on long calls (issue 5), end to end with the official TypeScript SDK client: a 30 s
# call made with a 12 s client timeout survives only because progress arrives, the same call
# without a progress token gets no progress, and without resetTimeoutOnProgress it times out.
# See checks.mjs for the checks.
#
# Usage: e2e/progress/run.sh [node] [serve] [tools]      (default: all three)
#   node   `clawmcp node` over loopback HTTP: system.run ["sleep","30"]          (node_http.mjs)
#   serve  `clawmcp serve` over stdio against the real OpenClaw gateway:
#          events_wait {timeout_ms: 30000} with no event arriving          (stdio.mjs serve)
#   tools  `clawmcp tools` over stdio against the real OpenClaw gateway:
#          the local exec tool running ["sleep","30"] in the foreground    (stdio.mjs tools)
#
# node: inside e2e/run.sh (CLAWMCP_E2E_URL and CLAWMCP_E2E_TOKEN_FILE set) it drives that
#   node; otherwise it starts its own `clawmcp node` (CLAWMCP_E2E_BIN, default
#   target/release/clawmcp) on a free 127.0.0.1 port with a throwaway data dir whose
#   exec-approvals.json lets system.run run sleep, and stops it by PID.
# serve, tools: install and start the real gateway with e2e/gateway/install.sh and start.sh
#   (used as they are), once for both, in a throwaway dir, and stop it with
#   e2e/gateway/stop.sh on exit.
# Each part takes about 35 s once installed (the three calls run concurrently); the gateway
# adds its start-up time (8-50 s). Exits non-zero if any check fails; nothing is skipped.
#
# Environment: CLAWMCP_E2E_BIN, CLAWMCP_E2E_CACHE (see e2e/install.sh), CLAWMCP_E2E_URL,
#   CLAWMCP_E2E_TOKEN_FILE.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
E2E_LOG_TAG=e2e-progress
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/node_host.sh
source "$HERE/../lib/node_host.sh"

PARTS=()
for arg in "$@"; do
  case "$arg" in
    node | serve | tools) PARTS+=("$arg") ;;
    -h | --help)
      e2e_usage
      exit 0
      ;;
    *) e2e_die "unknown argument: $arg (see --help)" ;;
  esac
done
((${#PARTS[@]})) || PARTS=(node serve tools)

for tool in node python3 timeout; do
  command -v "$tool" >/dev/null 2>&1 || e2e_die "$tool not found; .ci/run installs what the e2e suite needs"
done

e2e_client_env

resolve_bin() {
  local bin="${CLAWMCP_E2E_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/clawmcp}"
  [[ -x "$bin" ]] || e2e_die "clawmcp binary not found at $bin; build it or set CLAWMCP_E2E_BIN"
  echo "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
}

TMP="$(mktemp -d /tmp/clawmcp-e2e-progress.XXXXXX)"
GW_ROOT=""
OWN_NODE=0
finish() {
  local rc=$?
  if ((OWN_NODE)) && ! e2e_stop_node; then
    e2e_log "clawmcp node did not stop on SIGTERM"
    rc=1
  fi
  if [[ -n "$GW_ROOT" && -f "$GW_ROOT/gateway.env" ]]; then
    bash "$ROOT/e2e/gateway/stop.sh" "$GW_ROOT" >&2 || rc=1
  fi
  if ((rc)); then e2e_log "kept $TMP (logs)"; else rm -rf -- "$TMP"; fi
  exit "$rc"
}
trap finish EXIT

run_node() {
  if [[ -z "${CLAWMCP_E2E_URL:-}" || -z "${CLAWMCP_E2E_TOKEN_FILE:-}" ]]; then
    local data_dir="$TMP/node-data"
    mkdir -m 700 "$data_dir"
    e2e_seed_exec_approvals "$data_dir"
    OWN_NODE=1
    e2e_start_node "$(resolve_bin)" "$data_dir" "$TMP/node.log" || e2e_die "clawmcp node did not start"
    export CLAWMCP_E2E_URL="$NODE_HOST_URL" CLAWMCP_E2E_TOKEN_FILE="$NODE_HOST_TOKEN_FILE"
    e2e_log "started clawmcp node pid $NODE_HOST_PID at $NODE_HOST_URL"
  fi
  # Bounded: a hang is a named failure, not a stuck run.
  timeout 300 node "$HERE/node_http.mjs"
}

# Starts the real gateway once for the stdio parts and exports its gateway.env.
ensure_gateway() {
  [[ -z "$GW_ROOT" ]] || return 0
  bash "$ROOT/e2e/gateway/install.sh" >/dev/null || e2e_die "gateway install failed (e2e/gateway/install.sh)"
  GW_ROOT="$TMP/gateway"
  bash "$ROOT/e2e/gateway/start.sh" --root "$GW_ROOT" >/dev/null || e2e_die "the OpenClaw gateway did not start"
  set -a
  # shellcheck disable=SC1091
  source "$GW_ROOT/gateway.env"
  set +a
}

run_stdio_surface() {
  ensure_gateway
  CLAWMCP_E2E_BIN="$(resolve_bin)" CLAWMCP_PROGRESS_HOME="$TMP/$1-home" timeout 300 node "$HERE/stdio.mjs" "$1"
}

run_serve() { run_stdio_surface serve; }
run_tools() { run_stdio_surface tools; }

failed=()
for part in "${PARTS[@]}"; do
  printf '\n===== e2e progress: %s =====\n' "$part"
  "run_$part" || failed+=("$part")
done
((${#failed[@]} == 0)) || e2e_die "progress checks failed: ${failed[*]}"
e2e_log "progress checks passed: ${PARTS[*]}"
