# shellcheck shell=bash
# Helpers shared by the e2e harnesses (e2e/run.sh, e2e/node/*.sh, and later e2e/gateway/).
# Source it; it defines functions only and changes no shell options.
#
# Everything a harness starts binds to 127.0.0.1 and is stopped by the PID recorded
# when it was started (never by name).

E2E_LOG_TAG="${E2E_LOG_TAG:-e2e}"

e2e_log() { printf '[%s] %s\n' "$E2E_LOG_TAG" "$*" >&2; }
e2e_die() {
  printf '[%s] ERROR: %s\n' "$E2E_LOG_TAG" "$*" >&2
  exit 1
}

# e2e_free_port: print a TCP port that was free on 127.0.0.1 a moment ago. The caller
# must still handle "address in use" (another process can take it in between).
e2e_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# e2e_proc_start PID: the process start time (clock ticks since boot) from /proc, used
# to tell our process from a later one that reused its PID.
e2e_proc_start() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# e2e_stop_pid NAME PID START [GRACE_SECONDS]: SIGTERM the PID if it is still the
# process we started (same /proc start time), wait up to GRACE_SECONDS (default 10),
# then SIGKILL. Returns 0 if it exited on SIGTERM, 1 if it had to be killed.
e2e_stop_pid() {
  local name="$1" pid="$2" start="$3" grace="${4:-10}" i
  [[ -n "$pid" ]] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  if [[ "$(e2e_proc_start "$pid")" != "$start" ]]; then
    e2e_log "$name pid $pid now belongs to another process; not touching it"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    # A zombie child of ours has exited already; `wait` in the caller reaps it.
    [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == Z ]] && return 0
    sleep 0.1
  done
  e2e_log "$name pid $pid ignored SIGTERM for ${grace}s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  return 1
}

# e2e_http_probe URL TOKEN_FILE: GET the URL with the bearer token; succeeds on HTTP 200.
# The token goes through a header file, not argv, so `ps` never shows it.
e2e_http_probe() {
  local url="$1" token_file="$2"
  curl -fsS -o /dev/null -m 2 -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$token_file")") "$url" 2>/dev/null
}
