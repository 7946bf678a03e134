#!/usr/bin/env bash
# Benchmark `clawmcp node` over loopback against the physical floor, side by side in one run.
# A script that reports numbers, not a test: nothing here asserts a threshold.
#
#   throughput + p50/p99 latency: wrk (keep-alive, POST with bench/post.lua) at 1, 16 and 64
#     connections for `ping` and `tools/list`, against clawmcp node AND against the floor,
#     crates/bench-floor: hyper answering a fixed body, for ping the ping result, for tools/list
#     the exact bytes our tools/list returned (same bytes on the wire; the floor just skips the
#     work of producing them). Floor and ours back to back per cell, in rounds; medians reported.
#   server CPU per request: utime+stime from /proc over each wrk run / requests answered
#   memory: VmRSS / VmHWM of clawmcp node from /proc, idle after start and idle after the load
#   start-up: spawn -> first authenticated HTTP 200 (bench/startup.py, median of 20), same for
#     the floor
#   CLI: hyperfine over `clawmcp call --list-tools` (a whole client process per call)
#
#   placement: each server under test (ours, the floors) runs on CPU 0 and wrk on the other
#     CPUs (taskset). Sharing every CPU, the scheduler's choices (wrk preempting the server in the
#     middle of an answer, the server's threads waiting behind wrk's) moved the CPU-per-request
#     ratio between 1.4x and 2.1x from one run to the next with the same binaries; apart, both
#     sides are measured doing their own work. On a 1-CPU machine nothing is pinned.
#
# Usage: bench/node.sh [--duration SECONDS] [--rounds N] [--write-results]
#   --duration       wrk seconds per measurement (default 5; each measurement is bounded)
#   --rounds         rounds over all cells; the report shows per-cell medians (default 3)
#   --write-results  write bench/NODE_RESULTS.md from this run (bench/report.py) and refresh bench/RESULTS.md
# Total load time: rounds x 3 connection counts x 2 methods x 2 targets x duration (~3 min).
# Environment: CLAWMCP_BENCH_BIN / CLAWMCP_BENCH_FLOOR_BIN (prebuilt release binaries; default:
#   cargo build --release), CARGO_TARGET_DIR.
# Everything binds to 127.0.0.1 and is stopped by PID.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
E2E_LOG_TAG=bench
# shellcheck source-path=SCRIPTDIR source=../e2e/lib/common.sh
source "$ROOT/e2e/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=../e2e/lib/node_host.sh
source "$ROOT/e2e/lib/node_host.sh"

DURATION=5 ROUNDS=3 WRITE_RESULTS=0
COMMAND_LINE="bench/node.sh $*"
e2e_parse_options "duration rounds" "$@"
if ! [[ "$DURATION" =~ ^[0-9]+$ ]] || ((DURATION < 1 || DURATION > 120)); then
  e2e_die "--duration must be 1..120 seconds"
fi
if ! [[ "$ROUNDS" =~ ^[0-9]+$ ]] || ((ROUNDS < 1 || ROUNDS > 10)); then
  e2e_die "--rounds must be 1..10"
fi
CONNECTIONS=(1 16 64)
STARTUP_RUNS=20
for tool in wrk hyperfine curl python3 taskset; do
  command -v "$tool" >/dev/null 2>&1 ||
    e2e_die "$tool not found (Debian: apt-get install wrk hyperfine curl python3 util-linux)"
done

# Binaries (release: the benchmark measures what users run) ------------------------------
if [[ -z "${CLAWMCP_BENCH_BIN:-}" || -z "${CLAWMCP_BENCH_FLOOR_BIN:-}" ]]; then
  e2e_log "building clawmcp and clawmcp-bench-floor (release)"
  (cd "$ROOT" && cargo build --release -p clawmcp -p clawmcp-bench-floor) || e2e_die "release build failed"
fi
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN="${CLAWMCP_BENCH_BIN:-$TARGET/release/clawmcp}"
FLOOR_BIN="${CLAWMCP_BENCH_FLOOR_BIN:-$TARGET/release/clawmcp-bench-floor}"
[[ -x "$BIN" && -x "$FLOOR_BIN" ]] || e2e_die "missing binary: $BIN or $FLOOR_BIN"

TMP="$(mktemp -d /tmp/clawmcp-bench.XXXXXX)"
DATA_DIR="$TMP/data"
mkdir -m 700 "$DATA_DIR"
# shellcheck source-path=SCRIPTDIR source=floor_lib.sh
source "$HERE/floor_lib.sh"
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
  e2e_stop_node || true
  stop_floors
  rm -rf -- "$TMP"
}
trap cleanup EXIT

rss_kib() { awk -v key="$2:" '$1 == key {print $2}' "/proc/$1/status"; }

# Placement (see the header): each server under test is started through a wrapper that execs it
# under `taskset -c 0` (same PID, so it is stopped by PID as before; its runtime sizes itself to
# the one CPU it may use, as it would on a machine that size); LOAD is wrk's command prefix.
CPUS="$(nproc)"
SERVED_BIN="$BIN" SERVED_FLOOR_BIN="$FLOOR_BIN" LOAD=() PLACEMENT=shared LOAD_CPUS="$CPUS"
if ((CPUS >= 2)); then
  LOAD_CPUS=$((CPUS - 1))
  load_cpus=1
  ((CPUS == 2)) || load_cpus="1-$((CPUS - 1))"
  LOAD=(taskset -c "$load_cpus") PLACEMENT="server_cpu0_wrk_cpus$load_cpus"
  SERVED_BIN="$TMP/clawmcp-on-cpu0" SERVED_FLOOR_BIN="$TMP/floor-on-cpu0"
  printf '#!/bin/sh\nexec taskset -c 0 "%s" "$@"\n' "$BIN" >"$SERVED_BIN"
  printf '#!/bin/sh\nexec taskset -c 0 "%s" "$@"\n' "$FLOOR_BIN" >"$SERVED_FLOOR_BIN"
  chmod 700 "$SERVED_BIN" "$SERVED_FLOOR_BIN"
fi

e2e_start_node "$SERVED_BIN" "$DATA_DIR" "$TMP/node.log" || e2e_die "clawmcp node did not start"
sleep 1 # let start-up allocations settle before reading idle memory
RSS_IDLE_START="$(rss_kib "$NODE_HOST_PID" VmRSS)"

declare -A BODY=(
  [ping]='{"jsonrpc":"2.0","id":1,"method":"ping"}'
  [tools/list]='{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
)
# Sanity: both methods answer 200 with a JSON-RPC result (not an error) before load.
# Each method's answer also becomes the body its floor sends.
for method in ping tools/list; do
  answer_file="$TMP/answer-${method//\//-}.json"
  curl -fsS -m 5 -o "$answer_file" -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$NODE_HOST_TOKEN_FILE")") \
    -H 'Content-Type: application/json' --data "${BODY[$method]}" "$NODE_HOST_URL" ||
    e2e_die "$method over HTTP failed before the benchmark"
  grep -q '"result"' "$answer_file" || e2e_die "$method answered without a result: $(head -c 300 "$answer_file")"
  FLOOR_BIN="$SERVED_FLOOR_BIN" start_floor "$method" "$answer_file"
done

CLK_TCK="$(getconf CLK_TCK)"
# cpu_ticks PID: user + system CPU time the whole process has used (all threads, dead ones too).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run_wrk TARGET_URL BODY CONNECTIONS SERVER_PID -> wrk's RESULT fields (see post.lua) plus
# cpu_us_per_req: server CPU time per answered request. Throughput on a shared machine moves
# with whatever else runs; CPU per request mostly does not, so it is the steadier ratio.
run_wrk() {
  local url="$1" body="$2" conns="$3" pid="$4" threads=1 before result requests
  # One wrk thread per CPU it has (two threads on one CPU time-slice, and their waits show up
  # as the server's latency), at most one per connection and two in all.
  ((conns > 1 && LOAD_CPUS > 1)) && threads=2
  before="$(cpu_ticks "$pid")"
  result="$(BENCH_BODY="$body" BENCH_TOKEN_FILE="$NODE_HOST_TOKEN_FILE" timeout $((DURATION + 30)) \
    "${LOAD[@]}" wrk -t"$threads" -c"$conns" -d"${DURATION}s" --timeout 5s -s "$HERE/post.lua" "$url" |
    sed -n 's/^RESULT //p')"
  [[ -n "$result" ]] || return 0
  requests="$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$result")"
  echo "$result cpu_us_per_req=$(awk -v ticks="$(($(cpu_ticks "$pid") - before))" -v hz="$CLK_TCK" -v n="$requests" \
    'BEGIN { printf "%.2f", ticks * 1e6 / hz / (n > 0 ? n : 1) }')"
}

MEASUREMENTS="$TMP/measurements.txt"
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '/')"
for ((round = 1; round <= ROUNDS; round++)); do
  for conns in "${CONNECTIONS[@]}"; do
    e2e_log "round $round/$ROUNDS: $conns connection(s), ${DURATION}s per target"
    for method in ping tools/list; do
      # Floor and ours back to back, so both see the same background load.
      for target in floor ours; do
        url="$NODE_HOST_URL" pid="$NODE_HOST_PID"
        if [[ "$target" == floor ]]; then url="http://127.0.0.1:${FLOOR_PORT[$method]}/" pid="${FLOOR_PID[$method]}"; fi
        result="$(run_wrk "$url" "${BODY[$method]}" "$conns" "$pid")"
        [[ -n "$result" ]] || e2e_die "wrk printed no result for $target $method at $conns connections"
        [[ "$result" == *" http_errors=0 socket_errors=0 "* ]] ||
          e2e_log "WARNING: error answers during load ($target $method, $conns conns): $result"
        echo "WRK target=$target method=$method conns=$conns round=$round $result" >>"$MEASUREMENTS"
      done
    done
  done
done

sleep 2 # idle again before reading memory
echo "MEM idle_start_kib=$RSS_IDLE_START idle_after_kib=$(rss_kib "$NODE_HOST_PID" VmRSS)" \
  "peak_kib=$(rss_kib "$NODE_HOST_PID" VmHWM)" >>"$MEASUREMENTS"

# CLI round trip: one whole `clawmcp call` process per run.
hyperfine --style none --warmup 3 --runs 30 --export-json "$TMP/cli.json" \
  "$BIN call --list-tools --port $NODE_HOST_PORT --data-dir $DATA_DIR" >/dev/null 2>&1 ||
  e2e_die "hyperfine over clawmcp call failed"
python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["results"][0]
print("CLI median_ms=%.2f runs=%d" % (r["median"] * 1000, len(r["times"])))' "$TMP/cli.json" >>"$MEASUREMENTS"

e2e_stop_node || e2e_log "WARNING: clawmcp node needed SIGKILL"
stop_floors

e2e_log "start-up: $STARTUP_RUNS spawns of each"
port="$(e2e_free_port)"
echo "STARTUP target=ours $(python3 "$HERE/startup.py" --runs "$STARTUP_RUNS" --port "$port" \
  --token-file "$DATA_DIR/mcp-token.txt" -- "$BIN" node --port "$port" --data-dir "$DATA_DIR" | sed 's/^STARTUP //')" \
  >>"$MEASUREMENTS"
port="$(e2e_free_port)"
echo "STARTUP target=floor $(python3 "$HERE/startup.py" --runs "$STARTUP_RUNS" --port "$port" \
  -- "$FLOOR_BIN" "$port" | sed 's/^STARTUP //')" >>"$MEASUREMENTS"
echo "META duration=$DURATION rounds=$ROUNDS placement=$PLACEMENT load_before=$LOAD_BEFORE" \
  "load_after=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '/') date=$(date -u +%Y-%m-%dT%H:%MZ)" >>"$MEASUREMENTS"

report_args=("$MEASUREMENTS")
if ((WRITE_RESULTS)); then
  report_args+=(--results "$HERE/NODE_RESULTS.md" --command "$COMMAND_LINE" --version "$("$BIN" --version)")
fi
python3 "$HERE/report.py" "${report_args[@]}"

if ((WRITE_RESULTS)); then bash "$HERE/results.sh"; fi
