#!/usr/bin/env bash
# An agent turn on the REAL OpenClaw gateway (from npm, on loopback) that reaches `clawmcp node`'s
# plugin tool, with a scripted model as the gateway's provider (agent_turn.py lists every check).
#
#   1. build clawmcp (release), unless CLAWMCP_E2E_BIN names a binary
#   2. install Node 24 + openclaw@2026.9.6 (install.sh; idempotent, cached)
#   3. start one seeded gateway (start.sh --seed) in a throwaway dir; stopped by PID on exit
#   4. agent_turn.py: the scripted model (scripted_model.py, in-process, 127.0.0.1) configured as
#      the gateway's provider by hot reload, our node joined and approved, two agent turns
#      (direct tool schemas, then the default Tool Search surface); a PASS/FAIL row per check
# Exits non-zero if anything fails; nothing is skipped. About a minute after the install.
#
# Usage: e2e/gateway/agent_turn.sh [--keep]
#   --keep   keep the temp dir (gateway logs, every model request in run/model-requests.jsonl,
#            our node's log, agent-turn.json); it is always kept when the suite fails
# Environment: CLAWMCP_E2E_BIN (prebuilt clawmcp), CLAWMCP_E2E_CACHE / CLAWMCP_GW_PREFIX
#   (install dirs), CARGO_TARGET_DIR (honoured by the build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=agent-turn
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

e2e_parse_flags "" "$@"
e2e_require curl python3 timeout npm

BIN="$(e2e_clawmcp_bin "${CLAWMCP_E2E_BIN:-}")" || exit 1
e2e_seeded_gateway agent-turn

timeout 600 python3 "$HERE/agent_turn.py" --gateway-env "$GW_ROOT/gateway.env" --clawmcp-bin "$BIN" \
  --artifacts "$TMP/run"
