#!/usr/bin/env bash
# `clawmcp node` in gateway node mode against the REAL OpenClaw gateway from npm, beside the
# REAL headless node host (`openclaw node run`), on loopback (node_mode.py lists every check).
#
#   1. build clawmcp (release), unless CLAWMCP_E2E_BIN names a binary
#   2. install Node 24 + openclaw@2026.9.6 (install.sh; idempotent, cached)
#   3. start one gateway and the real node host (start.sh --with-node) in a throwaway dir; they
#      and our node are stopped by PID on exit
#   4. node_mode.py: a PASS/FAIL row per check
# Exits non-zero if anything fails; nothing is skipped.
#
# Usage: e2e/gateway/node_mode.sh [--keep]
#   --keep   keep the temp dir (gateway log, both nodes' logs, node-mode.json); it is always
#            kept when the suite fails
# Environment: CLAWMCP_E2E_BIN (prebuilt clawmcp), CLAWMCP_E2E_CACHE / CLAWMCP_GW_PREFIX
#   (install dirs), CARGO_TARGET_DIR (honoured by the build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=node-mode
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

e2e_parse_flags "" "$@"
e2e_require curl python3 timeout npm

BIN="$(e2e_clawmcp_bin "${CLAWMCP_E2E_BIN:-}")" || exit 1
# The real node host comes from start.sh --with-node (approved and proven there).
e2e_seeded_gateway node-mode --with-node

timeout 900 python3 "$HERE/node_mode.py" --gateway-env "$GW_ROOT/gateway.env" --clawmcp-bin "$BIN" \
  --artifacts "$TMP/run"
