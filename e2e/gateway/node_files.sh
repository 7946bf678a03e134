#!/usr/bin/env bash
# The file commands of `clawmcp node` (file.*, dir.*, fs.listDir) through the REAL OpenClaw
# gateway (from npm, on loopback), driven with the real CLI (`openclaw nodes invoke`) and the
# gateway's fs.listDir RPC; node_files.py lists every check.
#
#   1. build clawmcp (release), unless CLAWMCP_E2E_BIN names a binary
#   2. install Node 24 + openclaw@2026.9.6 (install.sh; idempotent, cached)
#   3. start one gateway (start.sh --seed) in a throwaway dir; stopped by PID on exit
#   4. node_files.py: gateway.nodes.commands.allow by hot reload, our node joined with
#      NodeFileRoots one private tree, approved; a PASS/FAIL row per check. Our node is stopped
#      by PID.
# Exits non-zero if anything fails; nothing is skipped.
#
# Usage: e2e/gateway/node_files.sh [--keep]
#   --keep   keep the temp dir (gateway logs, our node's log, every CLI answer in run/cli/,
#            node-files.json); it is always kept when the suite fails
# Environment: CLAWMCP_E2E_BIN (prebuilt clawmcp), CLAWMCP_E2E_CACHE / CLAWMCP_GW_PREFIX
#   (install dirs), CARGO_TARGET_DIR (honoured by the build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=node-files
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

e2e_parse_flags "" "$@"
e2e_require curl python3 timeout npm

BIN="$(e2e_clawmcp_bin "${CLAWMCP_E2E_BIN:-}")" || exit 1
e2e_seeded_gateway node-files

timeout 600 python3 "$HERE/node_files.py" --gateway-env "$GW_ROOT/gateway.env" --clawmcp-bin "$BIN" \
  --artifacts "$TMP/run"
