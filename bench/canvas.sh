#!/usr/bin/env bash
# Benchmark canvas.present -> first canvas.snapshot, cold and warm, against the same Debian
# Chromium driven by hand with Playwright (playwright-core from npm), interleaved in one run
# (bench/canvas_bench.cjs). A script that reports numbers, not a test.
#
# Usage: bench/canvas.sh [--rounds N] [--write-results]
#   --rounds         rounds (default 10; each starts one node and one Playwright browser)
#   --write-results  write bench/CANVAS_RESULTS.md from this run
# Needs chromium, node and npm (Node.js >= 20) and the npm registry for playwright-core (into a
# private cache dir; its own browser download is never used). Environment: CLAWMCP_BENCH_BIN (a
# prebuilt release binary; default: cargo build --release), CARGO_TARGET_DIR, CLAWMCP_E2E_CACHE.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
E2E_LOG_TAG=bench-canvas
# shellcheck source-path=SCRIPTDIR source=../e2e/lib/common.sh
source "$ROOT/e2e/lib/common.sh"

PLAYWRIGHT_VERSION=1.64.1
ROUNDS=10
COMMAND_LINE="bench/canvas.sh $*"
e2e_parse_options rounds "$@"
((ROUNDS >= 3 && ROUNDS <= 100)) || e2e_die "--rounds must be 3..100"
for tool in chromium node npm; do
  command -v "$tool" >/dev/null 2>&1 || e2e_die "$tool not found (Debian: apt-get install chromium; Node.js >= 20 with npm)"
done
BIN="$(e2e_clawmcp_bin "${CLAWMCP_BENCH_BIN:-}")" || exit 1

# playwright-core only (no browser download), pinned, cached between runs.
CACHE="${CLAWMCP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clawmcp-e2e}"
PLAYWRIGHT_DIR="$CACHE/playwright-core-$PLAYWRIGHT_VERSION"
if [[ ! -f "$PLAYWRIGHT_DIR/node_modules/playwright-core/package.json" ]]; then
  e2e_log "npm install playwright-core@$PLAYWRIGHT_VERSION into $PLAYWRIGHT_DIR"
  mkdir -p "$PLAYWRIGHT_DIR"
  (cd "$PLAYWRIGHT_DIR" && npm_config_cache="$PLAYWRIGHT_DIR/.npm-cache" PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    npm install --no-audit --no-fund --silent "playwright-core@$PLAYWRIGHT_VERSION") || e2e_die "npm install playwright-core failed"
fi

TMP="$(mktemp -d /tmp/clawmcp-bench-canvas.XXXXXX)"
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() { rm -rf -- "$TMP"; }
trap cleanup EXIT

OUT=-
((WRITE_RESULTS)) && OUT="$HERE/CANVAS_RESULTS.md"
node "$HERE/canvas_bench.cjs" "$PLAYWRIGHT_DIR" "$BIN" "$TMP" "$ROUNDS" "$OUT" "$COMMAND_LINE"
