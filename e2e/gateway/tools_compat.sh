#!/usr/bin/env bash
# `clawmcp tools` against the REAL OpenClaw gateway from npm, on loopback, with the real Python
# `mcp` SDK as one of the clients (tools_compat.py lists every check).
#
#   1. build clawmcp (release), unless CLAWMCP_E2E_BIN names a binary
#   2. install Node 24 + openclaw@2026.9.6 (install.sh) and the MCP clients (e2e/install.sh);
#      both idempotent and cached
#   3. start one seeded gateway (start.sh --seed) in a throwaway dir; stopped by PID on exit
#   4. tools_compat.py: a PASS/FAIL row per check
# Exits non-zero if anything fails; nothing is skipped.
#
# Usage: e2e/gateway/tools_compat.sh [--keep]
#   --keep   keep the temp dir (gateway log, transcript, stderr, snapshot, SDK log); it is
#            always kept when the suite fails
# Environment: CLAWMCP_E2E_BIN (prebuilt clawmcp), CLAWMCP_E2E_CACHE / CLAWMCP_GW_PREFIX
#   (install dirs), CARGO_TARGET_DIR (honoured by the build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=tools-compat
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

e2e_parse_flags "" "$@"
e2e_require curl python3 timeout npm

# 1. Binary -----------------------------------------------------------------------------------------
BIN="$(e2e_clawmcp_bin "${CLAWMCP_E2E_BIN:-}")" || exit 1

# 2. The real gateway and the real MCP clients ---------------------------------------------------------
e2e_client_env
[[ -x "${CLAWMCP_E2E_VENV_PYTHON:-}" ]] || e2e_die "no Python mcp SDK venv recorded by e2e/install.sh"

# 3. One seeded gateway for the whole suite -----------------------------------------------------------
e2e_seeded_gateway tools-compat

# 4. The suite ----------------------------------------------------------------------------------------
timeout 900 python3 "$HERE/tools_compat.py" --gateway-env "$GW_ROOT/gateway.env" --clawmcp-bin "$BIN" \
  --sdk-python "$CLAWMCP_E2E_VENV_PYTHON" --artifacts "$TMP/run"
