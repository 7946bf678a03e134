"""What the serve compatibility suite and bench/serve.sh share about a running test gateway:
its facts (from the gateway.env start.sh wrote), how to call gateway RPCs (gateway_rpc.mjs),
and how to launch each bridge with the same flags and an equally isolated environment.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
            method,
            json.dumps(params),
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s + 30)
        if done.returncode != 0:
            raise RuntimeError(f"gateway {method} failed: {(done.stderr or done.stdout).strip()[:2000]}")
        return json.loads(done.stdout)

    def inject(self, text: str) -> str:
        """Append an assistant note to the seeded session (no agent run); returns its message id."""
        return self.rpc("chat.inject", {"sessionKey": SEEDED_SESSION, "message": text})["messageId"]

    def send_user_message(self, text: str, key: str) -> dict[str, Any]:
        """chat.send a user message, then wait for the agent run it starts to end. Without a
        model provider the run fails fast; a second chat.send while it is still active would be
        steered into it and never become its own transcript row."""
        started = self.rpc("chat.send", {"sessionKey": SEEDED_SESSION, "message": text, "idempotencyKey": key})
        return self.rpc("agent.wait", {"runId": started["runId"], "timeoutMs": 60000}) | {"runId": started["runId"]}

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text("utf-8", "replace").splitlines()[-lines:])
        except OSError as err:
            return f"(gateway log unreadable: {err})"


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
