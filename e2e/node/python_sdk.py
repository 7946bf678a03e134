"""Drive a running `clawmcp node` with the official Python `mcp` SDK (2.x) over HTTP.

Why this exists: the Python SDK is one of the real MCP clients users point at the node.
It probes `server/discover` before `initialize` in its default mode (and then speaks the
stateless revision 2026-07-28 with a server that answers it), uses httpx2, and
cancels through anyio cancel scopes, so it exercises paths no Rust-side test can.

Checks (each prints `PASS <name>` or `FAIL <name>: <why>`; exit 1 if any failed):
  auth-required        a request without the bearer token gets HTTP 401
  initialize-legacy    mode="legacy": initialize handshake, server info present
  tools-list           every required tool listed with a description and an object schema
  system-which         system.which {bins:["sh"]} answers an absolute path to an executable
  device-info          device.info answers the documented string fields, deviceName = hostname
  screen-snapshot      screen.snapshot answers an ImageContent (PNG of e2e/run.sh's white Xvfb
                       root, every pixel decoded) beside JSON metadata without base64
  screen-record        screen.record answers an EmbeddedResource (a video/mp4 blob, an MP4 ftyp
                       box, the byte count the metadata says) beside JSON metadata without base64
  unknown-tool         an unknown tool is a tool error (isError), not a protocol error
  cancel-system-run    a long system.run (sh + sleep grandchild) cancelled by an anyio cancel
                       scope: the call is abandoned, the SDK sends notifications/cancelled, and
                       the whole process tree is gone afterwards; the session still works
  stateless-auto       mode="auto": the SDK probes server/discover, adopts the stateless
                       revision (2026-07-28: no initialize, per-request _meta and headers) and
                       lists and calls tools; every result it got carries resultType

Environment: CLAWMCP_E2E_URL (http://127.0.0.1:PORT/), CLAWMCP_E2E_TOKEN_FILE.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import traceback
import warnings
from pathlib import Path

import anyio
import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from node_checks import (  # noqa: E402  (after the path above)
    CALL_TIMEOUT_SECONDS,
    EXPECTATIONS,
    CheckRunner,
    cancel_long_system_run,
    expect,
    screen_record,
    screen_snapshot,
    system_which,
    tool_payload,
    tools_list,
    wait_for,
)

# The node negotiates a handshake-era protocol, where ping is still defined; the SDK warns
# about its 2026-07-28 removal on every call.
warnings.filterwarnings("ignore", message="ping is removed")


class Exchange:
    """One HTTP request the SDK sent and, once it arrived, the body of the answer."""

    def __init__(self, request: httpx2.Request) -> None:
        self.request = request
        self.body = request.content.decode(errors="replace") if request.method == "POST" else ""
        try:
            self.method = json.loads(self.body).get("method", "<response>") if self.body else f"<{request.method}>"
        except ValueError:
            self.method = "<unparsable body>"
        self.response_text: str | None = None


class Driver(CheckRunner):
    def __init__(self, url: str, token: str) -> None:
        super().__init__("python-sdk")
        self.url = url
        self.token = token
        # Every POST the SDK makes with the server's answer, so a check can read an answer
        # the SDK itself dropped (the late result of a cancelled call).
        self.exchanges: list[Exchange] = []

    @property
    def sent_methods(self) -> list[str]:
        return [exchange.method for exchange in self.exchanges]

    def http_client(self) -> httpx2.AsyncClient:
        async def record_request(request: httpx2.Request) -> None:
            self.exchanges.append(Exchange(request))

        async def record_response(response: httpx2.Response) -> None:
            if response.request.method != "POST":
                return
            await response.aread()
            for exchange in self.exchanges:
                if exchange.request is response.request:
                    exchange.response_text = response.text

        return httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=httpx2.Timeout(CALL_TIMEOUT_SECONDS),
            event_hooks={"request": [record_request], "response": [record_response]},
        )

    def client(self, http: httpx2.AsyncClient, mode: str) -> Client:
        return Client(
            streamable_http_client(self.url, http_client=http),
            mode=mode,
            read_timeout_seconds=CALL_TIMEOUT_SECONDS,
            raise_exceptions=True,
        )

    async def auth_required(self) -> None:
        async with httpx2.AsyncClient(timeout=10) as bare:
            response = await bare.post(self.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        expect(response.status_code == 401, f"POST without token: HTTP {response.status_code}, expected 401")

    async def legacy_session_checks(self) -> None:
        async with self.http_client() as http, self.client(http, "legacy") as client:
            await self.check("initialize-legacy", lambda: self.initialize_ok(client))
            await self.check("tools-list", lambda: tools_list(client))
            await self.check("system-which", lambda: system_which(client))
            await self.check("device-info", lambda: self.device_info(client))
            await self.check("screen-snapshot", lambda: screen_snapshot(client))
            await self.check("screen-record", lambda: screen_record(client))
            await self.check("unknown-tool", lambda: self.unknown_tool(client))
            await self.check("cancel-system-run", lambda: self.cancel_system_run(client))

    async def initialize_ok(self, client: Client) -> None:
        expect(client.server_info is not None and bool(client.server_info.name), "initialize: no serverInfo.name")
        expect(bool(client.protocol_version), "initialize: no protocolVersion negotiated")
        expect(client.server_capabilities.tools is not None, "initialize: no tools capability")

    async def device_info(self, client: Client) -> None:
        payload = tool_payload(await client.call_tool("device.info", {}))
        for field in EXPECTATIONS["deviceInfoStringFields"]:
            expect(isinstance(payload.get(field), str), f"device.info.{field} missing or not a string: {payload!r}")
        expect(payload["deviceName"] == socket.gethostname(), f"deviceName {payload['deviceName']!r} != hostname")

    async def unknown_tool(self, client: Client) -> None:
        result = await client.call_tool("no.such.tool", {})
        expect(result.is_error is True, f"unknown tool: expected isError, got {result!r}")

    async def cancel_system_run(self, client: Client) -> None:
        marker = await cancel_long_system_run(client)
        expect(
            "notifications/cancelled" in self.sent_methods, f"SDK sent no notifications/cancelled: {self.sent_methods}"
        )
        # The SDK drops the late answer; the server must still settle the call as a tool
        # error saying it was cancelled (docs/node-http.md §9.5, notifications/cancelled).
        call = next(e for e in self.exchanges if e.method == "tools/call" and marker in e.body)
        await wait_for(lambda: call.response_text is not None, "no HTTP answer to the cancelled tools/call")
        late = json.loads(call.response_text or "null")
        expect(
            late.get("result", {}).get("isError") is True and "cancel" in json.dumps(late["result"]).lower(),
            f"cancelled tools/call should end as a tool error mentioning cancellation, got {call.response_text}",
        )
        await client.send_ping()  # the session survives a cancelled call

    async def stateless_auto(self) -> None:
        self.exchanges.clear()
        async with self.http_client() as http, self.client(http, "auto") as client:
            session = client.session
            expect(session.discover_result is not None, "auto mode did not adopt server/discover")
            expect(session.initialize_result is None, "auto mode ran initialize against a dual-era server")
            expect(
                "2026-07-28" in session.discover_result.supported_versions,
                f"discover: {session.discover_result!r}",
            )
            await tools_list(client)
            await system_which(client)
            await self.device_info(client)
            await self.unknown_tool(client)
        expect(self.sent_methods[0] == "server/discover", f"expected the discover probe first: {self.sent_methods[:4]}")
        expect("initialize" not in self.sent_methods, f"a stateless client sent initialize: {self.sent_methods}")
        for exchange in self.exchanges:
            if exchange.request.method != "POST" or exchange.method == "<response>":
                continue
            header = exchange.request.headers.get("mcp-protocol-version")
            expect(header == "2026-07-28", f"{exchange.method} went out with MCP-Protocol-Version {header!r}")
            answer = json.loads(exchange.response_text or "null")
            expect(
                isinstance(answer, dict) and answer.get("result", {}).get("resultType") == "complete",
                f"{exchange.method}: a stateless result lacks resultType: {exchange.response_text}",
            )

    async def run(self) -> int:
        await self.check("auth-required", self.auth_required)
        try:
            await self.legacy_session_checks()
        except Exception as exc:  # noqa: BLE001 - connecting itself failed
            self.fail("connect-legacy", "".join(traceback.format_exception(exc)).strip())
        await self.check("stateless-auto", self.stateless_auto)
        return self.summary()


def main() -> int:
    url = os.environ["CLAWMCP_E2E_URL"]
    token = Path(os.environ["CLAWMCP_E2E_TOKEN_FILE"]).read_text().strip()
    return anyio.run(Driver(url, token).run)


if __name__ == "__main__":
    sys.exit(main())
