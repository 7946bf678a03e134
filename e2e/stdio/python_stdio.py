"""Drive a running `clawmcp node` through `clawmcp call --stdio` with the official Python `mcp` SDK
(2.x) over stdio: the SDK spawns the relay like any stdio server and never speaks HTTP itself.

Why this exists: `call --stdio` is for clients that only speak stdio (or whose HTTP transport
insists on OAuth). The Python SDK is such a client: it probes `server/discover` first in its
default mode, sends progress tokens, and cancels through anyio cancel scopes. Every one of those
must survive the relay in both directions.

Checks (each prints `PASS <name>` or `FAIL <name>: <why>`; exit 1 if any failed):
  initialize          default (auto) mode: the server/discover probe is answered by the node
                      through the relay, the SDK falls back to initialize; server info present
  tools-list          every required tool listed with a description and an object schema
  system-which        system.which {bins:["sh"]} answers an absolute path to an executable
  progress            system.run ["sleep","6"] with a progress callback: the node's progress
                      (streamed over SSE to the relay) reaches the callback before the result
  cancel-system-run   a long system.run (sh + sleep grandchild) cancelled by an anyio cancel scope:
                      the SDK writes notifications/cancelled to the relay's stdin, the relay
                      posts it to the node, the node kills the process tree; the session
                      (and the relay) still answer a ping afterwards
  relay-exits         when the session ends (stdin closed), the relay process is gone

Environment: CLAWMCP_E2E_BIN, CLAWMCP_E2E_URL (http://127.0.0.1:PORT/), CLAWMCP_E2E_DATA_DIR
(the node's data dir: the relay reads the token file there).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import traceback
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import anyio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

EXPECTATIONS = json.loads((Path(__file__).parent.parent / "node" / "expectations.json").read_text())
# The node negotiates a handshake-era protocol, where ping is still defined; the SDK warns
# about its 2026-07-28 removal on every call.
warnings.filterwarnings("ignore", message="ping is removed")
# Bound for processes to appear or disappear: generous for a loaded CI machine, far below the
# sleep length so a leaked process is always caught.
PROCESS_WAIT_SECONDS = 15.0
CALL_TIMEOUT_SECONDS = 60.0
# Longer than the node's progress interval (5 s): at least one heartbeat is due.
PROGRESS_SLEEP_SECONDS = 6


class CheckFailed(Exception):
    """An assertion about the relay's behaviour did not hold."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def tool_payload(result: Any) -> Any:
    """The node answers tools/call with one text content block holding compact JSON."""
    expect(not result.is_error, f"tool returned isError: {result.content!r}")
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    expect(len(texts) == 1, f"expected one text content block, got {result.content!r}")
    return json.loads(texts[0])


def pids_with_args(*needles: str) -> dict[int, list[str]]:
    """Live processes whose argv contains every needle (zombies have an empty cmdline)."""
    found: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = [arg.decode(errors="replace") for arg in (entry / "cmdline").read_bytes().split(b"\0") if arg]
        except OSError:
            continue
        if all(any(needle in arg for arg in argv) for needle in needles):
            found[int(entry.name)] = argv
    return found


async def wait_for(predicate: Callable[[], bool], what: str) -> None:
    with anyio.move_on_after(PROCESS_WAIT_SECONDS):
        while not predicate():
            await anyio.sleep(0.05)
        return
    raise CheckFailed(f"{what} (waited {PROCESS_WAIT_SECONDS:.0f}s)")


class Driver:
    def __init__(self, binary: str, port: int, data_dir: str) -> None:
        self.relay_args = ["call", "--stdio", "--port", str(port), "--data-dir", data_dir]
        self.params = StdioServerParameters(command=binary, args=self.relay_args)
        self.failures: list[str] = []
        self.passed = 0

    async def check(self, name: str, body: Callable[[], Awaitable[None]]) -> None:
        try:
            await body()
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none is fatal to the run
            detail = str(exc) if isinstance(exc, CheckFailed) else "".join(traceback.format_exception(exc)).strip()
            self.failures.append(name)
            print(f"FAIL {name}: {detail}", flush=True)
        else:
            self.passed += 1
            print(f"PASS {name}", flush=True)

    def relay_pids(self) -> dict[int, list[str]]:
        return pids_with_args(*self.relay_args)

    async def session_checks(self) -> None:
        async with Client(self.params, read_timeout_seconds=CALL_TIMEOUT_SECONDS, raise_exceptions=True) as client:
            await self.check("initialize", lambda: self.initialize_ok(client))
            await self.check("tools-list", lambda: self.tools_list(client))
            await self.check("system-which", lambda: self.system_which(client))
            await self.check("progress", lambda: self.progress(client))
            await self.check("cancel-system-run", lambda: self.cancel_system_run(client))
            expect(bool(self.relay_pids()), "the relay is not running during the session")
        await self.check("relay-exits", self.relay_exits)

    async def initialize_ok(self, client: Client) -> None:
        expect(client.session.initialize_result is not None, "auto mode did not fall back to initialize")
        info = client.server_info
        expect(info is not None and info.name == "clawmcp-node", f"serverInfo {info!r}")
        expect(client.server_capabilities.tools is not None, "initialize: no tools capability")

    async def tools_list(self, client: Client) -> None:
        listed = {tool.name: tool for tool in (await client.list_tools(cache_mode="bypass")).tools}
        missing = [name for name in EXPECTATIONS["requiredTools"] if name not in listed]
        expect(not missing, f"tools/list lacks {missing}; got {sorted(listed)}")
        for name in EXPECTATIONS["requiredTools"]:
            tool = listed[name]
            expect(bool(tool.description and tool.description.strip()), f"{name}: empty description")
            expect(tool.input_schema.get("type") == "object", f"{name}: inputSchema {tool.input_schema!r}")

    async def system_which(self, client: Client) -> None:
        payload = tool_payload(await client.call_tool("system.which", {"bins": ["sh"]}))
        path = payload.get("bins", {}).get("sh")
        expect(isinstance(path, str) and os.path.isabs(path), f"system.which sh: {payload!r}")
        expect(os.access(path, os.X_OK), f"system.which sh -> {path} is not executable")

    async def progress(self, client: Client) -> None:
        reports: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            reports.append((progress, total, message))

        result = await client.call_tool(
            "system.run", {"command": ["sleep", str(PROGRESS_SLEEP_SECONDS)]}, progress_callback=on_progress
        )
        payload = tool_payload(result)
        expect(payload.get("exitCode") == 0 and payload.get("success") is True, f"sleep failed: {payload!r}")
        expect(bool(reports), "no progress reached the callback during a call longer than the progress interval")

    async def cancel_system_run(self, client: Client) -> None:
        # A unique fractional sleep length marks the sh and its sleep grandchild in /proc.
        marker = f"{EXPECTATIONS['cancelSleepSeconds']}.{secrets.randbelow(10**6):06d}"
        command = ["sh", "-c", f"sleep {marker} & wait"]
        completed: list[Any] = []

        async def call() -> None:
            completed.append(await client.call_tool("system.run", {"command": command}))

        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call)
                await wait_for(
                    lambda: any(argv[0].endswith("sleep") for argv in pids_with_args(marker).values()),
                    f"system.run never started the sleep grandchild ({marker}); completed={completed!r}",
                )
                started = pids_with_args(marker)
                scope.cancel()
        expect(scope.cancelled_caught and not completed, f"call was not abandoned: completed={completed!r}")
        # The relay stays up (the session goes on), so only the relayed notifications/cancelled
        # can make the node stop the run.
        await wait_for(
            lambda: not pids_with_args(marker),
            f"process tree survived cancellation: was {started}, still {pids_with_args(marker)}",
        )
        await client.send_ping()  # the session (and the relay) survive a cancelled call

    async def relay_exits(self) -> None:
        await wait_for(lambda: not self.relay_pids(), f"the relay outlived its session: {self.relay_pids()}")

    async def run(self) -> int:
        try:
            await self.session_checks()
        except Exception as exc:  # noqa: BLE001 - starting or ending the session itself failed
            self.failures.append("session")
            print(f"FAIL session: {''.join(traceback.format_exception(exc)).strip()}", flush=True)
        print(f"python-stdio: {self.passed} passed, {len(self.failures)} failed", flush=True)
        return 1 if self.failures else 0


def main() -> int:
    binary = os.environ["CLAWMCP_E2E_BIN"]
    port = urlparse(os.environ["CLAWMCP_E2E_URL"]).port
    if port is None:
        raise SystemExit("CLAWMCP_E2E_URL has no port")
    return anyio.run(Driver(binary, port, os.environ["CLAWMCP_E2E_DATA_DIR"]).run)


if __name__ == "__main__":
    sys.exit(main())
