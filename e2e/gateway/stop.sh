#!/usr/bin/env bash
# Stop a gateway started by start.sh (and its node host, with --with-node), by the PIDs it recorded.
#
# Usage: e2e/gateway/stop.sh ROOT [--clean]
#   ROOT     the harness dir (CLAWMCP_GW_ROOT) or its gateway.env
#   --clean  also delete ROOT (only if it looks like a harness dir)
#
# The node host (its launcher and worker) goes first, then the gateway, each the same way:
# only a recorded PID is signalled, and only while its /proc start time still matches the one
# recorded at launch (a reused PID belongs to someone else). Its descendants (spawn broker,
# SQLite worker, node worker) are snapshotted with their start times before the SIGTERM and
# any that outlive it are stopped the same way. SIGTERM, up to 20 s, then SIGKILL.
# Exit status: 0 when nothing of ours is left running, 1 otherwise.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=gateway-stop
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

TARGET="" CLEAN=0
for arg in "$@"; do
  case "$arg" in
    --clean) CLEAN=1 ;;
    -h | --help)
      e2e_usage
      exit 0
      ;;
    *) TARGET="$arg" ;;
  esac
done
[[ -n "$TARGET" ]] || e2e_die "usage: stop.sh ROOT [--clean]"
[[ -f "$TARGET" ]] && TARGET="$(dirname "$TARGET")"
[[ -d "$TARGET" ]] || e2e_die "$TARGET is not a harness dir"
ROOT="$(cd "$TARGET" && pwd)"
[[ -f "$ROOT/gateway.pid" ]] || e2e_die "$ROOT/gateway.pid not found; nothing to stop"

ours() { # PID START: is PID still the process that had START?
  [[ -n "$2" ]] && kill -0 "$1" 2>/dev/null && [[ "$(e2e_proc_start "$1")" == "$2" ]]
}
# SIGTERM the given "pid:start" pairs that are still ours, wait up to GRACE s, SIGKILL the rest.
terminate() {
  local grace="$1" pair pid start i left
  shift
  for pair in "$@"; do
    pid="${pair%%:*}" start="${pair#*:}"
    if ours "$pid" "$start"; then kill -TERM "$pid" 2>/dev/null || true; fi
  done
  for ((i = 0; i < grace * 10; i++)); do
    left=0
    for pair in "$@"; do
      pid="${pair%%:*}" start="${pair#*:}"
      ours "$pid" "$start" && [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]] && left=1
    done
    ((left)) || return 0
    sleep 0.1
  done
  for pair in "$@"; do
    pid="${pair%%:*}" start="${pair#*:}"
    if ours "$pid" "$start"; then
      e2e_log "pid $pid ignored SIGTERM for ${grace}s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
}

# stop_recorded NAME PIDFILE: stop the process recorded in PIDFILE (+ PIDFILE.start) and the
# descendants it had; returns 1 if any of them is still running.
stop_recorded() {
  local name="$1" pid start kid pair rc=0 descendants=()
  pid="$(cat "$2")"
  start="$(cat "$2.start" 2>/dev/null || true)"
  if ! kill -0 "$pid" 2>/dev/null; then
    e2e_log "$name pid $pid is not running"
    return 0
  elif ! ours "$pid" "$start"; then
    e2e_log "pid $pid now belongs to another process; not touching it"
    return 0
  fi
  for kid in $(python3 "$HERE/procutil.py" tree "$pid" | tail -n +2); do
    descendants+=("$kid:$(e2e_proc_start "$kid")")
  done
  e2e_log "SIGTERM $name pid $pid (descendants: ${descendants[*]:-none})"
  terminate 20 "$pid:$start"
  ((${#descendants[@]})) && terminate 5 "${descendants[@]}"
  for pair in "$pid:$start" "${descendants[@]}"; do
    if ours "${pair%%:*}" "${pair#*:}" && [[ "$(awk '{print $3}' "/proc/${pair%%:*}/stat" 2>/dev/null)" != Z ]]; then
      e2e_log "pid ${pair%%:*} is still running"
      rc=1
    fi
  done
  ((rc)) || e2e_log "$name stopped"
  return "$rc"
}

rc=0
# The node host (start.sh --with-node) first, so it does not spend the gateway's shutdown
# reconnecting; it is a launcher plus an openclaw-node worker, both stopped.
if [[ -f "$ROOT/node-host.pid" ]]; then stop_recorded "node host" "$ROOT/node-host.pid" || rc=1; fi
stop_recorded gateway "$ROOT/gateway.pid" || rc=1

if ((CLEAN)); then
  # Only a dir start.sh made: it has the pid file and the token file, and is not a system path.
  case "$ROOT" in / | /tmp | /root | /home | /usr | /opt | "$HOME") e2e_die "refusing to delete $ROOT" ;; esac
  [[ -f "$ROOT/gateway.token" && -d "$ROOT/state" ]] || e2e_die "refusing to delete $ROOT: not a harness dir"
  rm -rf -- "$ROOT"
  e2e_log "removed $ROOT"
fi
exit "$rc"
