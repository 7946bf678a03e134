#!/usr/bin/env bash
# Before/after for one change: two `clawmcp node` binaries side by side in one run, the same
# requests to each in turn (A B A B ...), server CPU per answered request for each, and the
# ratio B/A. For "must not regress" claims: build the old commit's binary, then
#
#   bash bench/ab.sh OLD_BIN NEW_BIN [--duration SECONDS] [--rounds N]
#
# Measured: tools/list, tools/call system.which {bins:["sh"]}, ping; 4 connections, wrk.
# Server CPU per request (utime + stime of the node from /proc, over the requests wrk counted)
# is the steady figure on a shared machine; throughput is printed but moves with the load.
# Everything binds 127.0.0.1; both nodes are stopped by PID on exit.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; }
[[ $# -ge 2 ]] || { usage >&2; exit 2; }
BIN_A="$1" BIN_B="$2"
shift 2
DURATION=5 ROUNDS=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration) DURATION="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    *) usage >&2; exit 2 ;;
  esac
done
for bin in "$BIN_A" "$BIN_B"; do [[ -x "$bin" ]] || { echo "not an executable: $bin" >&2; exit 2; }; done
command -v wrk >/dev/null || { echo "wrk is required (Debian: apt-get install wrk)" >&2; exit 1; }

TMP="$(mktemp -d)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf -- "$TMP"
}
trap cleanup EXIT

# start_node NAME BIN -> sets PORT_<NAME>, PID_<NAME>, TOKEN_<NAME>
start_node() {
  local name="$1" bin="$2" dir="$TMP/$1" port
  mkdir -m 700 "$dir"
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  "$bin" node --port "$port" --data-dir "$dir/data" >"$dir/log" 2>&1 &
  PIDS+=("$!")
  printf -v "PID_$name" '%s' "$!"
  printf -v "PORT_$name" '%s' "$port"
  printf -v "TOKEN_$name" '%s' "$dir/data/mcp-token.txt"
  for _ in $(seq 1 100); do
    grep -q 'MCP HTTP server listening' "$dir/log" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "node $name did not start: $(cat "$dir/log")" >&2
  exit 1
}
start_node A "$BIN_A"
start_node B "$BIN_B"

declare -A BODY=(
  [ping]='{"jsonrpc":"2.0","id":1,"method":"ping"}'
  [tools/list]='{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
  [tools/call]='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"system.which","arguments":{"bins":["sh"]}}}'
)
METHODS=(tools/list tools/call ping)
HZ="$(getconf CLK_TCK)"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# measure NAME METHOD -> "rps cpu_us_per_req"
measure() {
  local name="$1" method="$2" pid port token before result requests rps
  pid="PID_$name" port="PORT_$name" token="TOKEN_$name"
  before="$(cpu_ticks "${!pid}")"
  result="$(BENCH_BODY="${BODY[$method]}" BENCH_TOKEN_FILE="${!token}" timeout $((DURATION + 30)) \
    wrk -t1 -c4 -d"${DURATION}s" --timeout 5s -s "$HERE/post.lua" "http://127.0.0.1:${!port}/" | sed -n 's/^RESULT //p')"
  [[ "$result" == *" http_errors=0 socket_errors=0"* ]] || { echo "errors under load ($name $method): $result" >&2; exit 1; }
  requests="$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$result")"
  rps="$(sed -E 's/^rps=([0-9.]+).*/\1/' <<<"$result")"
  awk -v t="$(($(cpu_ticks "${!pid}") - before))" -v hz="$HZ" -v n="$requests" -v rps="$rps" \
    'BEGIN { printf "%s %.2f\n", rps, t * 1e6 / hz / (n > 0 ? n : 1) }'
}

LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
declare -A CPU_A CPU_B RPS_A RPS_B
for ((round = 1; round <= ROUNDS; round++)); do
  for method in "${METHODS[@]}"; do
    read -r rps cpu < <(measure A "$method"); RPS_A[$method]+="$rps " CPU_A[$method]+="$cpu "
    read -r rps cpu < <(measure B "$method"); RPS_B[$method]+="$rps " CPU_B[$method]+="$cpu "
  done
done

median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
printf 'A = %s\nB = %s\n%s rounds x %s s per cell, 4 connections, wrk -t1; load before: %s\n\n' \
  "$BIN_A" "$BIN_B" "$ROUNDS" "$DURATION" "$LOAD_BEFORE"
printf '| request | A cpu us/req | B cpu us/req | B/A cpu | A req/s | B req/s |\n| --- | --- | --- | --- | --- | --- |\n'
for method in "${METHODS[@]}"; do
  a="$(median <<<"${CPU_A[$method]}")" b="$(median <<<"${CPU_B[$method]}")"
  ra="$(median <<<"${RPS_A[$method]}")" rb="$(median <<<"${RPS_B[$method]}")"
  awk -v m="$method" -v a="$a" -v b="$b" -v ra="$ra" -v rb="$rb" \
    'BEGIN { printf "| %s | %.1f | %.1f | %.2fx | %.0f | %.0f |\n", m, a, b, b / a, ra, rb }'
done
