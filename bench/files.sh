#!/usr/bin/env bash
# Benchmark moving one file through `clawmcp node`'s file channel against the floor of the
# same bytes over one plain loopback HTTP exchange, side by side in one run. A script that
# reports numbers, not a test.
#
#   ours: `clawmcp call file.fetch --output-file` and `clawmcp call file.create --input-file`
#     (release build, a whole client process per transfer: open, preflight, the call, polls of
#     16 frames, acks, the sha256 on both sides, the file moved into place)
#   floor: crates/bench-floor answering the file's bytes to one POST (fetch), and reading a POST
#     of the file's bytes (create), with curl as the client: HTTP and nothing else
# The target (docs/node-http.md §12 and the files issue): at least a third of the floor's
# throughput despite base64 and polling. Not measured here: the real node host's file.fetch
# through the gateway (needs the gateway's streaming invoke; see the issue's notes).
#
# Usage: bench/files.sh [--mib N] [--runs N] [--write-results]
#   --mib            file size in MiB (default 50)
#   --runs           hyperfine runs per command (default 10)
#   --write-results  write bench/FILES_RESULTS.md from this run
# Needs hyperfine, curl, python3 (Debian: hyperfine curl python3). Environment:
# CLAWMCP_BENCH_BIN / CLAWMCP_BENCH_FLOOR_BIN (prebuilt release binaries; default: cargo build
# --release), CARGO_TARGET_DIR. Everything binds to 127.0.0.1 and is stopped by PID.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
E2E_LOG_TAG=bench-files
# shellcheck source-path=SCRIPTDIR source=../e2e/lib/common.sh
source "$ROOT/e2e/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=../e2e/lib/node_host.sh
source "$ROOT/e2e/lib/node_host.sh"

MIB=50 RUNS=10 WRITE_RESULTS=0
COMMAND_LINE="bench/files.sh $*"
e2e_parse_options "mib runs" "$@"
if ! [[ "$MIB" =~ ^[0-9]+$ ]] || ((MIB < 1 || MIB > 1024)); then e2e_die "--mib must be 1..1024"; fi
if ! [[ "$RUNS" =~ ^[0-9]+$ ]] || ((RUNS < 3 || RUNS > 100)); then e2e_die "--runs must be 3..100"; fi
for tool in hyperfine curl python3; do
  command -v "$tool" >/dev/null 2>&1 || e2e_die "$tool not found (Debian: apt-get install hyperfine curl python3)"
done

if [[ -z "${CLAWMCP_BENCH_BIN:-}" || -z "${CLAWMCP_BENCH_FLOOR_BIN:-}" ]]; then
  e2e_log "building clawmcp and clawmcp-bench-floor (release)"
  (cd "$ROOT" && cargo build --release -p clawmcp -p clawmcp-bench-floor) || e2e_die "release build failed"
fi
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN="${CLAWMCP_BENCH_BIN:-$TARGET/release/clawmcp}"
FLOOR_BIN="${CLAWMCP_BENCH_FLOOR_BIN:-$TARGET/release/clawmcp-bench-floor}"
[[ -x "$BIN" && -x "$FLOOR_BIN" ]] || e2e_die "missing binary: $BIN or $FLOOR_BIN"

TMP="$(mktemp -d /tmp/clawmcp-bench-files.XXXXXX)"
DATA_DIR="$TMP/data" SERVED="$TMP/served"
mkdir -m 700 "$DATA_DIR" "$SERVED"
# shellcheck source-path=SCRIPTDIR source=floor_lib.sh
source "$HERE/floor_lib.sh"
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
  e2e_stop_node || true
  stop_floors
  rm -rf -- "$TMP"
}
trap cleanup EXIT

head -c "$((MIB * 1024 * 1024))" /dev/urandom >"$SERVED/source.bin"
(umask 077 && printf '{"NodeFileRoots": ["%s"]}\n' "$SERVED" >"$DATA_DIR/settings.json")
e2e_start_node "$BIN" "$DATA_DIR" "$TMP/node.log" || e2e_die "clawmcp node did not start"
start_floor fetch "$SERVED/source.bin"
start_floor create

CALL="$BIN call --url $NODE_HOST_URL --data-dir $DATA_DIR --timeout-ms 600000"
printf '{"path":"%s","maxBytes":%d}\n' "$SERVED/source.bin" "$((MIB * 1024 * 1024))" >"$TMP/fetch.json"
printf '{"path":"%s/created.bin","maxBytes":%d}\n' "$SERVED" "$((MIB * 1024 * 1024))" >"$TMP/create.json"
POST="curl -sS --fail -X POST -H Content-Type:application/json"

# One of each first, checked: the bytes must arrive whole, or the timings mean nothing.
$CALL file.fetch --params "@$TMP/fetch.json" --output-file "$TMP/fetched.bin" --force >/dev/null 2>&1 ||
  e2e_die "file.fetch failed: $(tail -n 5 "$TMP/node.log")"
cmp -s "$SERVED/source.bin" "$TMP/fetched.bin" || e2e_die "file.fetch did not bring the same bytes"
$CALL file.create --params "@$TMP/create.json" --input-file "$SERVED/source.bin" >/dev/null 2>&1 ||
  e2e_die "file.create failed: $(tail -n 5 "$TMP/node.log")"
cmp -s "$SERVED/source.bin" "$SERVED/created.bin" || e2e_die "file.create did not write the same bytes"
$POST -o "$TMP/floor.bin" --data '{}' "http://127.0.0.1:${FLOOR_PORT[fetch]}/"
cmp -s "$SERVED/source.bin" "$TMP/floor.bin" || e2e_die "the floor did not answer the file's bytes"

e2e_log "fetch: hyperfine, $RUNS runs per command ($MIB MiB)"
hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$TMP/fetch.hyperfine.json" \
  -n floor-fetch "$POST -o $TMP/floor.bin --data {} http://127.0.0.1:${FLOOR_PORT[fetch]}/" \
  -n ours-fetch "$CALL file.fetch --params @$TMP/fetch.json --output-file $TMP/fetched.bin --force" \
  >"$TMP/fetch.hyperfine.txt"
e2e_log "create: hyperfine, $RUNS runs per command ($MIB MiB)"
# file.create never replaces: each run starts without the target.
hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$TMP/create.hyperfine.json" \
  --prepare "rm -f $SERVED/created.bin" --prepare "rm -f $SERVED/created.bin" \
  -n floor-create "$POST -o /dev/null --data-binary @$SERVED/source.bin http://127.0.0.1:${FLOOR_PORT[create]}/" \
  -n ours-create "$CALL file.create --params @$TMP/create.json --input-file $SERVED/source.bin" \
  >"$TMP/create.hyperfine.txt"

report_args=(--tmp "$TMP" --runs "$RUNS" --mib "$MIB" --command "$COMMAND_LINE")
((WRITE_RESULTS)) && report_args+=(--markdown "$HERE/FILES_RESULTS.md")
python3 "$HERE/files_report.py" "${report_args[@]}"
