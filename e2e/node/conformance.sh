#!/usr/bin/env bash
# Run the @modelcontextprotocol/conformance server suite against a running `clawmcp node`.
#
# The conformance client cannot send headers, and the node requires a bearer token on
# every request, so the suite talks to e2e/lib/bearer_proxy.py: a loopback-only proxy,
# started and stopped here by PID, that adds the token and forwards everything else as
# sent (Origin and Host included). The product has no auth bypass.
#
# The whole active suite runs; e2e/node/conformance-baseline.yml lists the failures that
# are by design. The run fails on any failure not in the baseline, on a baseline entry that
# now passes, and on the check-level expectations in e2e/lib/conformance_report.py.
#
# Usage: conformance.sh [--markdown FILE]   (FILE: write the CONFORMANCE.md report there)
# Environment: CLAWMCP_E2E_URL, CLAWMCP_E2E_TOKEN_FILE, CLAWMCP_E2E_NODE22,
#   CLAWMCP_E2E_CONFORMANCE, CLAWMCP_E2E_CONFORMANCE_VERSION, CLAWMCP_E2E_ARTIFACTS (optional:
#   where the per-scenario checks.json go; default a temp dir removed on exit).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=conformance
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"
: "${CLAWMCP_E2E_URL:?run through e2e/run.sh}" "${CLAWMCP_E2E_TOKEN_FILE:?}" "${CLAWMCP_E2E_NODE22:?}"
: "${CLAWMCP_E2E_CONFORMANCE:?}"

MARKDOWN=""
[[ "${1:-}" == --markdown ]] && MARKDOWN="$2"

node_port="${CLAWMCP_E2E_URL#http://127.0.0.1:}"
node_port="${node_port%/}"
[[ "$node_port" =~ ^[0-9]+$ ]] || e2e_die "CLAWMCP_E2E_URL must be http://127.0.0.1:PORT/, got $CLAWMCP_E2E_URL"

work="$(mktemp -d)"
out="${CLAWMCP_E2E_ARTIFACTS:-$work}/conformance"
rm -rf -- "$out"
mkdir -p "$out"
proxy_pid="" proxy_start=""
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
  [[ -n "$proxy_pid" ]] && { e2e_stop_pid bearer-proxy "$proxy_pid" "$proxy_start" 5 || true; }
  rm -rf -- "$work"
}
trap cleanup EXIT

python3 "$HERE/../lib/bearer_proxy.py" --upstream-port "$node_port" --token-file "$CLAWMCP_E2E_TOKEN_FILE" \
  >"$work/proxy.out" 2>"$out/proxy.log" &
proxy_pid=$!
proxy_start="$(e2e_proc_start "$proxy_pid")"
for _ in $(seq 1 100); do
  grep -q '^PORT ' "$work/proxy.out" 2>/dev/null && break
  kill -0 "$proxy_pid" 2>/dev/null || e2e_die "bearer proxy exited: $(cat "$out/proxy.log")"
  sleep 0.05
done
proxy_port="$(awk '/^PORT /{print $2}' "$work/proxy.out")"
[[ -n "$proxy_port" ]] || e2e_die "bearer proxy did not report its port"
e2e_log "bearer proxy pid $proxy_pid on 127.0.0.1:$proxy_port -> node 127.0.0.1:$node_port"

rc=0
(cd "$work" && timeout 600 "$CLAWMCP_E2E_NODE22" "$CLAWMCP_E2E_CONFORMANCE" server \
  --url "http://127.0.0.1:$proxy_port/" --expected-failures "$HERE/conformance-baseline.yml" \
  -o "$out") >"$out/conformance.log" 2>&1 || rc=$?
# The runner's own summary and baseline verdict (its per-scenario chatter stays in the log).
sed -n '/=== SUMMARY ===/,$p' "$out/conformance.log"
((rc == 0)) || e2e_log "conformance runner exited $rc (unexpected failure or stale baseline entry; see above)"

report_args=("$out" "$HERE/conformance-baseline.yml")
if [[ -n "$MARKDOWN" ]]; then
  report_args+=(--markdown "$MARKDOWN" --command "bash e2e/run.sh --write-conformance-md"
    --versions "Versions: @modelcontextprotocol/conformance ${CLAWMCP_E2E_CONFORMANCE_VERSION:-?} on Node $("$CLAWMCP_E2E_NODE22" --version); $("${CLAWMCP_E2E_BIN:-false}" --version 2>/dev/null || echo "clawmcp (version unknown)"); run $(date -u +%Y-%m-%dT%H:%MZ).")
fi
python3 "$HERE/../lib/conformance_report.py" "${report_args[@]}" || rc=1

if ((rc == 0)); then
  echo "conformance: 1 passed, 0 failed"
else
  echo "conformance: 0 passed, 1 failed"
fi
exit "$rc"
