"""What the serve compatibility suite and bench/serve.sh share about a running test gateway:
its facts (from the gateway.env start.sh wrote), how to call gateway RPCs (gateway_rpc.mjs, one
call per connection, or a long-lived RpcSession for flows bound to one connection), and how to
launch each bridge with the same flags and an equally isolated environment.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
SEEDED_SESSION = "agent:main:main"
# The seeded route (seed.mjs); conversations built from it must carry exactly these values.
SEEDED_ROUTE = {"channel": "imessage", "to": "+15551234567", "accountId": "imessage-default", "threadId": "thread-42"}
RPC_TIMEOUT_SECONDS = 120


@dataclass(frozen=True)
class Gateway:
    root: Path
    url: str
    token_file: Path
    node: str
    openclaw_entry: str
    openclaw_pkg: str
    openclaw_version: str
    pid: int
    log: Path
    # start.sh --tls: the wss:// gateway's leaf SHA-256, the only trust gateway_rpc.mjs gives it.
    tls_fingerprint: str | None = None

    @classmethod
    def from_env_file(cls, path: Path) -> Gateway:
        values: dict[str, str] = {}
        for line in path.read_text().splitlines():
            if "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                values[key] = value
        try:
            return cls(
                root=Path(values["CLAWMCP_GW_ROOT"]),
                url=values["CLAWMCP_GW_URL"],
                token_file=Path(values["CLAWMCP_GW_TOKEN_FILE"]),
                node=values["CLAWMCP_GW_NODE"],
                openclaw_entry=values["CLAWMCP_GW_OPENCLAW_ENTRY"],
                openclaw_pkg=values["CLAWMCP_GW_OPENCLAW_PKG"],
                openclaw_version=values["CLAWMCP_GW_OPENCLAW_VERSION"],
                pid=int(values["CLAWMCP_GW_PID"]),
                log=Path(values["CLAWMCP_GW_LOG"]),
                tls_fingerprint=values.get("CLAWMCP_GW_TLS_FINGERPRINT") or None,
            )
        except KeyError as missing:
            raise SystemExit(f"{path} lacks {missing}; was it written by e2e/gateway/start.sh?") from None

    def alive(self) -> bool:
        return os.path.exists(f"/proc/{self.pid}")

    def rpc(
        self,
        method: str,
        params: dict[str, Any],
        count: int = 1,
        in_flight: int = 1,
        timeout_s: int = RPC_TIMEOUT_SECONDS,
        latencies: bool = False,
        forwarded_for: str | None = None,
    ) -> Any:
        """Call a gateway method (count times over one connection, within timeout_s in total);
        returns the payload (or the bulk summary). Raises RuntimeError with the helper's stderr
        on failure."""
        argv = [
            self.node,
            str(HERE / "gateway_rpc.mjs"),
            "--openclaw-pkg",
            self.openclaw_pkg,
            "--url",
            self.url,
            "--token-file",
            str(self.token_file),
            "--count",
            str(count),
            "--in-flight",
            str(in_flight),
            "--timeout-ms",
            str(timeout_s * 1000),
            *(["--latencies"] if latencies else []),
            *(["--tls-fingerprint", self.tls_fingerprint] if self.tls_fingerprint else []),
            *(["--forwarded-for", forwarded_for] if forwarded_for else []),
            method,
            json.dumps(params),
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s + 30)
        if done.returncode != 0:
            raise RuntimeError(f"gateway {method} failed: {(done.stderr or done.stdout).strip()[:2000]}")
        return json.loads(done.stdout)

    def session(self, caps: tuple[str, ...] = (), timeout_s: int = 600) -> RpcSession:
        """One long-lived operator connection (gateway_rpc.mjs --session) for flows that must
        stay on one connection or need the gateway's events; close() it (or use `with`)."""
        argv = [self.node, str(HERE / "gateway_rpc.mjs"), "--openclaw-pkg", self.openclaw_pkg, "--url", self.url,
                "--token-file", str(self.token_file), "--session", "--timeout-ms", str(timeout_s * 1000),
                *(["--caps", ",".join(caps)] if caps else [])]
        return RpcSession(argv)

    def inject(self, text: str) -> str:
        """Append an assistant note to the seeded session (no agent run); returns its message id."""
        return self.rpc("chat.inject", {"sessionKey": SEEDED_SESSION, "message": text})["messageId"]

    def send_user_message(self, text: str, key: str) -> dict[str, Any]:
        """chat.send a user message, then wait for the agent run it starts to end. Without a
        model provider the run fails fast; a second chat.send while it is still active would be
        steered into it and never become its own transcript row."""
        started = self.rpc("chat.send", {"sessionKey": SEEDED_SESSION, "message": text, "idempotencyKey": key})
        return self.rpc("agent.wait", {"runId": started["runId"], "timeoutMs": 60000}) | {"runId": started["runId"]}

    def reconfigure(self, change: Callable[[dict[str, Any]], None], keys: tuple[str, ...], timeout_s: float = 30) -> str:
        """Rewrites the gateway's config file (whole, atomically, 0600) with change applied and
        waits for the hot reload whose log line names every one of keys; returns that line.
        Raises RuntimeError (with the log's tail) when none comes within timeout_s."""
        config_path = self.root / "state" / "openclaw.json"

        def log_text() -> str:
            # Its console colours can sit between the words of a line.
            return re.sub(r"\x1b\[[0-9;]*m", "", self.log.read_text("utf-8", "replace"))

        applied_before = log_text().count("config hot reload applied")
        config = json.loads(config_path.read_text())
        change(config)
        staged = config_path.with_suffix(".json.e2e-tmp")
        staged.write_text(json.dumps(config, indent=2) + "\n")
        staged.chmod(0o600)
        os.replace(staged, config_path)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            lines = [line for line in log_text().splitlines() if "config hot reload applied" in line]
            applied = next((line for line in lines[applied_before:] if all(key in line for key in keys)), None)
            if applied:
                return applied
            time.sleep(0.1)
        raise RuntimeError(f"the gateway did not hot-reload {', '.join(keys)} within {timeout_s:g} s; "
                           f"gateway log tail:\n{self.log_tail(15)}")

    def allow_node_commands(self, commands: list[str]) -> str:
        """gateway.nodes.commands.allow = commands, hot-reloaded (the gateway admits no file
        command, and nothing outside its defaults, without it); returns the reload's log line."""

        def allow(config: dict[str, Any]) -> None:
            config.setdefault("gateway", {}).setdefault("nodes", {})["commands"] = {"allow": commands}

        return self.reconfigure(allow, ("gateway.nodes.commands",))

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text("utf-8", "replace").splitlines()[-lines:])
        except OSError as err:
            return f"(gateway log unreadable: {err})"


class RpcSession:
    """A gateway_rpc.mjs --session child: requests written as lines, every response and event
    frame read back by a reader thread. Every wait is bounded; close() stops the child by PID."""

    def __init__(self, argv: list[str], connect_timeout_s: float = 60):
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, bufsize=1)
        self.frames: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.responses: dict[str, list[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True).start()
        hello = self._next(lambda f: f.get("type") == "hello", connect_timeout_s, "the session handshake")
        self.conn_id = hello.get("connId")

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                self.frames.put(json.loads(line))
            except json.JSONDecodeError:
                self.frames.put({"type": "garbage", "line": line})
        self.frames.put(None)

    def _next(self, matches, timeout_s: float, what: str) -> dict[str, Any]:
        """Drain frames (recording every one) until one matches; raise RuntimeError on timeout/exit."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"timed out after {timeout_s:.0f} s waiting for {what}")
            try:
                frame = self.frames.get(timeout=left)
            except queue.Empty:
                continue
            if frame is None:
                self.frames.put(None)  # later waits see the end too
                raise RuntimeError(f"the session ended while waiting for {what}: {''.join(self.stderr)[-800:]}")
            if frame.get("type") == "res":
                self.responses.setdefault(frame["id"], []).append(frame)
            elif frame.get("type") == "event":
                self.events.append(frame)
            if matches(frame):
                return frame

    def send(self, method: str, params: dict[str, Any]) -> str:
        request_id = str(uuid.uuid4())
        self.process.stdin.write(json.dumps({"id": request_id, "method": method, "params": params}) + "\n")
        self.process.stdin.flush()
        return request_id

    def response(self, request_id: str, index: int = 0, timeout_s: float = RPC_TIMEOUT_SECONDS) -> dict[str, Any]:
        """The index-th response frame to request_id ({ok, payload|error}); a twoPhase request has two."""
        if len(self.responses.get(request_id, [])) > index:
            return self.responses[request_id][index]
        self._next(lambda f: f.get("type") == "res" and f["id"] == request_id and len(self.responses[request_id]) > index,
                   timeout_s, f"response {index + 1} to {request_id}")
        return self.responses[request_id][index]

    def call(self, method: str, params: dict[str, Any], timeout_s: float = RPC_TIMEOUT_SECONDS) -> dict[str, Any]:
        """Send and wait for the first response frame: {ok, payload} or {ok: false, error}."""
        return self.response(self.send(method, params), 0, timeout_s)

    def event(self, matches, timeout_s: float, what: str) -> dict[str, Any]:
        """The first event (already seen or still to come) for which matches(frame) is true."""
        for frame in self.events:
            if matches(frame):
                return frame
        return self._next(lambda f: f.get("type") == "event" and matches(f), timeout_s, what)

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(timeout=10)

    def __enter__(self) -> RpcSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def bridge_env(home: Path) -> dict[str, str]:
    """A clean environment with a private HOME/state dir, identical in shape for every bridge.

    Each bridge gets its own device identity and nothing can read or write ~/.openclaw, the
    caller's XDG dirs, or a gateway URL/token from the caller's environment.
    OPENCLAW_NO_RESPAWN=1 keeps `openclaw mcp serve` a single process (without it a 70 MB
    launcher re-spawns the real bridge as a child); that is the leaner of its two shapes.
    """
    state = home / "state"
    for path in (home, state, home / ".config", home / ".local/share", home / ".local/state", home / ".cache"):
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    config = state / "openclaw.json"
    # Only redirect the CLI's file log (default /tmp/openclaw/openclaw-<date>.log).
    config.write_text(json.dumps({"logging": {"file": str(home / "openclaw.log")}}) + "\n")
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "OPENCLAW_HOME": str(home),
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_CONFIG_PATH": str(config),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "OPENCLAW_OFFLINE": "1",
        "OPENCLAW_NO_AUTO_UPDATE": "1",
        "OPENCLAW_NO_RESPAWN": "1",
        "OPENCLAW_DISABLE_BONJOUR": "1",
    }


def bridge_argv(kind: str, gateway: Gateway, mode: str, clawmcp_bin: str | None = None) -> list[str]:
    """Both bridges get exactly the same flags: --url, --token-file, --claude-channel-mode."""
    flags = ["--url", gateway.url, "--token-file", str(gateway.token_file), "--claude-channel-mode", mode]
    if kind == "openclaw":
        return [gateway.node, gateway.openclaw_entry, "mcp", "serve", *flags]
    if kind == "clawmcp":
        if not clawmcp_bin:
            raise ValueError("clawmcp bridge needs the binary path")
        return [clawmcp_bin, "serve", *flags]
    raise ValueError(f"unknown bridge kind {kind}")
