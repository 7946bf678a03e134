#!/usr/bin/env bash
# Drive a running `clawmcp node` with @modelcontextprotocol/inspector-cli (the CLI half of
# the MCP Inspector) over HTTP: tools/list and a tools/call of system.which.
#
# Why this exists: the inspector is what developers reach for first. It runs tools/list
# before every tools/call (to coerce --tool-arg types from the schema), so a permissive
# object schema must be enough for it, and it prints results as JSON on stdout.
#
# Environment: CLAWMCP_E2E_URL, CLAWMCP_E2E_TOKEN_FILE, CLAWMCP_E2E_INSPECTOR_CLI,
# CLAWMCP_E2E_INSPECTOR_CWD (see e2e/install.sh: the CLI resolves ../package.json from
# its cwd, so it must run from a directory whose parent has one).
# The token has to be an argv header here (the CLI has no other way); the e2e node's data
# dir and token are thrown away after the run.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${CLAWMCP_E2E_URL:?run through e2e/run.sh}" "${CLAWMCP_E2E_TOKEN_FILE:?}" "${CLAWMCP_E2E_INSPECTOR_CLI:?}"
: "${CLAWMCP_E2E_INSPECTOR_CWD:?}"

passed=0 failed=0
out="$(mktemp -d)"
trap 'rm -rf -- "$out"' EXIT

inspector() { # OUTFILE ARGS... -> inspector-cli exit code
  local outfile="$1"
  shift
  (cd "$CLAWMCP_E2E_INSPECTOR_CWD" && timeout 120 node "$CLAWMCP_E2E_INSPECTOR_CLI" --cli "$CLAWMCP_E2E_URL" \
    --transport http --header "Authorization: Bearer $(cat "$CLAWMCP_E2E_TOKEN_FILE")" "$@" \
    >"$outfile" 2>"$outfile.err")
}

# verdict NAME PYTHON_ASSERTIONS OUTFILE: run assertions over the JSON the CLI printed.
verdict() {
  local name="$1" code="$2" outfile="$3" why
  if why="$(python3 - "$outfile" "$HERE/expectations.json" 2>&1 <<PY
import json, os, sys
result = json.load(open(sys.argv[1]))
expectations = json.load(open(sys.argv[2]))
$code
PY
  )"; then
    echo "PASS $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name: ${why##*$'\n'}"
    failed=$((failed + 1))
  fi
}

run_check() { # NAME ASSERTIONS INSPECTOR_ARGS...
  local name="$1" code="$2"
  shift 2
  if ! inspector "$out/$name.json" "$@"; then
    echo "FAIL $name: inspector-cli exited non-zero; stderr: $(tail -c 2000 "$out/$name.json.err")"
    failed=$((failed + 1))
    return
  fi
  verdict "$name" "$code" "$out/$name.json"
}

run_check tools-list '
tools = {t["name"]: t for t in result["tools"]}
missing = [n for n in expectations["requiredTools"] if n not in tools]
assert not missing, f"missing tools {missing}; got {sorted(tools)}"
for n in expectations["requiredTools"]:
    assert tools[n].get("description", "").strip(), f"{n}: empty description"
    schema = tools[n].get("inputSchema", {})
    assert schema.get("type") == "object", f"{n}: inputSchema {schema}"
' --method tools/list

run_check system-which '
assert result.get("isError") is not True, f"isError: {result}"
payload = json.loads(result["content"][0]["text"])
path = payload["bins"]["sh"]
assert os.path.isabs(path) and os.access(path, os.X_OK), f"not an absolute executable path: {payload}"
' --method tools/call --tool-name system.which --tool-arg 'bins=["sh"]'

echo "inspector-cli: $passed passed, $failed failed"
((failed == 0))
