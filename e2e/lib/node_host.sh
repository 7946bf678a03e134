# shellcheck shell=bash
# Start and stop one `clawmcp node` for the e2e drivers and the benchmark.
# Source after e2e/lib/common.sh.
#
#   e2e_seed_exec_approvals DATA_DIR   let system.run run anything (the drivers need sh/sleep)
#   e2e_start_node BIN DATA_DIR LOG    sets NODE_HOST_{PID,START,PORT,URL,TOKEN_FILE}
#   e2e_stop_node                      SIGTERM by PID, returns 1 if SIGKILL was needed
#   e2e_use_or_start_node BIN TMP      the suite's node if e2e/run.sh started one, else our own
#   e2e_stop_owned_node                e2e_stop_node, only for a node e2e_use_or_start_node started

# Exec approvals default to allowlist + ask on miss + deny fallback, which would deny
# every system.run of the drivers. The e2e data dir is private and thrown away, so it
# gets the permissive policy; the approval logic itself is covered by unit tests.
e2e_seed_exec_approvals() {
  local dir="$1"
  (umask 077 && printf '%s\n' \
    '{"version":1,"defaults":{"security":"full","ask":"off","askFallback":"deny"},"agents":{}}' \
    >"$dir/exec-approvals.json")
}

# e2e_start_node BIN DATA_DIR LOG [TIMEOUT_SECONDS]
# Picks a free loopback port (retrying if another process grabs it first), starts the
# node, and waits until the token file exists and an authenticated GET probe answers 200.
# shellcheck disable=SC2034 # NODE_HOST_* are this function's outputs
e2e_start_node() {
  local bin="$1" data_dir="$2" log="$3" timeout_s="${4:-30}" attempt port pid deadline
  NODE_HOST_PID="" NODE_HOST_START="" NODE_HOST_PORT="" NODE_HOST_URL=""
  NODE_HOST_TOKEN_FILE="$data_dir/mcp-token.txt"
  for attempt in 1 2 3; do
    port="$(e2e_free_port)"
    "$bin" node --port "$port" --data-dir "$data_dir" >>"$log" 2>&1 </dev/null &
    pid=$!
    NODE_HOST_PID="$pid" NODE_HOST_START="$(e2e_proc_start "$pid")"
    deadline=$((SECONDS + timeout_s))
    while ((SECONDS < deadline)); do
      if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid" 2>/dev/null || true
        NODE_HOST_PID=""
        if grep -qi 'in use' "$log"; then
          e2e_log "port $port was taken before the node bound it (attempt $attempt); retrying"
          continue 2
        fi
        e2e_log "clawmcp node exited during startup; log tail:"
        tail -n 30 "$log" >&2
        return 1
      fi
      if [[ -s "$NODE_HOST_TOKEN_FILE" ]] && e2e_http_probe "http://127.0.0.1:$port/" "$NODE_HOST_TOKEN_FILE"; then
        NODE_HOST_PORT="$port" NODE_HOST_URL="http://127.0.0.1:$port/"
        return 0
      fi
      sleep 0.1
    done
    e2e_log "clawmcp node did not answer an authenticated GET on 127.0.0.1:$port within ${timeout_s}s; log tail:"
    tail -n 30 "$log" >&2
    e2e_stop_node || true
    return 1
  done
  e2e_log "could not start clawmcp node on a free port after 3 attempts"
  return 1
}

e2e_stop_node() {
  local rc=0
  [[ -n "${NODE_HOST_PID:-}" ]] || return 0
  e2e_stop_pid "clawmcp node" "$NODE_HOST_PID" "$NODE_HOST_START" 10 || rc=1
  wait "$NODE_HOST_PID" 2>/dev/null || true
  NODE_HOST_PID=""
  return "$rc"
}

# e2e_use_or_start_node BIN TMP: inside e2e/run.sh (CLAWMCP_E2E_URL, CLAWMCP_E2E_TOKEN_FILE
# and CLAWMCP_E2E_DATA_DIR set) drive that node; otherwise start our own from BIN with a
# throwaway data dir under TMP (exec approvals seeded, log in TMP/node.log) and export those
# three variables. Sets NODE_HOST_OWNED=1 for a node it started (see e2e_stop_owned_node).
e2e_use_or_start_node() {
  local bin="$1" tmp="$2"
  NODE_HOST_OWNED=0
  if [[ -n "${CLAWMCP_E2E_URL:-}" && -n "${CLAWMCP_E2E_TOKEN_FILE:-}" && -n "${CLAWMCP_E2E_DATA_DIR:-}" ]]; then
    return 0
  fi
  local data_dir="$tmp/node-data"
  mkdir -m 700 "$data_dir"
  e2e_seed_exec_approvals "$data_dir"
  NODE_HOST_OWNED=1
  e2e_start_node "$bin" "$data_dir" "$tmp/node.log" || e2e_die "clawmcp node did not start"
  export CLAWMCP_E2E_URL="$NODE_HOST_URL" CLAWMCP_E2E_TOKEN_FILE="$NODE_HOST_TOKEN_FILE" CLAWMCP_E2E_DATA_DIR="$data_dir"
  e2e_log "started clawmcp node pid $NODE_HOST_PID at $NODE_HOST_URL"
}

# e2e_stop_owned_node: stop the node e2e_use_or_start_node started, if it did; returns 1 (and
# says so) if it had to be killed.
e2e_stop_owned_node() {
  ((${NODE_HOST_OWNED:-0})) || return 0
  e2e_stop_node && return 0
  e2e_log "clawmcp node did not stop on SIGTERM"
  return 1
}
