"""Drive a running `clawmcp node` through `clawmcp call --stdio` with the official Python `mcp` SDK
(2.x) over stdio: the SDK spawns the relay like any stdio server and never speaks HTTP itself.

Why this exists: `call --stdio` is for clients that only speak stdio (or whose HTTP transport
insists on OAuth). The Python SDK is such a client: it probes `server/discover` first in its
default mode, sends progress tokens, and cancels through anyio cancel scopes. Every one of those
must survive the relay in both directions.

Checks (each prints `PASS <name>` or `FAIL <name>: <why>`; exit 1 if any failed):
  stateless-connect   default (auto) mode: the server/discover probe is answered by the node
                      through the relay and the SDK adopts the stateless revision 2026-07-28 (the
                      relay adds the routing headers the node checks); server info present
  tools-list          every required tool listed with a description and an object schema
  system-which        system.which {bins:["sh"]} answers an absolute path to an executable
  progress            system.run ["sleep","6"] with a progress callback: the node's progress
                      (streamed over SSE to the relay) reaches the callback before the result
  cancel-system-run   a long system.run (sh + sleep grandchild) cancelled by an anyio cancel scope:
                      the SDK writes notifications/cancelled to the relay's stdin, the relay
                      posts it to the node, the node kills the process tree; the session
                      (and the relay) still answer a tools/list afterwards
  relay-exits         when the session ends (stdin closed), the relay process is gone

Environment: CLAWMCP_E2E_BIN, CLAWMCP_E2E_URL (http://127.0.0.1:PORT/), CLAWMCP_E2E_DATA_DIR
(the node's data dir: the relay reads the token file there).
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from urllib.parse import urlparse

import anyio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from node_checks import (  # noqa: E402  (after the path above)
    CALL_TIMEOUT_SECONDS,
    CheckRunner,
    cancel_long_system_run,
    expect,
    pids_with_args,
    system_which,
    tool_payload,
    tools_list,
    wait_for,
)

# Longer than the node's progress interval (5 s): at least one heartbeat is due.
PROGRESS_SLEEP_SECONDS = 6


class Driver(CheckRunner):
    def __init__(self, binary: str, port: int, data_dir: str) -> None:
        super().__init__("python-stdio")
        self.relay_args = ["call", "--stdio", "--port", str(port), "--data-dir", data_dir]
        self.params = StdioServerParameters(command=binary, args=self.relay_args)

    def relay_pids(self) -> dict[int, list[str]]:
        return pids_with_args(*self.relay_args)

    async def session_checks(self) -> None:
        async with Client(self.params, read_timeout_seconds=CALL_TIMEOUT_SECONDS, raise_exceptions=True) as client:
            await self.check("stateless-connect", lambda: self.stateless_ok(client))
            await self.check("tools-list", lambda: tools_list(client))
            await self.check("system-which", lambda: system_which(client))
            await self.check("progress", lambda: self.progress(client))
            await self.check("cancel-system-run", lambda: self.cancel_system_run(client))
            expect(bool(self.relay_pids()), "the relay is not running during the session")
        await self.check("relay-exits", self.relay_exits)

    async def stateless_ok(self, client: Client) -> None:
        session = client.session
        expect(session.discover_result is not None, "auto mode did not adopt server/discover through the relay")
        expect(session.initialize_result is None, "auto mode ran initialize against a dual-era node")
        info = client.server_info
        expect(info is not None and info.name == "clawmcp-node", f"serverInfo {info!r}")
        expect(client.server_capabilities.tools is not None, "initialize: no tools capability")

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
        # The relay stays up (the session goes on), so only the relayed notifications/cancelled
        # can have made the node stop the run.
        await cancel_long_system_run(client)
        # The session (and the relay) survive a cancelled call. (Not ping: the stateless
        # revision removed it, and the SDK only sends it in legacy mode.)
        await tools_list(client)

    async def relay_exits(self) -> None:
        await wait_for(lambda: not self.relay_pids(), f"the relay outlived its session: {self.relay_pids()}")

    async def run(self) -> int:
        try:
            await self.session_checks()
        except Exception as exc:  # noqa: BLE001 - starting or ending the session itself failed
            self.fail("session", "".join(traceback.format_exception(exc)).strip())
        return self.summary()


def main() -> int:
    binary = os.environ["CLAWMCP_E2E_BIN"]
    port = urlparse(os.environ["CLAWMCP_E2E_URL"]).port
    if port is None:
        raise SystemExit("CLAWMCP_E2E_URL has no port")
    return anyio.run(Driver(binary, port, os.environ["CLAWMCP_E2E_DATA_DIR"]).run)


if __name__ == "__main__":
    sys.exit(main())
