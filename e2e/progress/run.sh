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
#   node; otherwise it starts its own `clawmcp node` (CLAWMCP_E2E_BIN, else
#   `cargo build --release`) on a free 127.0.0.1 port with a throwaway data dir whose
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

e2e_require node python3 timeout

e2e_client_env

BIN="$(e2e_clawmcp_bin "${CLAWMCP_E2E_BIN:-}")" || exit 1

TMP="$(mktemp -d /tmp/clawmcp-e2e-progress.XXXXXX)"
GW_ROOT=""
finish() {
  local rc=$?
  e2e_stop_owned_node || rc=1
  if [[ -n "$GW_ROOT" && -f "$GW_ROOT/gateway.env" ]]; then
    bash "$ROOT/e2e/gateway/stop.sh" "$GW_ROOT" >&2 || rc=1
  fi
  if ((rc)); then e2e_log "kept $TMP (logs)"; else rm -rf -- "$TMP"; fi
  exit "$rc"
}
trap finish EXIT

run_node() {
  e2e_use_or_start_node "$BIN" "$TMP"
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
  CLAWMCP_E2E_BIN="$BIN" CLAWMCP_PROGRESS_HOME="$TMP/$1-home" timeout 300 node "$HERE/stdio.mjs" "$1"
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
