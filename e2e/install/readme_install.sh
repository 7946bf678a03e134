#!/usr/bin/env bash
# The README's install and quick start, run as written, from a fresh HOME and install root.
#
# The README's code blocks are this test's input: every ```sh block right after a
# `<!-- readme-test -->` line runs here, in README order, from the repository root, so a
# command that drifts from what the binary does fails CI. Modes, on the marker line:
#   <!-- readme-test -->              run; every command must succeed (bash -euo pipefail)
#   <!-- readme-test: background -->  a long-running command (the node): started in the
#                                     background, waited for until it answers, stopped by PID
#                                     at the end
#   <!-- readme-test: may-fail -->    run; any exit status but "not found" (126/127) and a usage
#                                     error (2) passes: `clawmcp doctor` reports by its status
#
# The environment is a new user's: HOME is an empty directory (so the data dir is the default
# ~/.config/clawmcp in it), `cargo install` puts the binary in $HOME/.cargo/bin (as it does
# for a rustup user) and PATH holds the toolchain, the system and $HOME/.cargo/bin only, so
# `clawmcp` is found only where the README's `cargo install` put it. Only the port differs from
# the README: a free one through OPENCLAW_MCP_PORT, which `clawmcp node` and `clawmcp call`
# both read, so the test never meets a node of the machine on 8765.
#
# What is shared with the caller: the registry cache (CARGO_HOME stays the caller's, with
# CARGO_INSTALL_ROOT=$HOME/.cargo as the install destination) and CARGO_TARGET_DIR. Cargo's
# fingerprint of a registry crate includes the absolute path of its unpacked source under
# CARGO_HOME, so a new CARGO_HOME rebuilt all ~240 dependencies every run (282 s measured);
# with the caller's, the e2e suite's release build is reused and the install relinks.
#
#   bash e2e/install/readme_install.sh [--keep]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KEEP=0
[[ "${1:-}" == --keep ]] && KEEP=1
log() { printf '[readme-install] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

# The blocks, as NUL-separated "mode<TAB>text" records.
extract_blocks() {
  python3 - "$ROOT/README.md" <<'PY'
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
marker = re.compile(r"^<!-- readme-test(?::\s*(background|may-fail))?\s*-->$")
i = 0
while i < len(lines):
    m = marker.match(lines[i])
    if m is None:
        if "readme-test" in lines[i]:
            sys.exit(f"README.md:{i + 1}: malformed readme-test marker: {lines[i]!r}")
        i += 1
        continue
    if i + 1 >= len(lines) or lines[i + 1] != "```sh":
        sys.exit(f"README.md:{i + 1}: a readme-test marker must be followed by a ```sh block")
    end = lines.index("```", i + 2)
    sys.stdout.write(f"{m.group(1) or 'run'}\t" + "\n".join(lines[i + 2:end]) + "\0")
    i = end + 1
PY
}

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
TMP="$CARGO_TARGET_DIR/readme-install"
# Only ever our own directory: a leftover of the previous run, by this fixed name.
rm -rf -- "$TMP"
mkdir -p "$TMP"
NODE_PID=""
finish() {
  local rc=$?
  if [[ -n "$NODE_PID" ]] && kill -0 "$NODE_PID" 2>/dev/null; then
    kill -TERM "$NODE_PID"
    for _ in $(seq 1 70); do kill -0 "$NODE_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$NODE_PID" 2>/dev/null; then
      log "the node did not stop on SIGTERM within 7 s"
      kill -KILL "$NODE_PID"
      rc=1
    fi
    wait "$NODE_PID" 2>/dev/null || true
  fi
  if ((KEEP)); then log "kept $TMP"; else rm -rf -- "$TMP"; fi
  exit "$rc"
}
trap finish EXIT

# The toolchain the caller uses, found before HOME changes (rustup keeps it under the old HOME).
CARGO_BIN_DIR="$(dirname "$(rustup which cargo 2>/dev/null || command -v cargo)")"
export RUSTUP_HOME="${RUSTUP_HOME:-$(rustup show home 2>/dev/null || echo "$HOME/.rustup")}"
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export HOME="$TMP/home"
export CARGO_INSTALL_ROOT="$HOME/.cargo"
export PATH="$CARGO_INSTALL_ROOT/bin:$CARGO_BIN_DIR:/usr/local/bin:/usr/bin:/bin"
unset CLAWMCP_DATA_DIR XDG_CONFIG_HOME XDG_DATA_HOME OPENCLAW_MCP_TOKEN RUST_LOG
mkdir -p "$HOME"
OPENCLAW_MCP_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export OPENCLAW_MCP_PORT
log "HOME=$HOME CARGO_INSTALL_ROOT=$CARGO_INSTALL_ROOT CARGO_HOME=$CARGO_HOME CARGO_TARGET_DIR=$CARGO_TARGET_DIR port $OPENCLAW_MCP_PORT"
if command -v clawmcp >/dev/null; then die "clawmcp is on PATH before the install: $(command -v clawmcp)"; fi

extract_blocks >"$TMP/blocks" || die "README.md: cannot read the readme-test blocks"
blocks=0
installed=0
started=0
cd "$ROOT"
while IFS=$'\t' read -r -d '' mode text; do
  blocks=$((blocks + 1))
  log "block $blocks ($mode):"
  printf '    %s\n' "$text" >&2
  started_at=$SECONDS
  case "$mode" in
    run)
      bash -euo pipefail -c "$text" || die "block $blocks failed (exit $?)"
      ;;
    may-fail)
      status=0
      bash -uo pipefail -c "$text" || status=$?
      case "$status" in
        2 | 126 | 127) die "block $blocks: exit $status (a usage error or a command not found)" ;;
      esac
      log "exit $status (any status but 2, 126 and 127 passes)"
      ;;
    background)
      bash -euo pipefail -c "exec $text" >"$TMP/node.stdout" 2>"$TMP/node.stderr" &
      NODE_PID=$!
      started=1
      # Ready when the README's own client gets the tool list (30 s: a loaded 2-core machine).
      ready=0
      for _ in $(seq 1 300); do
        kill -0 "$NODE_PID" 2>/dev/null || { cat "$TMP/node.stderr" >&2; die "block $blocks exited early"; }
        if clawmcp call --list-tools >/dev/null 2>&1; then ready=1; break; fi
        sleep 0.1
      done
      ((ready)) || { cat "$TMP/node.stderr" >&2; die "block $blocks was not answering after 30 s"; }
      grep -q "serving MCP on http://127.0.0.1:$OPENCLAW_MCP_PORT/" "$TMP/node.stderr" \
        || die "the node did not print its endpoint as the README shows: $(cat "$TMP/node.stderr")"
      grep -q "token file: $HOME/.config/clawmcp/mcp-token.txt" "$TMP/node.stderr" \
        || die "the token file is not the README's default: $(cat "$TMP/node.stderr")"
      ;;
  esac
  log "block $blocks: ok in $((SECONDS - started_at)) s"
  if [[ "$text" == *"cargo install"* ]]; then
    installed=1
    [[ "$(command -v clawmcp)" == "$CARGO_INSTALL_ROOT/bin/clawmcp" ]] \
      || die "after the README's install, clawmcp is $(command -v clawmcp || echo 'not on PATH'), not $CARGO_INSTALL_ROOT/bin/clawmcp"
    expected="clawmcp $(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1) ($(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown))"
    [[ "$(clawmcp --version)" == "$expected" ]] || die "clawmcp --version is '$(clawmcp --version)', not '$expected'"
  fi
done <"$TMP/blocks"

# Removing the markers must not make this test pass by running nothing.
((blocks >= 4)) || die "only $blocks readme-test blocks in README.md"
((installed)) || die "no readme-test block installs clawmcp (cargo install)"
((started)) || die "no readme-test block starts clawmcp node"
kill -0 "$NODE_PID" 2>/dev/null || die "the node died during the quick start: $(cat "$TMP/node.stderr")"
log "PASS: $blocks README blocks"
