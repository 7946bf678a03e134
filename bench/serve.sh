#!/usr/bin/env bash
# Benchmark `clawmcp serve` against the real `openclaw mcp serve` (npm), both against the
# same real OpenClaw gateway on 127.0.0.1, side by side in one run, and print the ratios:
# spawn -> initialize and spawn -> first conversations_list (median of --runs), VmRSS of
# each bridge's process tree after --events live events, CPU to ingest them, and tools/call
# p50/p99 over --calls calls. A script that reports numbers, not a test: nothing here
# asserts a threshold (targets: >= 50x faster to initialize, >= 20x less memory).
#
# Usage: bench/serve.sh [--runs N] [--events N] [--calls N] [--write-results]
#   --runs           fresh spawns per bridge for the start-up medians (default 10, max 50)
#   --events         live events to queue before reading memory (default 1000, max 1000 =
#                    the bridges' queue bound)
#   --calls          tools/call per tool per bridge for the latency percentiles (default 500)
#   --write-results  write bench/SERVE_RESULTS.md from this run
# Environment: CLAWMCP_BENCH_BIN (prebuilt release clawmcp; default: cargo build --release),
#   CARGO_TARGET_DIR, CLAWMCP_E2E_CACHE / CLAWMCP_GW_PREFIX (where e2e/gateway/install.sh
#   puts OpenClaw).
# Everything binds to 127.0.0.1; the gateway and every bridge are stopped by PID. Load is
# bounded: --events injections over one connection (8 in flight), --calls sequential calls.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
E2E_LOG_TAG=serve-bench
# shellcheck source-path=SCRIPTDIR source=../e2e/lib/common.sh
source "$ROOT/e2e/lib/common.sh"

RUNS=10 EVENTS=1000 CALLS=500 WRITE_RESULTS=0
COMMAND_LINE="bench/serve.sh $*"
e2e_parse_options "runs events calls" "$@"
((RUNS >= 1 && EVENTS >= 1 && CALLS >= 1)) || e2e_die "--runs, --events and --calls must be at least 1"
e2e_require curl python3 timeout npm

# Binary (release: the benchmark measures what users run) ------------------------------------------
BIN="$(e2e_clawmcp_bin "${CLAWMCP_BENCH_BIN:-}")" || exit 1

# The real gateway, seeded ------------------------------------------------------------------------
e2e_seeded_gateway serve-bench

bench_args=(--gateway-env "$GW_ROOT/gateway.env" --clawmcp-bin "$BIN" --workdir "$TMP"
  --runs "$RUNS" --events "$EVENTS" --calls "$CALLS")
((WRITE_RESULTS)) && bench_args+=(--results "$HERE/SERVE_RESULTS.md" --command "$COMMAND_LINE")
# Bounded: ~(runs x 2 spawns) + the event load + the calls; 1 h is far beyond a healthy run.
timeout 3600 python3 "$HERE/serve_bench.py" "${bench_args[@]}"

if ((WRITE_RESULTS)); then bash "$HERE/results.sh"; fi
