#!/usr/bin/env bash
# Parent death, end to end, on the release binary (issue 5, "Clean process lifecycle"): an MCP
# client that dies without closing `clawmcp tools`' stdin must not leave the bridge or its
# background `exec` jobs behind.
#
#   1. a `sh` (standing in for the MCP client) starts `clawmcp tools` as its child; the bridge's
#      stdin is a FIFO this script keeps open, so killing the `sh` gives the bridge no EOF
#   2. through the bridge: initialize, then `exec` in the background of a `sh` with a `sleep`
#      child, both carrying a unique marker
#   3. SIGKILL the `sh`; the bridge must exit (its parent watchdog), killing the job's tree
#   4. pass if within 15 s no process is left: not the bridge, not the job's shell, not its
#      `sleep` (by PID and by the marker in /proc/*/cmdline); a zombie counts as gone, since
#      the container's init may never reap orphans. 15 s is a deadline for a leak to show,
#      not a performance threshold (the bridge needs well under a second).
#
# No gateway is needed: `--url` points at a closed loopback port and the local tools serve.
# Anything left over is killed by PID (start time checked) on exit.
#
# Usage: e2e/lifecycle/run.sh [--keep]
# Environment: CLAWMCP_E2E_BIN (prebuilt binary; else `cargo build --release`), CARGO_TARGET_DIR.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=e2e-lifecycle
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

e2e_parse_flags "" "$@"

e2e_require timeout awk
BIN="$(e2e_clawmcp_bin "${CLAWMCP_E2E_BIN:-}")" || exit 1

LIMIT_SECONDS=15
MARKER="300.$$$RANDOM"
TMP="$(mktemp -d /tmp/clawmcp-e2e-lifecycle.XXXXXX)"
mkdir -m 700 "$TMP/data" "$TMP/openclaw" "$TMP/workspace"
printf 'lifecycle-e2e-token\n' >"$TMP/gateway-token"
chmod 600 "$TMP/gateway-token"
mkfifo -m 600 "$TMP/stdin"

PARENT_PID="" BRIDGE_PID="" BRIDGE_START=""
# Opened read-write so that neither side blocks; held until the end so the bridge never sees EOF.
exec 4<>"$TMP/stdin"

# Every process whose command line carries the marker (the job's shell and its sleep).
marked_pids() {
  local dir
  for dir in /proc/[0-9]*; do
    [[ "$(awk '{print $3}' "$dir/stat" 2>/dev/null)" =~ ^[ZX]?$ ]] && continue
    tr '\0' ' ' <"$dir/cmdline" 2>/dev/null | grep -qF -- "$MARKER" && echo "${dir#/proc/}"
  done
  return 0
}

alive() { [[ -e "/proc/$1" ]] && ! [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" =~ ^[ZX]?$ ]]; }

finish() {
  local rc=$? pid
  exec 4>&-
  [[ -n "$PARENT_PID" ]] && kill -KILL "$PARENT_PID" 2>/dev/null
  if [[ -n "$BRIDGE_PID" ]] && alive "$BRIDGE_PID"; then
    e2e_stop_pid "clawmcp tools" "$BRIDGE_PID" "$BRIDGE_START" 2 || true
  fi
  for pid in $(marked_pids); do kill -KILL "$pid" 2>/dev/null || true; done
  if ((KEEP || rc)); then e2e_log "kept $TMP (bridge stdout/stderr)"; else rm -rf -- "$TMP"; fi
  exit "$rc"
}
trap finish EXIT

# wait_until SECONDS WHAT COMMAND...: poll COMMAND every 0.1 s until it succeeds.
wait_until() {
  local seconds="$1" what="$2" i
  shift 2
  for ((i = 0; i < seconds * 10; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  e2e_log "gave up after ${seconds}s waiting for $what; bridge stderr tail:"
  tail -n 20 "$TMP/bridge.stderr" >&2
  return 1
}

answered() { grep -q "\"id\":$1[,}]" "$TMP/bridge.stdout"; }

# 1. The parent and its bridge -----------------------------------------------------------
CLOSED_PORT="$(e2e_free_port)"
# A non-interactive shell gives a background job /dev/null as stdin unless told otherwise.
# shellcheck disable=SC2016 # expanded by the inner sh
PARENT_SCRIPT='exec 3<&0; "$@" <&3 3<&- & echo $! > "$BRIDGE_PID_FILE"; wait'
(
  cd "$TMP"
  exec env -u RUST_LOG -u OPENCLAW_CONFIG_PATH -u OPENCLAW_STATE_DIR -u OPENCLAW_GATEWAY_URL \
    -u OPENCLAW_GATEWAY_TOKEN -u OPENCLAW_GATEWAY_PASSWORD -u OPENCLAW_MCP_ENABLED_TOOLS \
    CLAWMCP_DATA_DIR="$TMP/data" OPENCLAW_HOME="$TMP/openclaw" OPENCLAW_WORKSPACE="$TMP/workspace" \
    BRIDGE_PID_FILE="$TMP/bridge.pid" \
    sh -c "$PARENT_SCRIPT" sh "$BIN" tools --url "ws://127.0.0.1:$CLOSED_PORT" --token-file "$TMP/gateway-token" \
    <"$TMP/stdin" >"$TMP/bridge.stdout" 2>"$TMP/bridge.stderr"
) &
PARENT_PID=$!
wait_until 10 "the bridge to start" test -s "$TMP/bridge.pid"
BRIDGE_PID="$(cat "$TMP/bridge.pid")"
BRIDGE_START="$(e2e_proc_start "$BRIDGE_PID")"
e2e_log "parent sh pid $PARENT_PID, clawmcp tools pid $BRIDGE_PID"

# 2. A background job through the bridge ---------------------------------------------------
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e-lifecycle","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&4
wait_until 10 "the initialize answer" answered 1
JOB_SCRIPT="sleep $MARKER & echo \$! > $TMP/job.pids; echo \$\$ >> $TMP/job.pids; wait # $MARKER"
printf '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"command":["sh","-c","%s"],"background":true}}}\n' \
  "$JOB_SCRIPT" >&4
wait_until 10 "the exec answer" answered 2
grep '"id":2[,}]' "$TMP/bridge.stdout" | grep -q 'still running' || e2e_die "exec did not go to the background: $(grep '"id":2' "$TMP/bridge.stdout")"
wait_until 10 "the job to record its PIDs" test "$(wc -l <"$TMP/job.pids" 2>/dev/null || echo 0)" -ge 2
mapfile -t JOB_PIDS <"$TMP/job.pids"
for pid in "${JOB_PIDS[@]}"; do alive "$pid" || e2e_die "job process $pid is not running before the parent is killed"; done
e2e_log "background job running: pids ${JOB_PIDS[*]}"

# 3. Kill the parent -------------------------------------------------------------------------
kill -KILL "$PARENT_PID"
wait "$PARENT_PID" 2>/dev/null || true
PARENT_PID=""
e2e_log "killed the parent; waiting up to ${LIMIT_SECONDS}s for the bridge and its job to be gone"

# 4. Nothing left ------------------------------------------------------------------------------
nothing_left() {
  local pid
  for pid in "$BRIDGE_PID" "${JOB_PIDS[@]}"; do alive "$pid" && return 1; done
  [[ -z "$(marked_pids)" ]]
}
if ! wait_until "$LIMIT_SECONDS" "the bridge and its job to be gone" nothing_left; then
  for pid in "$BRIDGE_PID" "${JOB_PIDS[@]}" $(marked_pids); do
    alive "$pid" && e2e_log "still running: $pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
  done
  exit 1
fi
grep -q "the process that started clawmcp exited" "$TMP/bridge.stderr" ||
  e2e_die "the bridge exited but did not log the parent's death; stderr: $(cat "$TMP/bridge.stderr")"
e2e_log "ok: the bridge and its background job are gone after the parent was killed"
