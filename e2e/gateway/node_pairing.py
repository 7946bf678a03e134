"""`clawmcp node --pair oc-pair://...` (one-paste pairing) and a TLS-pinned `wss://` gateway,
against the REAL OpenClaw gateway: a plain loopback one (ws://) and one started with
`start.sh --tls` (wss://, a self-signed certificate only a pin can accept). One PASS/FAIL row
per check; nothing is skipped; every process is stopped by its PID; every wait is bounded.

The setup codes come from the gateway itself, the way the Control UI's "Node host" pairing
dialog asks for one: `device.pair.setupCode {"bootstrapProfile":"node","includeQr":false}`.
A loopback-bound gateway refuses that ("Gateway is only bound to loopback ..."); the request's
`publicUrl` (ws://127.0.0.1:PORT) makes it issue one (the persistent equivalent is the config
key `plugins.entries.device-pair.config.publicUrl`). A code carries a `tlsFingerprint` only when
its URL comes from the bind or from `gateway.remote.url`; the TLS gateway gets
`gateway.remote = {url: wss://127.0.0.1:PORT, tlsFingerprint}` (hot-reloaded) for that.

Checks, in order (a check whose prerequisite failed fails with the reason):
  setup-code          the ws gateway refuses to mint without a URL, then mints a node-profile code
                      for ws://127.0.0.1:PORT: access node, 10-minute expiry, the decoded payload
                      is {url, bootstrapToken, expiresAtMs} and matches the answer
  pair                `clawmcp node --pair oc-pair://<code>` (no token, no URL): connected and
                      approved with no approve call (device.pair.list approvedVia bootstrap,
                      device.pair.setupStatus names our device), invocable (system.which), its
                      plugin tools published despite the refusal right after the approval;
                      settings.json has GatewayUrl and EnableNodeMode and no bootstrap token, no
                      token file, no pin; device-auth.json is 0600; the bootstrap token is in no file
  reuse-refused       the same (spent) code from another data dir: the gateway refuses it
                      (bootstrap_token_invalid in its log) exactly once, and ours ends node mode
                      as the real node host does: exit 1 within 30 s, its error naming the refused
                      code, why retrying cannot help and the command for a new one (`openclaw qr
                      --setup-code-only`, `clawmcp node --pair <new-code>`); the status left
                      behind names the refusal (lastError); never paired
  hint-spent-code     that status's hint says to make a new setup code (not "is the gateway
                      running? ... keeps retrying": a spent code never works again)
  reconnect-device-token  SIGTERM, then plain `clawmcp node --data-dir D --port P`: connected and
                      approved again with the saved device token only (no token file, no token in
                      the environment, the gateway saw no spent bootstrap token), invocable
  pair-url-override   a fresh code whose url points at a closed port, as a bare code, with
                      --gateway-url: the explicit URL wins (connected, approved, GatewayUrl saved)
  bad-code            malformed codes (not base64url; no bootstrapToken) and expired ones
                      (expiresAtMs in the past, oc-pair:// and bare) are startup errors (exit 1 or
                      2) naming the problem; the data dir is left exactly as it was; the expired
                      code's real bootstrap token never reached the gateway (setupStatus empty)
  operator-remote     the app tools' operator connection as a remote gateway sees it: with
                      `gateway.trustedProxies: ["127.0.0.1"]` (hot reload) and our
                      `--gateway-header 'X-Forwarded-For: 203.0.113.7'` the gateway attributes our
                      sockets to 203.0.113.7 (not direct loopback: a device-less cli client with
                      that header gets its scopes cleared, and our node's own device is held for
                      approval, where a loopback one is approved silently). `app.nodes` then
                      fails naming `openclaw devices approve <requestId>` for the operator device
                      of `<data-dir>/operator/` (a key of its own, not the node's); the gateway's
                      pending request is that device, role operator, with the tools' scopes; after
                      `device.pair.approve` the same call answers the gateway's node list, the
                      paired record has role operator and operator.admin, and the operator dir is
                      0700 with device-identity.json and device-auth.json 0600; the config is put
                      back afterwards
  app-setup-code      an MCP-only `clawmcp node` whose owner set AppConnectionChangesEnabled: a code
                      minted by the gateway, applied by `clawmcp call app.connection.applySetupCode`
                      (upstream's tray E2E through its MCP tool): answered {outcome: Success,
                      connected: true, gatewayUrl}; connected and approved via bootstrap, invocable;
                      GatewayUrl and EnableNodeMode saved; the bootstrap token in no file
  app-shared-token    the same with app.connection.connectSharedToken {gatewayUrl, token}: connected
                      (our status and node.list); the token in <data-dir>/gateway-token.txt (0600),
                      named by GatewayTokenFile, never in settings.json
  tls-pin             TLS gateway: --gateway-url wss:// --gateway-token-file F
                      --gateway-tls-fingerprint <AA:BB:... as openssl prints it>: connected,
                      approved (node.pair.approve), node.invoke system.which answers
  tls-pin-wrong       --tls-fingerprint sha256:<another digest>: never connects, never listed by
                      the gateway, `clawmcp node status --json` names a pin mismatch (lastError)
  hint-pin-mismatch   that status's hint points at the pin (not "is the gateway running?")
  tls-pin-ws          --gateway-tls-fingerprint with a ws:// URL: usage error (exit 2) naming wss
  tls-setup-code      the TLS gateway, told its wss:// URL and pin (gateway.remote), mints a node
                      code carrying {url: wss://127.0.0.1:PORT, tlsFingerprint: <its pin>}
  pair-tls-override   that pinned code, with an explicit wrong
                      --gateway-tls-fingerprint: the flag wins (pin mismatch) and the bootstrap
                      token is never sent (the code stays unused: setupStatus empty)
  pair-tls            the same pinned code alone: connected over wss with the code's pin, approved
                      by bootstrap, GatewayUrl (wss://) and GatewayTlsFingerprint saved
  pair-tls-reconnect  SIGTERM, plain `clawmcp node --data-dir D --port P`: back over wss with the
                      saved pin and device token, approved, invocable
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
WAIT_S = 60
# The gateway's message for a spent/expired/revoked bootstrap token (its log has the reason).
SPENT_REASON = "reason=bootstrap_token_invalid"
# Where operator-remote's sockets claim to come from (TEST-NET-3: public, so no SSH verify).
REMOTE_CLIENT_IP = "203.0.113.7"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


from checks import Failed, expect, report, run_check, wait_for  # noqa: E402  (the script's own directory)


def b64url_json(payload: dict[str, Any]) -> str:
    """A setup code as openclaw encodes one (encodePairingSetupCode): base64url JSON, no padding."""
    return base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_code(code: str) -> dict[str, Any]:
    return json.loads(base64.urlsafe_b64decode(code + "=" * (-len(code) % 4)))


def colon_upper(fingerprint: str) -> str:
    """AB:CD:... — the form `openssl x509 -fingerprint -sha256` prints, what a person pastes."""
    return ":".join(fingerprint[i : i + 2] for i in range(0, len(fingerprint), 2)).upper()


def normalize_fp(value: str | None) -> str:
    return (value or "").strip().lower().removeprefix("sha256:").replace(":", "")


def other_digest(fingerprint: str) -> str:
    """A well-formed SHA-256 that is not the certificate's (last digit changed)."""
    return fingerprint[:-1] + ("0" if fingerprint[-1] != "0" else "1")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def files_containing(root: Path, needle: str) -> list[str]:
    """Files under root whose bytes contain needle (a secret that must not be stored there)."""
    hits = []
    for path in root.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink() and path.stat().st_size < 16 * 1024 * 1024:
                if needle.encode() in path.read_bytes():
                    hits.append(str(path.relative_to(root)))
        except OSError:
            continue
    return hits


def snapshot(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under root with (mode, mtime_ns, bytes): "left exactly as it was" compares these."""
    state = {}
    for path in sorted(root.rglob("*")):
        stat = path.lstat()
        state[str(path.relative_to(root))] = (stat.st_mode, stat.st_mtime_ns,
                                              path.read_bytes() if path.is_file() else b"")
    return state


class Node:
    """One `clawmcp node` process of ours: its data dir, port, log, and how to stop it."""

    def __init__(self, suite: Suite, label: str, data: Path, port: int, argv: list[str]):
        self.label, self.data, self.port = label, data, port
        self.log_path = suite.artifacts / f"clawmcp-{label}.log"
        self.home = suite.artifacts / f"home-{label}"
        self.home.mkdir(parents=True, exist_ok=True)
        self.argv = [suite.bin, "node", "--data-dir", str(data), "--port", str(port), *argv]
        # No OPENCLAW_* variable and a private HOME (no ~/.openclaw): whatever ours knows about
        # the gateway comes from its flags and its data dir.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home), "RUST_LOG": "info"}
        with open(self.log_path, "a") as log:
            log.write(f"\n=== {' '.join(self.argv)}\n")
            log.flush()
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=env)
        suite.nodes.append(self)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def status(self) -> dict[str, Any]:
        done = subprocess.run([self.argv[0], "node", "status", "--json", "--data-dir", str(self.data)],
                              capture_output=True, text=True, timeout=30)
        return json.loads(done.stdout)

    def gateway_status(self) -> dict[str, Any]:
        return self.status().get("gateway") or {}

    def alive(self) -> bool:
        return self.process.poll() is None

    def sigterm(self, timeout_s: float = 10) -> int:
        """SIGTERM and the exit status (Failed if it ignores it for timeout_s)."""
        if self.process.poll() is not None:
            return self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise Failed(f"{self.label} (pid {self.process.pid}) ignored SIGTERM for {timeout_s:.0f} s") from None

    def stop(self) -> str | None:
        """Stop it by its PID whatever happens; a problem is returned as text."""
        if self.process.poll() is not None:
            return None
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
            return None
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            return f"{self.label} (pid {self.process.pid}) ignored SIGTERM for 20 s; killed"

    def crashed(self) -> str | None:
        """Why it looks crashed (died from a signal, Rust's panic exit status, a panic in its log)."""
        code = self.process.poll()
        if code is not None and (code < 0 or code == 101):
            return f"exited with status {code}"
        if "panicked at" in self.log():
            return "panicked (see its log)"
        return None


class Suite:
    def __init__(self, args: argparse.Namespace):
        sys.path.insert(0, str(HERE))
        from harness import Gateway  # noqa: PLC0415  (shared harness, imported at run time)

        self.gateway = Gateway.from_env_file(Path(args.gateway_env))
        self.tls = Gateway.from_env_file(Path(args.tls_gateway_env))
        self.bin = args.clawmcp_bin
        self.artifacts = Path(args.artifacts)
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self.rows: list[tuple[str, bool, str]] = []
        self.done: set[str] = set()
        self.nodes: list[Node] = []
        expect(self.gateway.url.startswith("ws://"), f"--gateway-env is not a plain gateway: {self.gateway.url}")
        expect(self.tls.url.startswith("wss://") and self.tls.tls_fingerprint,
               f"--tls-gateway-env is not a start.sh --tls gateway: {self.tls.url}")
        self.fp = normalize_fp(self.tls.tls_fingerprint)
        # State the checks hand on.
        self.code: dict[str, Any] = {}
        self.paired: Node | None = None
        self.paired_id = ""
        self.tls_code: dict[str, Any] = {}
        self.tls_paired: Node | None = None
        self.tls_paired_id = ""
        self.reuse_status: dict[str, Any] = {}
        self.mismatch_status: dict[str, Any] = {}

    # -- plumbing ------------------------------------------------------------------------------
    def check(self, name: str, body: Callable[[], str | None], needs: tuple[str, ...] = ()) -> None:
        run_check(self.rows, self.done, name, body, needs, timed=True)

    def data_dir(self, label: str) -> Path:
        path = self.artifacts / f"data-{label}"
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path

    def mint(self, gateway: Any, **params: Any) -> dict[str, Any]:
        """A node setup code from the gateway, as the Control UI's "Node host" dialog asks for it."""
        answer = gateway.rpc("device.pair.setupCode", {"bootstrapProfile": "node", "includeQr": False, **params})
        answer["payload"] = decode_code(answer["setupCode"])
        return answer

    def setup_status(self, gateway: Any, setup_id: str) -> dict[str, Any]:
        return gateway.rpc("device.pair.setupStatus", {"setupId": setup_id})

    def node_entry(self, gateway: Any, *, name: str | None = None, node_id: str | None = None) -> dict[str, Any] | None:
        for node in gateway.rpc("node.list", {}).get("nodes", []):
            if (name and node.get("displayName") == name) or (node_id and node.get("nodeId") == node_id):
                return node
        return None

    def device_entry(self, gateway: Any, device_id: str) -> dict[str, Any] | None:
        listed = gateway.rpc("device.pair.list", {})
        return next((d for d in listed.get("paired", []) if d.get("deviceId") == device_id), None)

    def invoke_which(self, gateway: Any, node_id: str) -> dict[str, Any]:
        answer = gateway.rpc("node.invoke", {"nodeId": node_id, "command": "system.which", "params": {"bins": ["sh"]},
                                             "idempotencyKey": str(uuid.uuid4()), "timeoutMs": 15000}, timeout_s=60)
        expect(answer.get("ok") is True and "sh" in (answer.get("payload") or {}).get("bins", {}),
               f"node.invoke system.which answered {json.dumps(answer)[:400]}")
        return answer

    def gateway_log(self, gateway: Any) -> str:
        return ANSI.sub("", gateway.log.read_text("utf-8", "replace"))

    def settings(self, data: Path) -> dict[str, Any]:
        path = data / "settings.json"
        expect(path.exists(), f"no settings.json in {data}: {sorted(p.name for p in data.iterdir())}")
        return json.loads(path.read_text())

    def device_auth_private(self, data: Path) -> str:
        path = data / "device-auth.json"
        expect(path.exists(), f"no device-auth.json in {data}: {sorted(p.name for p in data.iterdir())}")
        mode = path.stat().st_mode & 0o777
        expect(mode == 0o600, f"device-auth.json is {oct(mode)}, want 0o600")
        return oct(mode)

    def wait_paired(self, node: Node, gateway: Any, what: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Our status connected + approved and the gateway's node.list agreeing: (status, entry)."""
        def probe() -> dict[str, Any] | bool:
            expect(node.alive(), f"{node.label} exited {node.process.returncode}: {node.log()[-1500:]}")
            status = node.gateway_status()
            return status.get("state") == "connected" and status.get("pairing") == "approved" and status

        try:
            status = wait_for(f"{what}: our status connected + approved", probe)
        except Failed as err:
            entry = self.node_entry(gateway, node_id=node.gateway_status().get("nodeId") or "-")
            raise Failed(f"{err}; the gateway's node.list entry: {json.dumps(entry)[:600]}") from None
        entry = wait_for(f"{what}: node.list approved + connected",
                         lambda: (e := self.node_entry(gateway, node_id=status["nodeId"])) and e.get("connected")
                         and e.get("approvalState") == "approved" and e)
        return status, entry

    def expect_no_secret(self, roots: list[Path], secret: str, what: str) -> None:
        for root in roots:
            hits = files_containing(root, secret)
            expect(not hits, f"{what} is stored in {root}: {hits}")

    def run_startup_error(self, label: str, data: Path, argv: list[str]) -> tuple[int, str]:
        """A `clawmcp node` start that must fail at once: (exit status, its output)."""
        home = self.artifacts / f"home-{label}"
        home.mkdir(parents=True, exist_ok=True)
        port = free_port()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "RUST_LOG": "info"}
        try:
            done = subprocess.run([self.bin, "node", "--data-dir", str(data), "--port", str(port), *argv],
                                  capture_output=True, text=True, timeout=30, env=env, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise Failed(f"{label}: still running after 30 s instead of failing at startup (killed)") from None
        output = (done.stderr + done.stdout).strip()
        with open(self.artifacts / f"clawmcp-{label}.log", "w") as log:
            log.write(f"exit {done.returncode}\n{output}\n")
        with socket.socket() as probe:
            expect(probe.connect_ex(("127.0.0.1", port)) != 0, f"{label}: port {port} is listening after the error")
        return done.returncode, output

    # -- checks --------------------------------------------------------------------------------
    def setup_code(self) -> str:
        try:
            refused = self.gateway.rpc("device.pair.setupCode", {"bootstrapProfile": "node", "includeQr": False})
        except RuntimeError as err:
            refused = str(err)
        expect("only bound to loopback" in str(refused),
               f"without a URL a loopback gateway should refuse to mint a code; got {str(refused)[:400]}")
        minted_at = int(time.time() * 1000)
        code = self.mint(self.gateway, publicUrl=self.gateway.url)
        payload = code["payload"]
        expect(code.get("access") == "node" and code.get("urlSource") == "request.publicUrl"
               and code.get("gatewayUrl") == self.gateway.url, f"setupCode answered {json.dumps(code)[:600]}")
        expect(set(payload) == {"url", "bootstrapToken", "expiresAtMs"}, f"decoded payload keys {sorted(payload)}")
        expect(payload["url"] == self.gateway.url and payload["expiresAtMs"] == code["expiresAtMs"], f"{payload}")
        ttl_s = (payload["expiresAtMs"] - minted_at) / 1000
        expect(540 <= ttl_s <= 610, f"the code expires in {ttl_s:.0f} s, want ~600")
        expect(len(payload["bootstrapToken"]) >= 32, "a short bootstrap token")
        self.code = code
        return (f"refused without a URL ('only bound to loopback'); with publicUrl {self.gateway.url}: access node, "
                f"expires in {ttl_s:.0f} s, payload {{url, bootstrapToken, expiresAtMs}}")

    def pair(self) -> str:
        data = self.data_dir("paired")
        node = Node(self, "paired", data, free_port(), ["--pair", f"oc-pair://{self.code['setupCode']}",
                                                        "--name", "clawmcp-e2e-paired"])
        self.paired = node
        # Nobody approves anything here: the bootstrap enrollment must do it.
        status, entry = self.wait_paired(node, self.gateway, "--pair")
        self.paired_id = status["nodeId"]
        expect(status.get("url") == self.gateway.url, f"status url {status.get('url')}")
        expect("system.which" in (entry.get("commands") or []), f"approved commands {entry.get('commands')}")
        device = self.device_entry(self.gateway, self.paired_id)
        expect(device is not None, f"device {self.paired_id} not in device.pair.list")
        expect(device.get("approvedVia") == "bootstrap" and device.get("roles") == ["node"] and device.get("scopes") == [],
               f"device.pair.list: approvedVia {device.get('approvedVia')}, roles {device.get('roles')}, "
               f"scopes {device.get('scopes')}")
        completion = (self.setup_status(self.gateway, self.code["setupId"]).get("completion") or {})
        expect(completion.get("deviceId") == self.paired_id, f"device.pair.setupStatus: {completion}")
        self.invoke_which(self.gateway, self.paired_id)
        # Right after a bootstrap approval the gateway refuses node.pluginTools.update once
        # (UNAVAILABLE "node pairing changed before request dispatch"); ours must offer them again.
        tools = wait_for("our plugin tools in node.list after the bootstrap approval",
                         lambda: [t.get("name") for t in (self.node_entry(self.gateway, node_id=self.paired_id) or {})
                                  .get("nodePluginTools") or []], 30)
        expect("device_info" in tools, f"nodePluginTools {tools}")
        settings = self.settings(data)
        expect(settings.get("GatewayUrl") == self.gateway.url and settings.get("EnableNodeMode") is True,
               f"settings.json {settings}")
        for key in ("GatewayTokenFile", "GatewayPasswordFile", "GatewayTlsFingerprint"):
            expect(key not in settings, f"settings.json has {key} after a ws:// code without a pin: {settings}")
        expect("bootstrap" not in json.dumps(settings).lower(), f"settings.json mentions a bootstrap token: {settings}")
        mode = self.device_auth_private(data)
        self.expect_no_secret([data, node.home], self.code["payload"]["bootstrapToken"], "the bootstrap token")
        self.expect_no_secret([data, node.home], self.gateway.token_file.read_text().strip(), "the gateway's shared token")
        return (f"node {self.paired_id[:12]}… approved via bootstrap (no approve call), invocable, "
                f"{len(tools)} plugin tools published; settings "
                f"{json.dumps(settings, sort_keys=True)}; device-auth.json {mode}")

    def reuse_refused(self) -> str:
        name = "clawmcp-e2e-reuse"
        log_before = len(self.gateway_log(self.gateway))
        node = Node(self, "reuse", self.data_dir("reuse"), free_port(),
                    ["--pair", f"oc-pair://{self.code['setupCode']}", "--name", name])
        try:
            marker = f"client={name} "
            wait_for("the gateway to refuse the spent code",
                     lambda: any(marker in line and SPENT_REASON in line
                                 for line in self.gateway_log(self.gateway)[log_before:].splitlines()), 30)
            first_refusal = time.monotonic()

            def reported() -> dict[str, Any] | bool:
                status = node.gateway_status()
                said = f"{status.get('lastError') or ''} {status.get('hint') or ''}".lower()
                return ("setup code" in said or "bootstrap" in said) and status

            try:
                status = wait_for("our status to name the refused setup code", reported, 30)
            except Failed as err:
                raise Failed(f"{err}; alive {node.alive()}, log tail: {node.log()[-800:]}") from None
            expect(status.get("state") != "connected", f"status says connected with a spent code: {status}")
            self.reuse_status = status
            # Watch it a little longer: it must neither crash nor offer the spent code again.
            time.sleep(max(0.0, 10 - (time.monotonic() - first_refusal)))
            crashed = node.crashed()
            expect(crashed is None, f"ours {crashed}")
            attempts = sum(1 for line in self.gateway_log(self.gateway)[log_before:].splitlines()
                           if marker in line and SPENT_REASON in line)
            entry = self.node_entry(self.gateway, name=name)
            expect(entry is None or (not entry.get("connected") and entry.get("approvalState") != "approved"),
                   f"the gateway lists the reuse node: {entry}")
            expect(attempts == 1, f"{attempts} refused attempts with the spent code (it is offered once, then node "
                                  f"mode ends)")
            # A spent code never works again: node mode ends, as the real node host exits.
            try:
                code = node.process.wait(timeout=max(1.0, 30 - (time.monotonic() - first_refusal)))
            except subprocess.TimeoutExpired:
                raise Failed(f"ours still runs 30 s after the gateway refused the spent code; log tail: "
                             f"{node.log()[-800:]}") from None
            expect(code == 1, f"ours exited {code}, want 1")
            said = node.log()
            for words in ("refused the setup code", "openclaw qr --setup-code-only", "clawmcp node --pair <new-code>"):
                expect(words in said, f"our error does not say {words!r}: {said[-800:]}")
            error = next((line for line in said.splitlines() if "gateway node mode ended" in line), "")
            return (f"gateway: bootstrap_token_invalid ×{attempts}; ours exited {code}: {error[:200]!r}")
        finally:
            node.stop()

    def set_trusted_proxies(self, proxies: list[str] | None) -> str:
        """Writes (or removes) gateway.trustedProxies in the ws gateway's config and waits for the
        hot reload that applies it."""
        config_path = self.gateway.root / "state" / "openclaw.json"
        log = self.gateway.log
        applied_before = self.gateway_log(self.gateway).count("config hot reload applied")
        config = json.loads(config_path.read_text())
        if proxies is None:
            config.get("gateway", {}).pop("trustedProxies", None)
        else:
            config.setdefault("gateway", {})["trustedProxies"] = proxies
        staged = config_path.with_suffix(".json.e2e-tmp")
        staged.write_text(json.dumps(config, indent=2) + "\n")
        staged.chmod(0o600)
        os.replace(staged, config_path)

        def applied() -> str | None:
            lines = [line for line in ANSI.sub("", log.read_text("utf-8", "replace")).splitlines()
                     if "config hot reload applied" in line]
            return next((line for line in lines[applied_before:] if "gateway.trustedProxies" in line), None)

        return wait_for("the gateway to hot-reload gateway.trustedProxies", applied, timeout_s=30)

    def operator_remote(self) -> str:
        self.set_trusted_proxies(["127.0.0.1"])
        try:
            return self.operator_remote_checks()
        finally:
            self.set_trusted_proxies(None)

    def operator_remote_checks(self) -> str:
        # What the device key fixes: the same socket without one (the device-less `cli` client
        # the app tools used to be) connects, but with its scopes cleared.
        try:
            self.gateway.rpc("node.list", {}, forwarded_for=REMOTE_CLIENT_IP)
            raise Failed("a device-less cli client attributed to a remote address kept operator.admin")
        except RuntimeError as err:
            expect("without operator.admin" in str(err), f"the device-less remote client: {str(err)[:400]}")
        data = self.data_dir("remote-operator")
        token_file = self.gateway.token_file
        node = Node(self, "remote-operator", data, free_port(),
                    ["--gateway-url", self.gateway.url, "--gateway-token-file", str(token_file),
                     "--gateway-header", f"X-Forwarded-For: {REMOTE_CLIENT_IP}", "--name", "clawmcp-e2e-remote-op"])
        try:
            # Remote, not direct loopback: the gateway holds our node's own fresh device too (on
            # direct loopback it is approved silently, as the pair check shows).
            held = wait_for("the gateway to hold our node's device (remote: no silent pairing)",
                            lambda: (s := node.gateway_status()).get("pairing") == "device-pending" and s, 60)
            node_id = held.get("nodeId") or ""

            def call(tool: str) -> subprocess.CompletedProcess[str]:
                return subprocess.run([self.bin, "call", tool, "--port", str(node.port), "--data-dir", str(data)],
                                      capture_output=True, text=True, timeout=60)

            wait_for("our MCP listener", lambda: (data / "mcp-token.txt").exists(), 30)
            refused = call("app.nodes")
            said = refused.stdout + refused.stderr
            expect(refused.returncode != 0, f"app.nodes succeeded before the operator device was approved: {said[:400]}")
            match = re.search(r"openclaw devices approve ([0-9a-f-]{8,})", said)
            expect(match is not None and "operator device" in said,
                   f"app.nodes does not name `openclaw devices approve <requestId>`: {said[-600:]}")
            request_id = match.group(1)
            identity_path = data / "operator" / "device-identity.json"
            expect(identity_path.exists(), f"no operator identity in {data / 'operator'}")
            operator_id = json.loads(identity_path.read_text())["deviceId"]
            expect(operator_id != node_id, "the operator connection uses the node's key")
            pending = self.gateway.rpc("device.pair.list", {}).get("pending", [])
            entry = next((p for p in pending if p.get("requestId") == request_id), None)
            expect(entry is not None and entry.get("deviceId") == operator_id and entry.get("role") == "operator",
                   f"the gateway's pending request {request_id}: {json.dumps(entry)[:400]}")
            expect("operator.admin" in (entry.get("scopes") or []), f"requested scopes {entry.get('scopes')}")
            self.gateway.rpc("device.pair.approve", {"requestId": request_id})
            answered = call("app.nodes")
            expect(answered.returncode == 0, f"app.nodes after the approval exited {answered.returncode}: "
                                             f"{(answered.stdout + answered.stderr)[-600:]}")
            nodes = json.loads(answered.stdout).get("nodes")
            expect(isinstance(nodes, list), f"app.nodes answered {answered.stdout[:400]}")
            paired = self.device_entry(self.gateway, operator_id)
            expect(paired is not None and "operator" in (paired.get("roles") or [paired.get("role")])
                   and "operator.admin" in (paired.get("scopes") or []),
                   f"device.pair.list paired entry: {json.dumps(paired)[:400]}")
            modes = {name: oct(path.stat().st_mode & 0o777) for name, path in
                     (("operator/", data / "operator"), ("device-identity.json", identity_path),
                      ("device-auth.json", data / "operator" / "device-auth.json"))}
            expect(modes == {"operator/": "0o700", "device-identity.json": "0o600", "device-auth.json": "0o600"},
                   f"operator state modes {modes}")
            expect(f"operator {self.gateway.url}" in (data / "operator" / "device-auth.json").read_text(),
                   "no operator device token kept")
            return (f"device-less cli from {REMOTE_CLIENT_IP}: scopes cleared; "
                    f"node held (device-pending) as from {REMOTE_CLIENT_IP}; operator device {operator_id[:12]}… "
                    f"held as {request_id[:8]}… (role operator, scopes {entry.get('scopes')}), approved, app.nodes "
                    f"answered {len(nodes)} nodes; modes {modes}")
        finally:
            node.stop()

    def app_call(self, node: Node, tool: str, params: dict[str, Any]) -> dict[str, Any]:
        """`clawmcp call TOOL --params` against `node`'s MCP listener: its JSON answer, or Failed."""
        wait_for(f"{node.label}: our MCP listener", lambda: (node.data / "mcp-token.txt").exists(), 30)
        done = subprocess.run([self.bin, "call", tool, "--port", str(node.port), "--data-dir", str(node.data),
                               "--params", json.dumps(params)], capture_output=True, text=True, timeout=60)
        expect(done.returncode == 0, f"{tool} exited {done.returncode}: {(done.stdout + done.stderr)[-800:]}")
        return json.loads(done.stdout)

    def app_node(self, label: str) -> Node:
        """An MCP-only node of ours whose owner lets local clients move it to a gateway."""
        data = self.data_dir(label)
        settings = data / "settings.json"
        settings.write_text(json.dumps({"AppConnectionChangesEnabled": True}) + "\n")
        settings.chmod(0o600)
        # No gateway flag at all (even --name turns node mode on): it starts serving MCP only.
        return Node(self, label, data, free_port(), [])

    def app_setup_code(self) -> str:
        # Upstream's tray E2E (RealGateway_QrSetupCodeFlow_ReconnectsThroughTrayMcp) as ours: a
        # running MCP-only node, a code minted by the real gateway, applied through the MCP tool.
        node = self.app_node("app-setup-code")
        code = self.mint(self.gateway, publicUrl=self.gateway.url)
        answer = self.app_call(node, "app.connection.applySetupCode", {"setupCode": f"oc-pair://{code['setupCode']}"})
        expect(answer.get("outcome") == "Success" and answer.get("connected") is True
               and answer.get("gatewayUrl") == self.gateway.url, f"applySetupCode answered {json.dumps(answer)}")
        status, entry = self.wait_paired(node, self.gateway, "applySetupCode")
        self.invoke_which(self.gateway, status["nodeId"])
        settings = self.settings(node.data)
        expect(settings.get("GatewayUrl") == self.gateway.url and settings.get("EnableNodeMode") is True,
               f"settings.json {settings}")
        self.expect_no_secret([node.data, node.home], code["payload"]["bootstrapToken"], "the bootstrap token")
        return (f"answered {json.dumps(answer, sort_keys=True)}; node {status['nodeId'][:12]}… approved via "
                f"bootstrap and invocable; settings {json.dumps(settings, sort_keys=True)}")

    def app_shared_token(self) -> str:
        node = self.app_node("app-shared-token")
        token = self.gateway.token_file.read_text().strip()
        answer = self.app_call(node, "app.connection.connectSharedToken", {"gatewayUrl": self.gateway.url, "token": token})
        expect(answer.get("outcome") == "Success" and answer.get("connected") is True, f"answered {json.dumps(answer)}")
        status = wait_for("connectSharedToken: our status connected",
                          lambda: (s := node.gateway_status()).get("state") == "connected" and s)
        entry = wait_for("connectSharedToken: node.list connected",
                         lambda: (e := self.node_entry(self.gateway, node_id=status["nodeId"])) and e.get("connected")
                         and e)
        settings = self.settings(node.data)
        token_file = node.data / "gateway-token.txt"
        expect(settings.get("GatewayTokenFile") == str(token_file), f"settings.json {settings}")
        mode = oct(token_file.stat().st_mode & 0o777)
        expect(mode == "0o600" and token_file.read_text() == token, f"{token_file}: mode {mode}")
        expect(token not in (node.data / "settings.json").read_text(), "the shared token is in settings.json")
        return (f"answered {json.dumps(answer, sort_keys=True)}; node.list: connected, approvalState "
                f"{entry.get('approvalState')}; token in gateway-token.txt ({mode}), not in settings.json")

    def reconnect_device_token(self) -> str:
        assert self.paired is not None
        old = self.paired
        code = old.sigterm()
        expect(code == 0, f"ours exited {code} on SIGTERM")
        wait_for("node.list to show ours disconnected",
                 lambda: (self.node_entry(self.gateway, node_id=self.paired_id) or {}).get("connected") is False, 30)
        log_before = len(self.gateway_log(self.gateway))
        # Plain: no URL, no token, no code; what it knows is in the data dir.
        node = Node(self, "reconnect", old.data, old.port, [])
        status, _ = self.wait_paired(node, self.gateway, "plain restart")
        expect(status.get("nodeId") == self.paired_id, f"nodeId {status.get('nodeId')} vs {self.paired_id}")
        expect(status.get("url") == self.gateway.url, f"status url {status.get('url')}")
        self.invoke_which(self.gateway, self.paired_id)
        refused = [line for line in self.gateway_log(self.gateway)[log_before:].splitlines()
                   if "[ws] unauthorized" in line]
        expect(not refused, f"the gateway refused connects during the restart: {refused[:2]}")
        self.expect_no_secret([old.data, node.home], self.gateway.token_file.read_text().strip(),
                              "the gateway's shared token")
        settings = self.settings(old.data)
        expect("GatewayTokenFile" not in settings and "GatewayPasswordFile" not in settings, f"settings {settings}")
        self.paired = node
        return f"back with the device token alone, approved, invocable; no refused connect in the gateway log"

    def pair_url_override(self) -> str:
        code = self.mint(self.gateway, publicUrl=self.gateway.url)
        closed = free_port()  # nothing listens there: only the explicit URL can work
        bare = b64url_json(code["payload"] | {"url": f"ws://127.0.0.1:{closed}"})
        data = self.data_dir("override")
        node = Node(self, "override", data, free_port(), ["--pair", bare, "--gateway-url", self.gateway.url,
                                                          "--name", "clawmcp-e2e-override"])
        try:
            status, _ = self.wait_paired(node, self.gateway, "--pair <bare code> --gateway-url")
            expect(status.get("url") == self.gateway.url, f"status url {status.get('url')}")
            device = self.device_entry(self.gateway, status["nodeId"]) or {}
            expect(device.get("approvedVia") == "bootstrap", f"approvedVia {device.get('approvedVia')}")
            settings = self.settings(data)
            expect(settings.get("GatewayUrl") == self.gateway.url, f"GatewayUrl {settings.get('GatewayUrl')}")
            return f"the code said ws://127.0.0.1:{closed}; --gateway-url won (bare code, approved via bootstrap)"
        finally:
            node.stop()

    def bad_code(self) -> str:
        unused = self.mint(self.gateway, publicUrl=self.gateway.url)
        expired = b64url_json(unused["payload"] | {"expiresAtMs": int(time.time() * 1000) - 60_000})
        # What the message must name: the setup code (wording free), and for an expired one that
        # it expired (and not, say, a connection failure).
        cases = [
            ("malformed", "oc-pair://not*base64url!", "setup code", None),
            ("no-token", "oc-pair://" + b64url_json({"url": self.gateway.url}), "setup code", None),
            ("expired", f"oc-pair://{expired}", "setup code", "expired"),
            ("expired-bare", expired, "setup code", "expired"),
        ]
        data = self.data_dir("bad-code")
        (data / "settings.json").write_text('{\n  "NodeDisplayName": "clawmcp-e2e-bad-code"\n}\n')
        (data / "settings.json").chmod(0o600)
        before = snapshot(data)
        seen, wrong = [], []
        for label, code, subject, problem in cases:
            try:
                status, output = self.run_startup_error(f"bad-code-{label}", data, ["--pair", code])
            except Failed as err:
                wrong.append(str(err))
                continue
            lower = output.lower()
            line = output.splitlines()[-1][:160] if output else ""
            if status not in (1, 2):
                wrong.append(f"{label}: exit status {status} (want 1 or 2): {output[-600:]!r}")
            elif subject not in lower or (problem and problem not in lower):
                wrong.append(f"{label}: the error does not say {subject!r}{f' and {problem!r}' if problem else ''}: "
                             f"{output[-600:]!r}")
            elif "panicked" in lower:
                wrong.append(f"{label}: {output[-600:]!r}")
            else:
                seen.append(f"{label} -> {status} {line!r}")
            after = snapshot(data)
            if after != before:
                wrong.append(f"{label}: the data dir changed: {sorted(set(after) ^ set(before)) or 'contents'}")
                before = after
        if self.setup_status(self.gateway, unused["setupId"]) != {}:
            wrong.append("the expired code's bootstrap token reached the gateway (setupStatus not empty)")
        expect(not wrong, "; ".join(wrong) + (f" (fine: {'; '.join(seen)})" if seen else ""))
        return "; ".join(seen) + "; data dir unchanged; the expired code's token never sent"

    def tls_pin(self) -> str:
        name = "clawmcp-e2e-tls"
        node = Node(self, "tls", self.data_dir("tls"), free_port(),
                    ["--gateway-url", self.tls.url, "--gateway-token-file", str(self.tls.token_file),
                     "--gateway-tls-fingerprint", colon_upper(self.fp), "--name", name])
        try:
            entry = wait_for("ours over wss in node.list",
                             lambda: (e := self.node_entry(self.tls, name=name)) and e.get("connected") and e, WAIT_S)
            if entry.get("approvalState") != "approved":
                request = entry.get("pendingRequestId")
                expect(request, f"pending without a request id: {entry}")
                self.tls.rpc("node.pair.approve", {"requestId": request})
            status, entry = self.wait_paired(node, self.tls, "wss with the right pin")
            self.invoke_which(self.tls, status["nodeId"])
            saved = self.settings(node.data).get("GatewayTlsFingerprint")
            return (f"{self.tls.url} pinned {colon_upper(self.fp)[:17]}…: connected, approved, system.which answered; "
                    f"GatewayTlsFingerprint saved {saved!r}")
        finally:
            node.stop()

    def expect_pin_mismatch(self, node: Node, gateway: Any, name: str) -> dict[str, Any]:
        def reported() -> dict[str, Any] | bool:
            expect(node.alive() or node.crashed() is None, f"ours {node.crashed()}")
            status = node.gateway_status()
            said = f"{status.get('lastError') or ''} {status.get('hint') or ''}".lower()
            return ("pin" in said or "fingerprint" in said) and "mismatch" in said and status

        try:
            status = wait_for("our status to report a TLS pin mismatch", reported, 30)
        except Failed as err:
            raise Failed(f"{err}; log tail: {node.log()[-800:]}") from None
        expect(status.get("state") != "connected", f"connected despite the wrong pin: {status}")
        time.sleep(3)  # a retry or two later, it must still be outside
        entry = self.node_entry(gateway, name=name)
        expect(entry is None, f"the gateway lists a node that pinned the wrong certificate: {entry}")
        crashed = node.crashed()
        expect(crashed is None, f"ours {crashed}")
        return status

    def tls_pin_wrong(self) -> str:
        name = "clawmcp-e2e-tls-wrong"
        node = Node(self, "tls-wrong", self.data_dir("tls-wrong"), free_port(),
                    ["--gateway-url", self.tls.url, "--gateway-token-file", str(self.tls.token_file),
                     "--tls-fingerprint", f"sha256:{other_digest(self.fp)}", "--name", name])
        try:
            status = self.expect_pin_mismatch(node, self.tls, name)
            self.mismatch_status = status
            return f"never connected; lastError {status.get('lastError')!r}"
        finally:
            node.stop()

    def tls_pin_ws(self) -> str:
        data = self.artifacts / "data-tls-ws"  # not created: a usage error touches nothing
        status, output = self.run_startup_error("tls-ws", data, [
            "--gateway-url", self.gateway.url, "--gateway-token-file", str(self.gateway.token_file),
            "--gateway-tls-fingerprint", self.fp])
        expect(status == 2, f"exit status {status} (want 2, a usage error): {output[-600:]}")
        expect("wss" in output.lower(), f"the error does not say the pin needs wss://: {output[-600:]!r}")
        expect(not (data / "settings.json").exists(), "settings.json was written by a usage error")
        return f"exit 2: {output.splitlines()[-1][:160]!r}"

    def hint_spent_code(self) -> str:
        # The hint is what an operator acts on: a spent code needs a new code, and retrying (or
        # checking that the gateway runs) never helps.
        hint = self.reuse_status.get("hint") or ""
        expect("code" in hint.lower() and "keeps retrying" not in hint.lower(),
               f"the hint for a spent setup code does not say to make a new one: {hint!r} "
               f"(lastError {self.reuse_status.get('lastError')!r})")
        return repr(hint)

    def hint_pin_mismatch(self) -> str:
        hint = self.mismatch_status.get("hint") or ""
        expect("fingerprint" in hint.lower() or "pin" in hint.lower(),
               f"the hint for a TLS pin mismatch does not point at the pin: {hint!r} "
               f"(lastError {self.mismatch_status.get('lastError')!r})")
        return repr(hint)

    def tls_setup_code(self) -> str:
        # The operator side: the gateway advertises its wss:// URL with the certificate's pin
        # (gateway.remote.url + gateway.remote.tlsFingerprint, hot-reloaded).
        config_path = self.tls.root / "state" / "openclaw.json"
        config = json.loads(config_path.read_text())
        config["gateway"]["remote"] = {"url": self.tls.url, "tlsFingerprint": self.fp}
        config_path.write_text(json.dumps(config, indent=2))
        code = wait_for("the TLS gateway to mint a pinned code",
                        lambda: (c := self.mint(self.tls)) and c.get("urlSource") == "gateway.remote.url" and c, 30, 1)
        payload = code["payload"]
        expect(payload.get("url") == self.tls.url and payload.get("tlsFingerprint") == self.fp,
               f"the pinned code's payload: { {k: v for k, v in payload.items() if k != 'bootstrapToken'} }")
        self.tls_code = code
        return f"urlSource gateway.remote.url; payload url {payload['url']}, tlsFingerprint {payload['tlsFingerprint'][:16]}…"

    def pair_tls_override(self) -> str:
        code = self.tls_code
        name = "clawmcp-e2e-tls-override"
        node = Node(self, "tls-override", self.data_dir("tls-override"), free_port(),
                    ["--pair", f"oc-pair://{code['setupCode']}", "--gateway-tls-fingerprint", other_digest(self.fp),
                     "--name", name])
        try:
            status = self.expect_pin_mismatch(node, self.tls, name)
        finally:
            node.stop()
        expect(self.setup_status(self.tls, code["setupId"]) == {},
               "the bootstrap token reached the gateway through a certificate that failed the pin")
        return f"the flag's pin won over the code's: {status.get('lastError')!r}; the code is still unused"

    def pair_tls(self) -> str:
        data = self.data_dir("tls-paired")
        node = Node(self, "tls-paired", data, free_port(),
                    ["--pair", f"oc-pair://{self.tls_code['setupCode']}", "--name", "clawmcp-e2e-tls-paired"])
        self.tls_paired = node
        status, _ = self.wait_paired(node, self.tls, "--pair with a pinned wss:// code")
        self.tls_paired_id = status["nodeId"]
        device = self.device_entry(self.tls, self.tls_paired_id) or {}
        expect(device.get("approvedVia") == "bootstrap", f"approvedVia {device.get('approvedVia')}")
        completion = self.setup_status(self.tls, self.tls_code["setupId"]).get("completion") or {}
        expect(completion.get("deviceId") == self.tls_paired_id, f"device.pair.setupStatus {completion}")
        self.invoke_which(self.tls, self.tls_paired_id)
        settings = self.settings(data)
        expect(settings.get("GatewayUrl") == self.tls.url and settings.get("EnableNodeMode") is True,
               f"settings.json {settings}")
        expect(normalize_fp(settings.get("GatewayTlsFingerprint")) == self.fp,
               f"GatewayTlsFingerprint {settings.get('GatewayTlsFingerprint')!r}, want {self.fp}")
        expect("bootstrap" not in json.dumps(settings).lower(), f"settings.json mentions a bootstrap token: {settings}")
        self.device_auth_private(data)
        self.expect_no_secret([data, node.home], self.tls_code["payload"]["bootstrapToken"], "the bootstrap token")
        return f"over wss with the code's pin, approved via bootstrap, invocable; settings {json.dumps(settings, sort_keys=True)}"

    def pair_tls_reconnect(self) -> str:
        assert self.tls_paired is not None
        old = self.tls_paired
        code = old.sigterm()
        expect(code == 0, f"ours exited {code} on SIGTERM")
        wait_for("node.list to show ours disconnected",
                 lambda: (self.node_entry(self.tls, node_id=self.tls_paired_id) or {}).get("connected") is False, 30)
        log_before = len(self.gateway_log(self.tls))
        node = Node(self, "tls-reconnect", old.data, old.port, [])
        self.tls_paired = node
        status, _ = self.wait_paired(node, self.tls, "plain restart over wss")
        expect(status.get("nodeId") == self.tls_paired_id and status.get("url") == self.tls.url, f"status {status}")
        self.invoke_which(self.tls, self.tls_paired_id)
        refused = [line for line in self.gateway_log(self.tls)[log_before:].splitlines() if "[ws] unauthorized" in line]
        expect(not refused, f"the gateway refused connects during the restart: {refused[:2]}")
        return "back over wss with the saved pin and device token, approved, invocable"

    def run(self) -> int:
        try:
            self.check("setup-code", self.setup_code)
            self.check("pair", self.pair, ("setup-code",))
            self.check("reuse-refused", self.reuse_refused, ("pair",))
            self.check("hint-spent-code", self.hint_spent_code, ("reuse-refused",))
            self.check("reconnect-device-token", self.reconnect_device_token, ("pair",))
            self.check("pair-url-override", self.pair_url_override)
            self.check("bad-code", self.bad_code)
            self.check("operator-remote", self.operator_remote)
            self.check("app-setup-code", self.app_setup_code)
            self.check("app-shared-token", self.app_shared_token)
            self.check("tls-pin", self.tls_pin)
            self.check("tls-pin-wrong", self.tls_pin_wrong)
            self.check("hint-pin-mismatch", self.hint_pin_mismatch, ("tls-pin-wrong",))
            self.check("tls-pin-ws", self.tls_pin_ws)
            self.check("tls-setup-code", self.tls_setup_code)
            # The override runs first: it must leave the code unused for pair-tls.
            self.check("pair-tls-override", self.pair_tls_override, ("tls-setup-code",))
            self.check("pair-tls", self.pair_tls, ("tls-setup-code",))
            self.check("pair-tls-reconnect", self.pair_tls_reconnect, ("pair-tls",))
        finally:
            for node in self.nodes:
                if problem := node.stop():
                    self.rows.append(("stop", False, problem))
        return report(self.rows, "node-pairing", self.artifacts / "node-pairing.json")


def main() -> int:
    # `timeout` (node_pairing.sh) ends us with SIGTERM: unwind, so run()'s finally stops our nodes.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gateway-env", required=True, help="gateway.env of a plain start.sh gateway (ws://)")
    parser.add_argument("--tls-gateway-env", required=True, help="gateway.env of a start.sh --tls gateway (wss://)")
    parser.add_argument("--clawmcp-bin", required=True)
    parser.add_argument("--artifacts", required=True)
    return Suite(parser.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
