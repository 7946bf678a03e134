# shellcheck shell=bash
# The bench floor (crates/bench-floor) as a background server, for the bench scripts: sourced
# after e2e/lib/common.sh, with FLOOR_BIN and TMP set.
#
#   start_floor NAME [BODY_FILE]   one floor on a free port, answering BODY_FILE's bytes (else a
#                                  ping result): FLOOR_PORT[NAME], FLOOR_PID[NAME]
#   stop_floors                    every floor started, by PID

declare -A FLOOR_PID FLOOR_START FLOOR_PORT

stop_floors() {
  local name
  for name in "${!FLOOR_PID[@]}"; do
    e2e_stop_pid "bench-floor-$name" "${FLOOR_PID[$name]}" "${FLOOR_START[$name]}" 5 || true
    unset "FLOOR_PID[$name]"
  done
}

start_floor() {
  local name="$1" pid
  local files="$TMP/floor-${name//\//-}"
  "$FLOOR_BIN" 0 "${@:2}" >"$files.out" 2>"$files.log" &
  pid=$!
  FLOOR_PID[$name]="$pid" FLOOR_START[$name]="$(e2e_proc_start "$pid")"
  for _ in $(seq 1 100); do
    grep -q '^PORT ' "$files.out" 2>/dev/null && break
    sleep 0.05
  done
  FLOOR_PORT[$name]="$(awk '/^PORT /{print $2}' "$files.out")"
  [[ -n "${FLOOR_PORT[$name]}" ]] || e2e_die "bench floor $name did not report its port: $(cat "$files.log")"
}
