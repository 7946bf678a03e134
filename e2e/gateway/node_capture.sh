#!/usr/bin/env bash
# Screen and camera capture of `clawmcp node` through the REAL OpenClaw gateway (from npm, on
# loopback), driven with the real CLI (`openclaw nodes invoke`, `nodes screen record`, `nodes
# camera ...`); node_capture.py lists every check.
#
#   1. build clawmcp (release), unless CLAWMCP_E2E_BIN names a binary
#   2. install Node 24 + openclaw@2026.9.6 (install.sh; idempotent, cached)
#   3. start one gateway (start.sh --seed) in a throwaway dir; stopped by PID on exit
#   4. node_capture.py: a private Xvfb with a random root colour, the gateway's
#      gateway.nodes.commands.allow by hot reload, our node joined with the camera switch on and
#      the screen switch off, then on; a PASS/FAIL row per check. Xvfb and our node are stopped
#      by PID.
# Exits non-zero if anything fails; nothing is skipped. About a minute after the install.
#
# Usage: e2e/gateway/node_capture.sh [--keep]
#   --keep   keep the temp dir (gateway logs, our node's log, every CLI answer in run/cli/,
#            node-capture.json); it is always kept when the suite fails
# Environment: CLAWMCP_E2E_BIN (prebuilt clawmcp), CLAWMCP_E2E_CACHE / CLAWMCP_GW_PREFIX
#   (install dirs), CARGO_TARGET_DIR (honoured by the build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=node-capture
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

e2e_parse_flags "" "$@"
e2e_require curl python3 timeout npm Xvfb xsetroot ffmpeg ffprobe

BIN="$(e2e_clawmcp_bin "${CLAWMCP_E2E_BIN:-}")" || exit 1
e2e_seeded_gateway node-capture

timeout 600 python3 "$HERE/node_capture.py" --gateway-env "$GW_ROOT/gateway.env" --clawmcp-bin "$BIN" \
  --artifacts "$TMP/run"
