#!/usr/bin/env bash
# One-paste pairing (`clawmcp node --pair oc-pair://...`) and a TLS-pinned wss:// gateway,
# against the REAL OpenClaw gateway from npm on loopback (node_pairing.py lists every check).
#
#   1. build clawmcp (release), unless CLAWMCP_E2E_BIN names a binary
#   2. install Node 24 + openclaw@2026.9.6 (install.sh; idempotent, cached)
#   3. start two gateways in a throwaway dir: a plain one (ws://, start.sh) that mints the setup
#      codes, and a TLS one (wss://, start.sh --tls, a self-signed certificate only a pin
#      accepts); both, and every clawmcp node of the suite, are stopped by PID on exit
#   4. node_pairing.py: a PASS/FAIL row per check
# Exits non-zero if anything fails; nothing is skipped.
#
# Usage: e2e/gateway/node_pairing.sh [--keep]
#   --keep   keep the temp dir (gateway logs, our nodes' logs and data dirs, node-pairing.json);
#            it is always kept when the suite fails
# Environment: CLAWMCP_E2E_BIN (prebuilt clawmcp), CLAWMCP_E2E_CACHE / CLAWMCP_GW_PREFIX
#   (install dirs), CARGO_TARGET_DIR (honoured by the build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=node-pairing
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

e2e_parse_flags "" "$@"
e2e_require curl python3 timeout npm openssl

BIN="$(e2e_clawmcp_bin "${CLAWMCP_E2E_BIN:-}")" || exit 1
bash "$HERE/install.sh" >/dev/null || e2e_die "installing openclaw failed (see the [gateway-install] lines above)"

TMP="$(mktemp -d /tmp/clawmcp-node-pairing.XXXXXX)"
GW_ROOT="$TMP/gateway" TLS_ROOT="$TMP/gateway-tls"
finish() {
  local rc=$? root
  for root in "$TLS_ROOT" "$GW_ROOT"; do
    if [[ -f "$root/gateway.pid" ]] && ! bash "$HERE/stop.sh" "$root"; then
      e2e_log "the gateway in $root did not stop cleanly"
      rc=1
    fi
  done
  if ((KEEP || rc)); then e2e_log "kept $TMP (gateway logs, our nodes' logs and data dirs)"; else rm -rf -- "$TMP"; fi
  exit "$rc"
}
trap finish EXIT

# One after the other: on two cores two gateways booting at once take longer than in turn.
bash "$HERE/start.sh" --root "$GW_ROOT" >/dev/null || e2e_die "the ws:// gateway did not start (reason above)"
bash "$HERE/start.sh" --tls --root "$TLS_ROOT" >/dev/null || e2e_die "the wss:// gateway did not start (reason above)"

timeout 900 python3 "$HERE/node_pairing.py" --gateway-env "$GW_ROOT/gateway.env" \
  --tls-gateway-env "$TLS_ROOT/gateway.env" --clawmcp-bin "$BIN" --artifacts "$TMP/run"
