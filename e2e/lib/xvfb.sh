# shellcheck shell=bash
# A private X server for the suites and benchmarks that capture the screen. Source after
# common.sh.
#   e2e_start_xvfb GEOMETRY LOG [XVFB_ARGS...]   sets XVFB_PID, XVFB_START and exports DISPLAY
#   e2e_stop_xvfb                                 stops it by PID (if it is still ours)
# The display number is the first free one from 90 (no socket, no lock file); the server
# listens on its Unix socket only (-nolisten tcp) and never resets (-noreset: a reset when
# the last client leaves would wipe what a test drew).

XVFB_PID="" XVFB_START=""

e2e_start_xvfb() {
  local geometry="$1" log="$2" display_number
  e2e_require Xvfb
  for display_number in $(seq 90 140); do
    [[ -e "/tmp/.X11-unix/X$display_number" || -e "/tmp/.X$display_number-lock" ]] && continue
    Xvfb ":$display_number" -screen 0 "$geometry" "${@:3}" -nolisten tcp -noreset >"$log" 2>&1 &
    XVFB_PID=$!
    XVFB_START="$(e2e_proc_start "$XVFB_PID")"
    for _ in $(seq 100); do
      [[ -S "/tmp/.X11-unix/X$display_number" ]] && break
      kill -0 "$XVFB_PID" 2>/dev/null || break
      sleep 0.05
    done
    if [[ -S "/tmp/.X11-unix/X$display_number" ]]; then
      export DISPLAY=":$display_number"
      return 0
    fi
    e2e_stop_xvfb
  done
  e2e_log "Xvfb did not start on any free display; see $log"
  return 1
}

e2e_stop_xvfb() {
  [[ -n "$XVFB_PID" ]] || return 0
  e2e_stop_pid Xvfb "$XVFB_PID" "$XVFB_START" 5 || true
  wait "$XVFB_PID" 2>/dev/null || true
  XVFB_PID="" XVFB_START=""
}
