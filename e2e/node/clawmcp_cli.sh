#!/usr/bin/env bash
# Drive a running `clawmcp node` with the project's own client, `clawmcp call`, and check
# the CLI contract users script against: exit codes (0 ok, 1 tool/transport error, 2 usage),
# JSON on stdout, `clawmcp token`, the 0600 token file, and a clear refusal when the port
# is already taken.
#
# Environment: CLAWMCP_E2E_BIN, CLAWMCP_E2E_URL, CLAWMCP_E2E_TOKEN_FILE, CLAWMCP_E2E_DATA_DIR.
set -euo pipefail

: "${CLAWMCP_E2E_BIN:?run through e2e/run.sh}" "${CLAWMCP_E2E_URL:?}" "${CLAWMCP_E2E_TOKEN_FILE:?}"
: "${CLAWMCP_E2E_DATA_DIR:?}"
port="${CLAWMCP_E2E_URL#http://127.0.0.1:}"
port="${port%/}"
bin="$CLAWMCP_E2E_BIN"
passed=0 failed=0
out="$(mktemp -d)"
trap 'rm -rf -- "$out"' EXIT

pass() {
  echo "PASS $1"
  passed=$((passed + 1))
}
fail() {
  echo "FAIL $1: $2"
  failed=$((failed + 1))
}
# expect_rc CHECK RUN EXPECTED_EXIT
expect_rc() {
  if [[ "$(rc_of "$2")" == "$3" ]]; then pass "$1"; else fail "$1" "expected exit $3; $(detail "$2")"; fi
}

# clawmcp NAME ARGS...: run the CLI against the e2e node; stdout/stderr/exit code land in $out/NAME.*
clawmcp() {
  local name="$1" rc=0
  shift
  timeout 60 "$bin" "$@" >"$out/$name.out" 2>"$out/$name.err" </dev/null || rc=$?
  echo "$rc" >"$out/$name.rc"
}
rc_of() { cat "$out/$1.rc"; }
detail() { printf 'exit %s; stdout: %s; stderr: %s' "$(rc_of "$1")" "$(head -c 600 "$out/$1.out")" "$(head -c 600 "$out/$1.err")"; }

# json_check NAME PYTHON: assertions over stdout parsed as JSON (bound to `result`).
json_check() {
  python3 - "$out/$1.out" <<PY 2>&1 | tail -n 1
import json, os, sys
result = json.load(open(sys.argv[1]))
$2
PY
}

common=(--port "$port" --data-dir "$CLAWMCP_E2E_DATA_DIR")

clawmcp list-tools call --list-tools "${common[@]}"
if [[ "$(rc_of list-tools)" == 0 ]] && why="$(json_check list-tools '
assert "system.which" in json.dumps(result) and "device.info" in json.dumps(result), "tools missing"
')" && [[ -z "$why" ]]; then
  pass call-list-tools
else
  fail call-list-tools "${why:-$(detail list-tools)}"
fi

clawmcp which call system.which --params '{"bins":["sh"]}' "${common[@]}"
if [[ "$(rc_of which)" == 0 ]] && why="$(json_check which '
text = json.dumps(result)
import re
paths = re.findall(r"\"(/[^\"]*/sh)\"", text)
assert paths and all(os.path.isabs(p) for p in paths), f"no absolute sh path in {text}"
')" && [[ -z "$why" ]]; then
  pass call-system-which
else
  fail call-system-which "${why:-$(detail which)}"
fi

printf '{"bins":["sh"]}' >"$out/params.json"
clawmcp which-file call system.which --params "@$out/params.json" --url "$CLAWMCP_E2E_URL" \
  --token "$(cat "$CLAWMCP_E2E_TOKEN_FILE")"
if [[ "$(rc_of which-file)" == 0 ]] && grep -q '/sh' "$out/which-file.out"; then
  pass call-params-file-url-token
else
  fail call-params-file-url-token "$(detail which-file)"
fi

clawmcp unknown call no.such.tool "${common[@]}"
expect_rc call-unknown-tool-exit-1 unknown 1

clawmcp bad-token call system.which --params '{"bins":["sh"]}' --url "$CLAWMCP_E2E_URL" --token wrong-token
expect_rc call-wrong-token-exit-1 bad-token 1

clawmcp bad-json call system.which --params '{not json' "${common[@]}"
expect_rc call-bad-params-exit-2 bad-json 2

clawmcp token token --data-dir "$CLAWMCP_E2E_DATA_DIR"
if [[ "$(rc_of token)" == 0 && "$(tr -d '\n' <"$out/token.out")" == "$CLAWMCP_E2E_TOKEN_FILE" ]]; then
  pass token-prints-path
else
  fail token-prints-path "expected $CLAWMCP_E2E_TOKEN_FILE; $(detail token)"
fi

mode="$(stat -c %a "$CLAWMCP_E2E_TOKEN_FILE")"
if [[ "$mode" == 600 ]]; then pass token-file-0600; else fail token-file-0600 "mode is $mode"; fi

# A second node on the same port must refuse promptly and say why.
clawmcp port-taken node --port "$port" --data-dir "$CLAWMCP_E2E_DATA_DIR"
if [[ "$(rc_of port-taken)" != 0 && "$(rc_of port-taken)" != 124 ]] && grep -qi "$port" "$out/port-taken.err" &&
  grep -qiE 'in use|already' "$out/port-taken.err"; then
  pass node-port-taken-refused
else
  fail node-port-taken-refused "expected a non-zero exit naming port $port as in use; $(detail port-taken)"
fi

echo "clawmcp-cli: $passed passed, $failed failed"
((failed == 0))
