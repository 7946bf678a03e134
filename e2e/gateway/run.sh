#!/usr/bin/env bash
# `clawmcp serve` compatibility suite against the REAL OpenClaw gateway and the real
# `openclaw mcp serve`, both from npm, on loopback.
#
#   1. unit tests of the comparison rules (test_serve_compat.py)
#   2. build clawmcp (release), unless CLAWMCP_E2E_BIN names a binary or no candidate is needed
#   3. install Node 24 + openclaw@2026.9.6 (install.sh; idempotent, cached)
#   4. start one seeded gateway (start.sh --seed) in a throwaway dir; stopped by PID on exit
#   5. serve_compat.py: both bridges in lockstep, --claude-channel-mode off then on; a
#      PASS/FAIL table per step
# Exits non-zero if anything fails; nothing is skipped.
#
# Usage: e2e/gateway/run.sh [--self-check | --reference-only] [--keep]
#   --self-check      compare the real bridge with a second real bridge instead of clawmcp
#                     (validates the harness: must pass)
#   --reference-only  run the real bridge alone (expectations only)
#   --keep            keep the temp dir (gateway log, per-bridge transcripts and stderr,
#                     serve-compat.json); it is always kept when the suite fails
# Environment: CLAWMCP_E2E_BIN (prebuilt clawmcp), CLAWMCP_E2E_CACHE / CLAWMCP_GW_PREFIX
#   (install dir), CARGO_TARGET_DIR (honoured by the build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=serve-compat
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

CANDIDATE=clawmcp
own_flag() {
  case "$1" in
    --self-check) CANDIDATE=openclaw ;;
    --reference-only) CANDIDATE=none ;;
    *) return 1 ;;
  esac
}
e2e_parse_flags own_flag "$@"
e2e_require curl python3 timeout npm

# 1. The comparison rules themselves -----------------------------------------------------------
python3 -m unittest discover -s "$HERE" -p 'test_*.py' >&2 || e2e_die "comparison unit tests failed"

# 2. Binary -----------------------------------------------------------------------------------------
compat_args=(--candidate "$CANDIDATE")
if [[ "$CANDIDATE" == clawmcp ]]; then
  BIN="$(e2e_clawmcp_bin "${CLAWMCP_E2E_BIN:-}")" || exit 1
  compat_args+=(--clawmcp-bin "$BIN")
fi

# 3. One seeded gateway (the real one, installed from npm) for the whole suite -----------------------
e2e_seeded_gateway serve-compat

# 4. The suite -------------------------------------------------------------------------------------------
mkdir -p "$TMP/bridges"
timeout 900 python3 "$HERE/serve_compat.py" --gateway-env "$GW_ROOT/gateway.env" --artifacts "$TMP/bridges" \
  "${compat_args[@]}"
