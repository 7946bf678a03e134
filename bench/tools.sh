#!/usr/bin/env bash
# Benchmark `clawmcp tools` against its floors in one run and print the ratios
# (bench/tools_bench.py says exactly what is measured):
#   - per-call overhead over a direct POST /tools/invoke to the same real gateway
#     (target: < 1 ms added at p50);
#   - the `grep` tool against the `rg` binary on a large tree (target: within 1.5x);
#   - spawn -> initialize and VmRSS against a bare `node -e` reading stdin (target: faster and
#     smaller than that floor).
# A script that reports numbers, not a test: nothing here asserts a threshold.
#
# Usage: bench/tools.sh [--calls N] [--runs N] [--write-results]
#   --calls          tools/call per path for the overhead percentiles (default 300)
#   --runs           runs per grep pattern and spawns per process (default 7)
#   --write-results  write bench/TOOLS_RESULTS.md from this run
# Environment: CLAWMCP_BENCH_BIN (prebuilt release clawmcp; default: cargo build --release),
#   CARGO_TARGET_DIR, CLAWMCP_E2E_CACHE / CLAWMCP_GW_PREFIX (where e2e/gateway/install.sh puts
#   OpenClaw). Needs `rg` (Debian: apt-get install ripgrep).
# The search tree is a copy of the installed openclaw package's dist/ (~300 MB, ~10k files)
# without .git/node_modules directories, in a temp dir removed at exit. Everything binds to
# 127.0.0.1; the gateway and every process started are stopped by PID.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
E2E_LOG_TAG=tools-bench
# shellcheck source-path=SCRIPTDIR source=../e2e/lib/common.sh
source "$ROOT/e2e/lib/common.sh"

CALLS=300 RUNS=7 WRITE_RESULTS=0
COMMAND_LINE="bench/tools.sh $*"
e2e_parse_options "calls runs" "$@"
((CALLS >= 1 && CALLS <= 100000 && RUNS >= 1 && RUNS <= 100)) || e2e_die "--calls must be 1..100000 and --runs 1..100"
e2e_require curl python3 timeout npm
RG="$(command -v rg || true)"
[[ -n "$RG" ]] || e2e_die "rg (ripgrep) not found; install it (Debian: apt-get install ripgrep)"

# Binary (release: the benchmark measures what users run) ------------------------------------------
BIN="$(e2e_clawmcp_bin "${CLAWMCP_BENCH_BIN:-}")" || exit 1

# The real gateway ------------------------------------------------------------------------------------
e2e_seeded_gateway tools-bench
# shellcheck disable=SC1091
source "$GW_ROOT/gateway.env"

# The search tree --------------------------------------------------------------------------------------
e2e_log "copying the search tree"
cp -r "$CLAWMCP_GW_OPENCLAW_PKG/dist" "$TMP/tree"
find "$TMP/tree" -type d \( -name .git -o -name node_modules \) -prune -exec rm -rf {} +

results=()
((WRITE_RESULTS)) && results=(--results "$HERE/TOOLS_RESULTS.md" --command "$COMMAND_LINE")
mkdir -p "$TMP/work"
timeout 3600 python3 "$HERE/tools_bench.py" --gateway-env "$GW_ROOT/gateway.env" --clawmcp-bin "$BIN" \
  --tree "$TMP/tree" --rg "$RG" --workdir "$TMP/work" --calls "$CALLS" --runs "$RUNS" "${results[@]}"

if ((WRITE_RESULTS)); then bash "$HERE/results.sh"; fi
