#!/usr/bin/env bash
# End-to-end suite: real MCP clients against a real `clawmcp node` on loopback.
#
#   1. build the release binary (skipped when CLAWMCP_E2E_BIN names one)
#   2. install the clients from the registries (e2e/install.sh; idempotent, cached)
#   3. start `clawmcp node` on a free 127.0.0.1 port with a throwaway data dir whose
#      exec-approvals.json lets system.run run (the drivers run sh and sleep), on a private
#      Xvfb with NodeScreenEnabled on (the drivers check screen.snapshot's pixels)
#   4. run every driver in e2e/node/ against it; stop the node by PID on exit
#
# Exits non-zero naming every driver that failed. A client that cannot be installed or
# started is a failure, never a skip.
#
# Usage: e2e/run.sh [--write-conformance-md] [--keep]
#   --write-conformance-md  regenerate e2e/CONFORMANCE.md from this run
#   --keep                  keep the temp dir (node log, conformance checks.json)
# Environment: CLAWMCP_E2E_BIN (prebuilt binary), CLAWMCP_E2E_CACHE (see install.sh),
#   CARGO_TARGET_DIR (honoured by the build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=e2e
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source "$HERE/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/node_host.sh
source "$HERE/lib/node_host.sh"
# shellcheck source-path=SCRIPTDIR source=lib/xvfb.sh
source "$HERE/lib/xvfb.sh"

WRITE_CONFORMANCE_MD=0
own_flag() { [[ "$1" == --write-conformance-md ]] && WRITE_CONFORMANCE_MD=1; }
e2e_parse_flags own_flag "$@"

e2e_require curl python3 node timeout

# 1. Binary ------------------------------------------------------------------------
BIN="$(e2e_clawmcp_bin "${CLAWMCP_E2E_BIN:-}")" || exit 1

# 2. Clients ------------------------------------------------------------------------
e2e_log "installing MCP clients (e2e/install.sh)"
e2e_client_env

# 3. Node host ----------------------------------------------------------------------
TMP="$(mktemp -d /tmp/clawmcp-e2e.XXXXXX)"
DATA_DIR="$TMP/data"
mkdir -m 700 "$DATA_DIR"
e2e_seed_exec_approvals "$DATA_DIR"
NODE_LOG="$TMP/node.log"

finish() {
  local rc=$?
  if ! e2e_stop_node; then
    e2e_log "clawmcp node did not stop on SIGTERM"
    rc=1
  fi
  e2e_stop_xvfb
  if ((KEEP)); then e2e_log "kept $TMP"; else rm -rf -- "$TMP"; fi
  exit "$rc"
}
trap finish EXIT

# screen.snapshot needs a display and its switch: a private Xvfb with a white root (-wr),
# stopped by its PID in finish; NodeScreenEnabled on in settings.json.
e2e_start_xvfb 640x480x24 "$TMP/xvfb.log" -wr || e2e_die "no X server for the screen checks"
(umask 077 && printf '{"NodeScreenEnabled": true}\n' >"$DATA_DIR/settings.json")

e2e_log "starting clawmcp node (data dir $DATA_DIR)"
e2e_start_node "$BIN" "$DATA_DIR" "$NODE_LOG" || e2e_die "clawmcp node did not start; see the log tail above"
e2e_log "node pid $NODE_HOST_PID serving $NODE_HOST_URL"

export CLAWMCP_E2E_BIN="$BIN" CLAWMCP_E2E_URL="$NODE_HOST_URL" CLAWMCP_E2E_TOKEN_FILE="$NODE_HOST_TOKEN_FILE"
export CLAWMCP_E2E_DATA_DIR="$DATA_DIR" CLAWMCP_E2E_ARTIFACTS="$TMP"

# 4. Drivers --------------------------------------------------------------------------
conformance_args=()
((WRITE_CONFORMANCE_MD)) && conformance_args=(--markdown "$HERE/CONFORMANCE.md")
drivers=(
  "python-sdk|$CLAWMCP_E2E_VENV_PYTHON $HERE/node/python_sdk.py"
  "ts-sdk|node $HERE/node/ts_sdk.mjs"
  "inspector-cli|bash $HERE/node/inspector_cli.sh"
  "conformance|bash $HERE/node/conformance.sh ${conformance_args[*]:-}"
  "clawmcp-cli|bash $HERE/node/clawmcp_cli.sh"
  "progress|bash $HERE/progress/run.sh node"
  "stdio|bash $HERE/stdio/run.sh"
  "lifecycle|bash $HERE/lifecycle/run.sh"
  "versions|bash $HERE/versions/run.sh node"
)
passed=() failed=()
for entry in "${drivers[@]}"; do
  name="${entry%%|*}" cmd="${entry#*|}"
  printf '\n===== e2e driver: %s =====\n' "$name"
  # Each driver is bounded; a hang is a failure with a name, not a stuck CI run.
  # shellcheck disable=SC2086 # cmd is a trusted, space-separated argv built above
  if timeout 900 $cmd; then
    passed+=("$name")
  else
    failed+=("$name")
  fi
  if ! kill -0 "$NODE_HOST_PID" 2>/dev/null; then
    e2e_log "clawmcp node died while driver $name ran; node log tail:"
    tail -n 30 "$NODE_LOG" >&2
    failed+=("node-alive-after-$name")
    break
  fi
done

printf '\n===== e2e summary =====\n'
for name in "${passed[@]}"; do echo "  ok      $name"; done
for name in "${failed[@]}"; do echo "  FAILED  $name"; done
echo "e2e: ${#passed[@]} passed, ${#failed[@]} failed"
if ((${#failed[@]})); then
  e2e_log "failed: ${failed[*]} (node log: $NODE_LOG; rerun with --keep to keep it)"
  exit 1
fi
