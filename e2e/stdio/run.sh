#!/usr/bin/env bash
# Clients that cannot speak HTTP to the node, or insist on OAuth (issue 5), with real SDKs:
#   python_stdio.py  the Python `mcp` SDK over stdio, spawning `clawmcp call --stdio`:
#                    the stateless revision (server/discover adopted through the relay), tools/list, a tool call,
#                    progress of a 6 s call, and a cancelled long system.run the node kills
#   ts_oauth.mjs     the TypeScript SDK over HTTP with an OAuth authProvider and a static
#                    bearer header (no discovery when the header works; every discovery probe
#                    answered 404; a wrong token fails without starting a login flow), and the
#                    same SDK over stdio through the relay
#
# Inside e2e/run.sh (CLAWMCP_E2E_URL, CLAWMCP_E2E_TOKEN_FILE, CLAWMCP_E2E_DATA_DIR and
# CLAWMCP_E2E_BIN set) it drives that node. Otherwise it starts its own `clawmcp node`
# (CLAWMCP_E2E_BIN, else `cargo build --release`) on a free 127.0.0.1 port with a throwaway
# data dir whose exec-approvals.json lets system.run run sh and sleep, and stops it by PID.
# About 30 s once installed. Exits non-zero if any check fails; nothing is skipped.
#
# Environment: CLAWMCP_E2E_BIN, CLAWMCP_E2E_CACHE (see e2e/install.sh), CLAWMCP_E2E_URL,
#   CLAWMCP_E2E_TOKEN_FILE, CLAWMCP_E2E_DATA_DIR.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=e2e-stdio
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/node_host.sh
source "$HERE/../lib/node_host.sh"

case "${1:-}" in
  -h | --help)
    e2e_usage
    exit 0
    ;;
  "") ;;
  *) e2e_die "unknown argument: $1 (see --help)" ;;
esac

e2e_require node python3 timeout

e2e_client_env
CLAWMCP_E2E_BIN="$(e2e_clawmcp_bin "${CLAWMCP_E2E_BIN:-}")" || exit 1
export CLAWMCP_E2E_BIN

TMP="$(mktemp -d /tmp/clawmcp-e2e-stdio.XXXXXX)"
finish() {
  local rc=$?
  e2e_stop_owned_node || rc=1
  if ((rc)); then e2e_log "kept $TMP (logs)"; else rm -rf -- "$TMP"; fi
  exit "$rc"
}
trap finish EXIT
e2e_use_or_start_node "$CLAWMCP_E2E_BIN" "$TMP"

failed=()
printf '\n===== e2e stdio: python sdk over call --stdio =====\n'
# Bounded: a hang is a named failure, not a stuck run.
timeout 300 "$CLAWMCP_E2E_VENV_PYTHON" "$HERE/python_stdio.py" || failed+=(python-stdio)
printf '\n===== e2e stdio: ts sdk with an OAuth provider, and over call --stdio =====\n'
timeout 300 node "$HERE/ts_oauth.mjs" || failed+=(ts-oauth)
((${#failed[@]} == 0)) || e2e_die "stdio checks failed: ${failed[*]}"
e2e_log "stdio checks passed: python-stdio ts-oauth"
