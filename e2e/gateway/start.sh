#!/usr/bin/env bash
# Start the REAL OpenClaw gateway (installed by install.sh) in the background on 127.0.0.1,
# token auth, in a throwaway state dir, with no model provider, no channels and no plugins.
#
# Usage: e2e/gateway/start.sh [--port N] [--root DIR] [--seed] [--timeout SEC] [--restart] [--with-node] [--tls]
#   --port     gateway port (default: a free port; must be free)
#   --root     harness dir to create (default: mktemp -d /tmp/clawmcp-gateway.XXXXXX); must
#              not hold a previous run
#   --seed     seed one routed conversation (agent:main:main, imessage route, 3 transcript
#              messages, one with an image attachment; see seed.mjs) before the gateway starts
#   --timeout  seconds to wait for readiness (default 180; the gateway takes 8-20 s)
#   --restart  start again the gateway of --root after stop.sh stopped it: same port, config,
#              token and state (a gateway restart, as clients see one)
#   --with-node  also start the REAL headless node host (`openclaw node run --host 127.0.0.1`)
#              beside the gateway, in its own state dir ($ROOT/node-host), as the node
#              "clawmcp-e2e-node-host"; approve its pending command surface (node.pair.approve)
#              and prove it with node.invoke system.which {"bins":["sh"]}. With --restart: the
#              same node host identity again (already approved). stop.sh stops it by PID first.
#   --tls      serve TLS on the same loopback port (gateway.tls with a self-signed certificate
#              for CN/SAN 127.0.0.1 made here with openssl into $ROOT/tls, not the gateway's
#              auto-generated one, so its SHA-256 is known before the gateway starts): the URL is
#              wss://127.0.0.1:PORT, /health is read over https, the node host (--with-node) gets
#              --tls --tls-fingerprint. With --restart: implied when the first run had it.
# Environment: CLAWMCP_GW_PREFIX / CLAWMCP_E2E_CACHE (where install.sh put OpenClaw).
#
# stdout: only KEY=VALUE lines (also written to $ROOT/gateway.env), for `eval` or `source`:
#   CLAWMCP_GW_PID, CLAWMCP_GW_PID_START, CLAWMCP_GW_PORT, CLAWMCP_GW_URL (ws://127.0.0.1:PORT, --tls: wss://),
#   CLAWMCP_GW_HTTP_URL, CLAWMCP_GW_TOKEN_FILE, CLAWMCP_GW_ROOT, CLAWMCP_GW_STATE_DIR,
#   CLAWMCP_GW_LOG, CLAWMCP_GW_NODE, CLAWMCP_GW_OPENCLAW_PKG, CLAWMCP_GW_OPENCLAW_ENTRY,
#   CLAWMCP_GW_OPENCLAW_VERSION, CLAWMCP_GW_SEEDED (0|1), CLAWMCP_GW_SEEDED_SESSION_KEY,
#   CLAWMCP_GW_READY_MS (spawn -> ready); with --with-node also CLAWMCP_GW_NODE_HOST_PID,
#   CLAWMCP_GW_NODE_HOST_PID_START, CLAWMCP_GW_NODE_HOST_ID (its nodeId), CLAWMCP_GW_NODE_HOST_NAME,
#   CLAWMCP_GW_NODE_HOST_LOG, CLAWMCP_GW_NODE_HOST_READY_MS (spawn -> approved and invocable);
#   with --tls also CLAWMCP_GW_TLS_FINGERPRINT (the leaf's SHA-256: 64 lowercase hex digits, no
#   colons, the gateway's own canonical form) and CLAWMCP_GW_TLS_CERT (its PEM); the URLs are
#   wss:// and https://.
# The token is only in the 0600 token file and the 0600 config, never on stdout or argv.
# Readiness: TCP accept, GET /health -> "live", the "[gateway] ready" log line, and every
# listening socket of the gateway's process tree on a loopback address.
# On failure: exits non-zero with the reason and the gateway log tail on stderr, after
# stopping the gateway it started. Stop a running one with: e2e/gateway/stop.sh "$CLAWMCP_GW_ROOT"
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
E2E_LOG_TAG=gateway-start
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

PORT="" ROOT="" SEED=0 TIMEOUT=180 RESTART=0 WITH_NODE=0 TLS=0
while (($#)); do
  case "$1" in
    --port)
      PORT="$2"
      shift 2
      ;;
    --root)
      ROOT="$2"
      shift 2
      ;;
    --seed)
      SEED=1
      shift
      ;;
    --restart)
      RESTART=1
      shift
      ;;
    --with-node)
      WITH_NODE=1
      shift
      ;;
    --tls)
      TLS=1
      shift
      ;;
    --timeout)
      TIMEOUT="$2"
      shift 2
      ;;
    -h | --help)
      e2e_usage
      exit 0
      ;;
    *) e2e_die "unknown argument: $1 (see --help)" ;;
  esac
done
[[ -z "$PORT" || "$PORT" =~ ^[0-9]+$ ]] || e2e_die "--port must be a number"
[[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || e2e_die "--timeout must be a positive number of seconds"
for tool in curl python3 timeout; do
  command -v "$tool" >/dev/null 2>&1 || e2e_die "$tool not found"
done

CACHE="${CLAWMCP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clawmcp-e2e}"
PREFIX="${CLAWMCP_GW_PREFIX:-$CACHE/gateway}"
[[ -f "$PREFIX/gateway.env" ]] || e2e_die "$PREFIX/gateway.env missing; run e2e/gateway/install.sh first"
# shellcheck disable=SC1091
source "$PREFIX/gateway.env"
NODE="$CLAWMCP_GW_NODE" ENTRY="$CLAWMCP_GW_OPENCLAW_ENTRY"
[[ -x "$NODE" && -f "$ENTRY" ]] || e2e_die "node/openclaw missing under $PREFIX; rerun e2e/gateway/install.sh"

port_accepts() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# running PID START: PID is still the process that had START and has not exited. A zombie has
# exited: the gateway is reparented when start.sh returns, and its new parent (here PID 1) may
# reap it only later, so `kill -0` alone would call a stopped gateway "still running".
running() {
  kill -0 "$1" 2>/dev/null && [[ "$(e2e_proc_start "$1")" == "$2" ]] &&
    [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]]
}
now_ms() { date +%s%3N; }

if ((RESTART)); then
  [[ -n "$ROOT" && -f "$ROOT/gateway.env" ]] || e2e_die "--restart needs the --root of an earlier run (no gateway.env there)"
  if [[ -e "$ROOT/gateway.pid" ]]; then
    old_pid="$(cat "$ROOT/gateway.pid")"
    if running "$old_pid" "$(cat "$ROOT/gateway.pid.start" 2>/dev/null)"; then
      e2e_die "$ROOT's gateway (pid $old_pid) still runs; stop it with stop.sh first"
    fi
    rm -f -- "$ROOT/gateway.pid" "$ROOT/gateway.pid.start"
  fi
  if [[ -e "$ROOT/node-host.pid" ]]; then
    old_pid="$(cat "$ROOT/node-host.pid")"
    if running "$old_pid" "$(cat "$ROOT/node-host.pid.start" 2>/dev/null)"; then
      e2e_die "$ROOT's node host (pid $old_pid) still runs; stop it with stop.sh first"
    fi
    rm -f -- "$ROOT/node-host.pid" "$ROOT/node-host.pid.start"
  fi
  ((SEED)) && e2e_die "--restart keeps the state; --seed does not apply"
  PORT="$(sed -n 's/^CLAWMCP_GW_PORT=//p' "$ROOT/gateway.env")"
  # The config still has gateway.tls; the URLs must say so again.
  grep -q '^CLAWMCP_GW_TLS_FINGERPRINT=' "$ROOT/gateway.env" && TLS=1
fi
((TLS)) && e2e_require openssl
[[ -n "$PORT" ]] || PORT="$(e2e_free_port)"
port_accepts "$PORT" && e2e_die "127.0.0.1:$PORT already accepts connections; pick another --port"

[[ -n "$ROOT" ]] || ROOT="$(mktemp -d /tmp/clawmcp-gateway.XXXXXX)"
mkdir -p "$ROOT"
ROOT="$(cd "$ROOT" && pwd)"
[[ -e "$ROOT/gateway.pid" ]] && e2e_die "$ROOT already holds a harness run (gateway.pid exists)"
[[ -e "$ROOT/node-host.pid" ]] && e2e_die "$ROOT already holds a harness run (node-host.pid exists)"
umask 077
STATE="$ROOT/state" HOME_DIR="$ROOT/home" LOGS="$ROOT/logs"
CONFIG="$STATE/openclaw.json" TOKEN_FILE="$ROOT/gateway.token" LOG="$LOGS/gateway.log"
mkdir -p "$STATE" "$HOME_DIR" "$LOGS"
chmod 700 "$ROOT"

if ((RESTART)); then
  [[ -f "$CONFIG" && -f "$TOKEN_FILE" ]] || e2e_die "--restart: $ROOT has no config or token file"
  mv -f "$LOG" "$LOG.before-restart" 2>/dev/null || true
else
TOKEN="$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s' "$TOKEN" >"$TOKEN_FILE"
TLS_JSON=""
if ((TLS)); then
  # Our own certificate, not gateway.tls.autoGenerate: its fingerprint is then known here (and
  # to clients) before the gateway starts, and the SAN names the one address clients dial. It
  # chains to no CA root, which is the point: only a pinned client can accept it.
  mkdir -p "$ROOT/tls"
  openssl req -x509 -newkey rsa:2048 -sha256 -days 30 -nodes -keyout "$ROOT/tls/gateway-key.pem" \
    -out "$ROOT/tls/gateway-cert.pem" -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
    >"$LOGS/openssl.log" 2>&1 || e2e_die "openssl could not make the TLS certificate: $(tail -n 5 "$LOGS/openssl.log")"
  TLS_JSON=",
    \"tls\": { \"enabled\": true, \"autoGenerate\": false, \"certPath\": \"$ROOT/tls/gateway-cert.pem\", \"keyPath\": \"$ROOT/tls/gateway-key.pem\" }"
fi
# The gateway reads its token from the config (gateway.auth.token); the file is for clients.
cat >"$CONFIG" <<JSON
{
  "gateway": {
    "mode": "local",
    "port": $PORT,
    "bind": "loopback",
    "auth": { "mode": "token", "token": "$TOKEN" },
    "tailscale": { "mode": "off" },
    "controlUi": { "enabled": false }$TLS_JSON
  },
  "agents": { "defaults": { "heartbeat": { "every": "0m" } } },
  "plugins": { "enabled": false },
  "logging": { "file": "$LOGS/openclaw.log" }
}
JSON
unset TOKEN
fi

WS_SCHEME=ws HTTP_SCHEME=http TLS_FP="" TLS_CERT="$ROOT/tls/gateway-cert.pem"
CURL_TLS=() RPC_TLS=() NODE_HOST_TLS=()
if ((TLS)); then
  [[ -f "$TLS_CERT" ]] || e2e_die "--tls: $TLS_CERT is missing"
  TLS_FP="$(openssl x509 -in "$TLS_CERT" -noout -fingerprint -sha256 | sed 's/^[^=]*=//; s/://g' | tr 'A-F' 'a-f')"
  [[ "$TLS_FP" =~ ^[0-9a-f]{64}$ ]] || e2e_die "--tls: could not read the SHA-256 of $TLS_CERT (got '$TLS_FP')"
  WS_SCHEME=wss HTTP_SCHEME=https
  # curl trusts exactly this certificate (it is its own CA; the SAN is 127.0.0.1), so "live"
  # also proves the gateway serves our certificate.
  CURL_TLS=(--cacert "$TLS_CERT")
  RPC_TLS=(--tls-fingerprint "$TLS_FP")
  NODE_HOST_TLS=(--tls --tls-fingerprint "$TLS_FP")
fi

# Clean environment: nothing inherited may point OpenClaw at ~/.openclaw or a real gateway.
# NODE_COMPILE_CACHE must stay unset: with it openclaw.mjs re-spawns itself and the PID we
# record would be a launcher, not the gateway. OPENCLAW_NO_RESPAWN=1 for the same reason.
GW_ENV=(
  "PATH=$(dirname "$NODE"):/usr/local/bin:/usr/bin:/bin"
  "LANG=C.UTF-8"
  "HOME=$HOME_DIR" "OPENCLAW_HOME=$HOME_DIR"
  "OPENCLAW_STATE_DIR=$STATE" "OPENCLAW_CONFIG_PATH=$CONFIG"
  "OPENCLAW_OFFLINE=1" "OPENCLAW_NO_AUTO_UPDATE=1" "OPENCLAW_NO_RESPAWN=1" "OPENCLAW_DISABLE_BONJOUR=1"
  "OPENCLAW_SKIP_CHANNELS=1" "OPENCLAW_SKIP_GMAIL_WATCHER=1" "OPENCLAW_SKIP_CRON=1" "OPENCLAW_SKIP_CANVAS_HOST=1"
)

if ((SEED)); then
  e2e_log "seeding one routed conversation into $STATE"
  # The seed prints its result once everything is written, then exits; but about one run in
  # forty, node then hangs in its exit (seen here: the result printed, the process still there
  # two minutes later). So a seed that has printed its result gets 5 s to exit and is then
  # stopped: its work is done (SQLite has committed it; the gateway's open recovers the WAL).
  env -i "${GW_ENV[@]}" "$NODE" "$HERE/seed.mjs" "$CLAWMCP_GW_OPENCLAW_PKG" \
    >"$LOGS/seed.json" 2>"$LOGS/seed.err" </dev/null &
  seed_pid=$! seed_deadline=$((SECONDS + 120)) seed_printed_at="" seed_status=0
  while kill -0 "$seed_pid" 2>/dev/null; do
    if [[ -z "$seed_printed_at" ]] && grep -q '"ok":true' "$LOGS/seed.json"; then
      seed_printed_at=$SECONDS
    fi
    if [[ -n "$seed_printed_at" ]] && ((SECONDS - seed_printed_at >= 5)); then
      e2e_log "the seed printed its result but did not exit within 5 s (node hanging in exit); stopping it"
      kill -KILL "$seed_pid" 2>/dev/null || true
      break
    fi
    if ((SECONDS >= seed_deadline)); then
      kill -KILL "$seed_pid" 2>/dev/null || true
      break
    fi
    sleep 0.1
  done
  wait "$seed_pid" || seed_status=$?
  if ! grep -q '"ok":true' "$LOGS/seed.json"; then
    tail -n 30 "$LOGS/seed.err" >&2
    # 137: stopped after 120 s without a result; any other status is the seed's own.
    e2e_die "seeding failed with exit status $seed_status (stderr above; stdout: $(head -c 300 "$LOGS/seed.json"))"
  fi
  ((seed_status == 0)) || e2e_log "the seed's result is complete; it ended with status $seed_status after writing it"
fi

T0="$(now_ms)"
e2e_log "starting openclaw $CLAWMCP_GW_OPENCLAW_VERSION gateway on 127.0.0.1:$PORT (root $ROOT)"
# setsid: the gateway gets its own session, so a Ctrl-C meant for the caller's script does
# not kill it behind the caller's back; the caller stops it by PID (stop.sh).
(cd "$ROOT" && exec env -i "${GW_ENV[@]}" setsid "$NODE" "$ENTRY" gateway run --port "$PORT" --bind loopback \
  --auth token) >"$LOG" 2>&1 </dev/null &
GW_PID=$!
GW_START="$(e2e_proc_start "$GW_PID")"
echo "$GW_PID" >"$ROOT/gateway.pid"
echo "$GW_START" >"$ROOT/gateway.pid.start"

fail() {
  e2e_log "gateway log tail ($LOG):"
  sed 's/\x1b\[[0-9;]*m//g' "$LOG" | tail -n 40 >&2 || true
  bash "$HERE/stop.sh" "$ROOT" >&2 || true
  e2e_die "$*"
}
alive() { kill -0 "$GW_PID" 2>/dev/null && [[ "$(e2e_proc_start "$GW_PID")" == "$GW_START" ]]; }

deadline=$((SECONDS + TIMEOUT))
# The recorded PID must become the gateway itself (subshell -> env -> setsid -> node, all
# exec in place); if setsid had to fork, stop.sh would signal the wrong process.
until tr '\0' ' ' <"/proc/$GW_PID/cmdline" 2>/dev/null | grep -q -- "openclaw.mjs gateway run"; do
  alive || fail "the gateway exited during startup"
  ((SECONDS < deadline)) || fail "pid $GW_PID never became the gateway process"
  sleep 0.05
done
until port_accepts "$PORT" && curl -fsS -m 5 "${CURL_TLS[@]}" "$HTTP_SCHEME://127.0.0.1:$PORT/health" 2>/dev/null | grep -q '"live"'; do
  alive || fail "the gateway exited during startup"
  ((SECONDS < deadline)) || fail "no live /health on $HTTP_SCHEME://127.0.0.1:$PORT within ${TIMEOUT}s"
  sleep 0.2
done
# "[gateway] ready" comes after the sidecars start; RPCs before it may be refused with 1013.
until sed 's/\x1b\[[0-9;]*m//g' "$LOG" | grep -q '\[gateway\] ready'; do
  alive || fail "the gateway exited during startup"
  ((SECONDS < deadline)) || fail "no '[gateway] ready' log line within ${TIMEOUT}s (the port is up)"
  sleep 0.2
done
T_READY="$(now_ms)"
listening="$(python3 "$HERE/procutil.py" listeners "$GW_PID")" ||
  fail "the gateway listens on a non-loopback address: $(echo "$listening" | tr '\n' ' ')"
e2e_log "ready after $((T_READY - T0)) ms; listening on $(echo "$listening" | tr '\n' ' ')"

NODE_HOST_PID="" NODE_HOST_START="" NODE_HOST_ID="" NODE_HOST_NAME="clawmcp-e2e-node-host"
NODE_HOST_DIR="$ROOT/node-host" NODE_HOST_LOG="$LOGS/node-host.log"
if ((WITH_NODE)); then
  # Its own HOME/state/config (its device identity lives in $NODE_HOST_DIR/state), nothing of
  # the gateway's; the shared token reaches it through the environment, not argv.
  mkdir -p "$NODE_HOST_DIR/home" "$NODE_HOST_DIR/state"
  [[ -f "$NODE_HOST_DIR/state/openclaw.json" ]] ||
    printf '{ "logging": { "file": "%s" } }\n' "$LOGS/node-host-file.log" >"$NODE_HOST_DIR/state/openclaw.json"
  NODE_HOST_ENV=("${GW_ENV[@]:0:2}"
    "HOME=$NODE_HOST_DIR/home" "OPENCLAW_HOME=$NODE_HOST_DIR/home"
    "OPENCLAW_STATE_DIR=$NODE_HOST_DIR/state" "OPENCLAW_CONFIG_PATH=$NODE_HOST_DIR/state/openclaw.json"
    "OPENCLAW_OFFLINE=1" "OPENCLAW_NO_AUTO_UPDATE=1" "OPENCLAW_NO_RESPAWN=1" "OPENCLAW_DISABLE_BONJOUR=1"
    "OPENCLAW_GATEWAY_TOKEN=$(cat "$TOKEN_FILE")")
  node_fail() {
    e2e_log "node host log tail ($NODE_HOST_LOG):"
    sed 's/\x1b\[[0-9;]*m//g' "$NODE_HOST_LOG" | tail -n 30 >&2 || true
    fail "$*"
  }
  rpc() { # METHOD [PARAMS_JSON]: one gateway call as the loopback cli operator; the payload on stdout
    env -i "${GW_ENV[@]:0:2}" timeout 60 "$NODE" "$HERE/gateway_rpc.mjs" --openclaw-pkg "$CLAWMCP_GW_OPENCLAW_PKG" \
      --url "$WS_SCHEME://127.0.0.1:$PORT" "${RPC_TLS[@]}" --token-file "$TOKEN_FILE" --timeout-ms 30000 "$@"
  }
  # node.list entry of ours as "approvalState nodeId pendingRequestId" (only once it is connected).
  node_entry() {
    rpc node.list '{}' 2>/dev/null | python3 -c '
import json, sys
for n in json.load(sys.stdin).get("nodes", []):
    if n.get("displayName") == sys.argv[1] and n.get("connected") and n.get("approvalState") not in (None, "unapproved"):
        print(n.get("approvalState"), n.get("nodeId"), n.get("pendingRequestId") or "-")
' "$NODE_HOST_NAME"
  }
  T_NODE0="$(now_ms)"
  e2e_log "starting the real node host ($NODE_HOST_NAME, state $NODE_HOST_DIR)"
  (cd "$NODE_HOST_DIR" && exec env -i "${NODE_HOST_ENV[@]}" setsid "$NODE" "$ENTRY" node run --host 127.0.0.1 \
    --port "$PORT" "${NODE_HOST_TLS[@]}" --display-name "$NODE_HOST_NAME") >"$NODE_HOST_LOG" 2>&1 </dev/null &
  NODE_HOST_PID=$!
  NODE_HOST_START="$(e2e_proc_start "$NODE_HOST_PID")"
  echo "$NODE_HOST_PID" >"$ROOT/node-host.pid"
  echo "$NODE_HOST_START" >"$ROOT/node-host.pid.start"
  unset 'NODE_HOST_ENV[-1]'
  node_alive() { running "$NODE_HOST_PID" "$NODE_HOST_START"; }
  until tr '\0' ' ' <"/proc/$NODE_HOST_PID/cmdline" 2>/dev/null | grep -q -- "openclaw.mjs node run"; do
    node_alive || node_fail "the node host exited during startup"
    ((SECONDS < deadline)) || node_fail "pid $NODE_HOST_PID never became the node host process"
    sleep 0.05
  done
  entry=""
  until [[ -n "$entry" ]]; do
    node_alive || node_fail "the node host exited before it joined the gateway"
    ((SECONDS < deadline)) || node_fail "the node host never showed up connected in node.list within ${TIMEOUT}s"
    entry="$(node_entry)" || entry=""
    [[ -n "$entry" ]] || sleep 0.25
  done
  read -r state NODE_HOST_ID request <<<"$entry"
  if [[ "$state" != approved ]]; then
    [[ "$request" != - ]] || node_fail "the node host is $state without a pending request id"
    # The device pairing is auto-approved on loopback; its command surface is not.
    rpc node.pair.approve "{\"requestId\":\"$request\"}" >/dev/null || node_fail "node.pair.approve $request failed"
    until [[ "$(node_entry | cut -d' ' -f1)" == approved ]]; do
      node_alive || node_fail "the node host exited during approval"
      ((SECONDS < deadline)) || node_fail "the node host's surface was not approved within ${TIMEOUT}s"
      sleep 0.25
    done
  fi
  # Proof: the gateway can invoke it.
  which="$(rpc node.invoke "{\"nodeId\":\"$NODE_HOST_ID\",\"command\":\"system.which\",\"params\":{\"bins\":[\"sh\"]},\"idempotencyKey\":\"start-$NODE_HOST_START\",\"timeoutMs\":15000}")" ||
    node_fail "node.invoke system.which on the node host failed: $which"
  python3 -c 'import json, sys; p = json.loads(sys.argv[1]); sys.exit(0 if p.get("ok") and "sh" in p["payload"]["bins"] else 1)' "$which" ||
    node_fail "node.invoke system.which answered without bins.sh: $which"
  node_listening="$(python3 "$HERE/procutil.py" listeners "$NODE_HOST_PID")" ||
    node_fail "the node host listens on a non-loopback address: $(echo "$node_listening" | tr '\n' ' ')"
  T_NODE="$(now_ms)"
  e2e_log "node host ${NODE_HOST_ID:0:12}… ($state on join) approved and invocable after $((T_NODE - T_NODE0)) ms"
fi

{
  echo "CLAWMCP_GW_PID=$GW_PID"
  echo "CLAWMCP_GW_PID_START=$GW_START"
  echo "CLAWMCP_GW_PORT=$PORT"
  echo "CLAWMCP_GW_URL=$WS_SCHEME://127.0.0.1:$PORT"
  echo "CLAWMCP_GW_HTTP_URL=$HTTP_SCHEME://127.0.0.1:$PORT"
  if ((TLS)); then
    echo "CLAWMCP_GW_TLS_FINGERPRINT=$TLS_FP"
    echo "CLAWMCP_GW_TLS_CERT=$TLS_CERT"
  fi
  echo "CLAWMCP_GW_TOKEN_FILE=$TOKEN_FILE"
  echo "CLAWMCP_GW_ROOT=$ROOT"
  echo "CLAWMCP_GW_STATE_DIR=$STATE"
  echo "CLAWMCP_GW_LOG=$LOG"
  echo "CLAWMCP_GW_NODE=$NODE"
  echo "CLAWMCP_GW_OPENCLAW_PKG=$CLAWMCP_GW_OPENCLAW_PKG"
  echo "CLAWMCP_GW_OPENCLAW_ENTRY=$ENTRY"
  echo "CLAWMCP_GW_OPENCLAW_VERSION=$CLAWMCP_GW_OPENCLAW_VERSION"
  echo "CLAWMCP_GW_SEEDED=$SEED"
  ((SEED)) && echo "CLAWMCP_GW_SEEDED_SESSION_KEY=agent:main:main"
  echo "CLAWMCP_GW_READY_MS=$((T_READY - T0))"
  if ((WITH_NODE)); then
    echo "CLAWMCP_GW_NODE_HOST_PID=$NODE_HOST_PID"
    echo "CLAWMCP_GW_NODE_HOST_PID_START=$NODE_HOST_START"
    echo "CLAWMCP_GW_NODE_HOST_ID=$NODE_HOST_ID"
    echo "CLAWMCP_GW_NODE_HOST_NAME=$NODE_HOST_NAME"
    echo "CLAWMCP_GW_NODE_HOST_LOG=$NODE_HOST_LOG"
    echo "CLAWMCP_GW_NODE_HOST_READY_MS=$((T_NODE - T_NODE0))"
  fi
} | tee "$ROOT/gateway.env"
