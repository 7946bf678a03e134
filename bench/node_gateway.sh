#!/usr/bin/env bash
# Benchmark `clawmcp node` against the real `openclaw node run` (npm), both joined to the same
# real OpenClaw gateway on 127.0.0.1, side by side in one run, and print the ratios: VmRSS of
# each node's process tree idle and after --invokes system.which invokes, and the invoke round
# trip through the gateway (p50/p99), and unary file.fetch of an 8 MiB file through it. A script
# that reports numbers, not a test (targets: at least 40x smaller, faster at p50 and p99; file.fetch
# faster than the real node host).
#
# Usage: bench/node_gateway.sh [--invokes N] [--write-results]
#   --invokes        system.which invokes per node (default 1000, max 5000; batches of 100)
#   --write-results  write bench/NODE_GATEWAY_RESULTS.md from this run
# Environment: CLAWMCP_BENCH_BIN (prebuilt release clawmcp; default: cargo build --release),
#   CARGO_TARGET_DIR, CLAWMCP_E2E_CACHE / CLAWMCP_GW_PREFIX (where e2e/gateway/install.sh puts
#   OpenClaw).
# Everything binds to 127.0.0.1; the gateway and both nodes are stopped by PID. Load is bounded:
# --invokes sequential invokes per node.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
E2E_LOG_TAG=node-gateway-bench
# shellcheck source-path=SCRIPTDIR source=../e2e/lib/common.sh
source "$ROOT/e2e/lib/common.sh"

INVOKES=1000 WRITE_RESULTS=0
COMMAND_LINE="bench/node_gateway.sh $*"
e2e_parse_options "invokes" "$@"
((INVOKES >= 1)) || e2e_die "--invokes must be at least 1"
e2e_require python3 timeout npm

BIN="$(e2e_clawmcp_bin "${CLAWMCP_BENCH_BIN:-}")" || exit 1
e2e_seeded_gateway node-gateway-bench

RESULTS=()
((WRITE_RESULTS)) && RESULTS=(--write-results "$HERE/NODE_GATEWAY_RESULTS.md")
timeout 1800 python3 "$HERE/node_gateway_bench.py" --gateway-env "$GW_ROOT/gateway.env" --clawmcp-bin "$BIN" \
  --artifacts "$TMP/run" --invokes "$INVOKES" --command-line "$COMMAND_LINE" "${RESULTS[@]}"
if ((WRITE_RESULTS)); then bash "$HERE/results.sh"; fi
