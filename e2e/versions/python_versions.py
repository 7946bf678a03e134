"""The official Python `mcp` SDK (2.x) pinned to each MCP revision against every clawmcp surface.

Why this exists: clients in the field speak 2025-11-25 or 2025-06-18 (older ones 2024-11-05),
and each validates what it gets against its own schema. This drives the real SDK, pinned to one
revision at a time, against `clawmcp node` (HTTP), `clawmcp tools` and `clawmcp serve` (stdio,
on the real gateway), and asserts per (revision, surface), each printed as a PASS/FAIL row:

  negotiated          initialize went out with the pinned revision, the answer names it, and
                      the SDK adopted it (`client.protocol_version`)
  tools-list          the SDK's own ListToolsResult model accepted tools/list; every tool the
                      matrix calls is listed (the detail names the tools with title/outputSchema)
  fields              on the wire, only the fields the revision defines: title, outputSchema,
                      structuredContent, resource_link from 2025-06-18, icons from 2025-11-25,
                      audio from 2025-03-26 (tools/list, the calls' results, serverInfo)
  call:<tool>         the SDK's call_tool accepted the result (CallToolResult model, and for a
                      tool with an outputSchema its structuredContent validated by the SDK
                      against that schema, beside a text block for older clients)
  schema-enforced:<t> for a tool with an outputSchema: the same call, its structuredContent
                      made invalid on the way in, is rejected by the SDK (so call:<tool> above
                      really went through the SDK's validation)
  header              (HTTP) every request after initialize carried MCP-Protocol-Version equal
                      to the negotiated revision
and per surface, across the revisions it ran:
  same-definitions    each tool's name, description, inputSchema and annotations are identical
                      at every revision: only the gated fields differ

Pinning: the SDK has no option for the revision it offers (ClientSession.initialize always
sends LATEST_HANDSHAKE_VERSION, 2025-11-25, in mode="legacy"). So a transport wrapper rewrites
`initialize.params.protocolVersion` on the way out when the pin differs; the SDK then checks
and adopts the answer itself (it refuses a revision outside HANDSHAKE_PROTOCOL_VERSIONS).

Usage: python_versions.py SURFACE...   (node, tools, serve)
Environment: node: CLAWMCP_E2E_URL, CLAWMCP_E2E_TOKEN_FILE. tools/serve: CLAWMCP_E2E_BIN,
CLAWMCP_GW_URL, CLAWMCP_GW_TOKEN_FILE, CLAWMCP_VERSIONS_HOME (private homes are made there).
"""

from __future__ import annotations

import copy
import json
import os
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "gateway"))
from harness import bridge_env  # noqa: E402  (stdlib-only helper shared with the gateway suites)

MATRIX = json.loads((HERE / "matrix.json").read_text())
CALL_TIMEOUT_SECONDS = 60.0
# A whole (revision, surface) cell, connect to close: a hang is a FAIL row, not a stuck run.
CELL_TIMEOUT_SECONDS = 180.0
# Each gated field and the first revision that defines it (ISO dates compare as strings).
FIELD_SINCE = {
    "title": "2025-06-18",
    "outputSchema": "2025-06-18",
    "structuredContent": "2025-06-18",
    "content:resource_link": "2025-06-18",
    "content:audio": "2025-03-26",
    "icons": "2025-11-25",
    "serverInfo.title": "2025-06-18",
    "serverInfo.icons": "2025-11-25",
}
# Tool keys a revision may add; everything else must be the same at every revision.
GATED_TOOL_KEYS = ("title", "outputSchema", "icons")

warnings.filterwarnings("ignore", message="ping is removed")


class CheckFailed(Exception):
    pass


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


class Wire:
    """The JSON-RPC messages of one session as the transport carried them, before the SDK
    parsed them into its models, plus (HTTP) each POST's MCP-Protocol-Version header."""

    def __init__(self) -> None:
        self.requests: dict[Any, tuple[str, dict[str, Any]]] = {}
        self.answers: dict[Any, dict[str, Any]] = {}
        self.http_posts: list[tuple[str, str | None]] = []
        # Request ids whose tools/call answer gets its structuredContent made invalid.
        self.tamper_next_call: dict[str, Any] | None = None
        self.tampered_ids: set[Any] = set()
        self.offered: str | None = None

    def result_of(self, method: str) -> list[dict[str, Any]]:
        return [self.answers[i]["result"] for i, (m, _) in self.requests.items() if m == method and "result" in self.answers.get(i, {})]


def invalidate(structured: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of `structured` that `schema` rejects: a required key dropped, else the first typed
    property given a value of another type."""
    broken = copy.deepcopy(structured)
    required = schema.get("required") or []
    if required and required[0] in broken:
        del broken[required[0]]
        return broken
    for key, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict) and "type" in prop:
            broken[key] = 0 if prop["type"] == "string" else "not-a-" + str(prop["type"])
            return broken
    raise CheckFailed(f"outputSchema has no required key or typed property to violate: {schema}")


@asynccontextmanager
async def pinned(inner: Any, revision: str, wire: Wire) -> AsyncIterator[Any]:
    """The SDK's own transport, with initialize's protocolVersion set to `revision` on the way
    out, and every message recorded in `wire` (and one answer tampered when asked)."""
    async with inner as (read_stream, write_stream):
        up_send, up_recv = anyio.create_memory_object_stream[SessionMessage](16)
        down_send, down_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)

        async def outgoing() -> None:
            async with up_recv:
                async for item in up_recv:
                    message = item.message
                    if isinstance(message, JSONRPCRequest):
                        params = message.params if message.params is not None else {}
                        if message.method == "initialize":
                            wire.offered = params.get("protocolVersion")
                            params["protocolVersion"] = revision
                        if message.method == "tools/call" and wire.tamper_next_call is not None:
                            wire.tampered_ids.add(message.id)
                        wire.requests[message.id] = (message.method, copy.deepcopy(params))
                    await write_stream.send(item)

        async def incoming() -> None:
            async with down_send:
                async for item in read_stream:
                    message = getattr(item, "message", None)
                    if isinstance(message, JSONRPCResponse | JSONRPCError):
                        if isinstance(message, JSONRPCResponse) and message.id in wire.tampered_ids:
                            schema = wire.tamper_next_call or {}
                            if isinstance(message.result.get("structuredContent"), dict):
                                message.result["structuredContent"] = invalidate(message.result["structuredContent"], schema)
                        wire.answers[message.id] = json.loads(message.model_dump_json(by_alias=True, exclude_unset=True))
                    await down_send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(outgoing)
            group.start_soon(incoming)
            try:
                yield down_recv, up_send
            finally:
                group.cancel_scope.cancel()


def gated_fields_present(wire: Wire) -> dict[str, str]:
    """Each gated field found on the wire, with where it was seen first."""
    found: dict[str, str] = {}
    for result in wire.result_of("initialize"):
        for key in ("title", "icons"):
            if key in result.get("serverInfo", {}):
                found.setdefault(f"serverInfo.{key}", "initialize")
    for result in wire.result_of("tools/list"):
        for tool in result.get("tools", []):
            for key in GATED_TOOL_KEYS:
                if key in tool:
                    found.setdefault(key, f"tools/list {tool.get('name')}")
    for request_id, (method, params) in wire.requests.items():
        result = wire.answers.get(request_id, {}).get("result")
        if method != "tools/call" or not isinstance(result, dict) or request_id in wire.tampered_ids:
            continue
        if "structuredContent" in result:
            found.setdefault("structuredContent", f"tools/call {params.get('name')}")
        for block in result.get("content", []):
            kind = f"content:{block.get('type')}"
            if kind in FIELD_SINCE:
                found.setdefault(kind, f"tools/call {params.get('name')}")
    return found


class Matrix:
    def __init__(self) -> None:
        self.rows: list[tuple[bool, str, str]] = []
        # surface -> revision -> tool name -> the tool as listed on the wire
        self.listings: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}

    def row(self, ok: bool, revision: str, surface: str, check: str, detail: str) -> None:
        name = f"python {revision} {surface} {check}"
        self.rows.append((ok, name, detail))
        first = detail.strip().splitlines()[0] if detail.strip() else ""
        print(f"{'PASS' if ok else 'FAIL'}  {name}  {first if ok else detail}", flush=True)

    async def check(self, revision: str, surface: str, name: str, body: Any) -> None:
        try:
            detail = await body()
            self.row(True, revision, surface, name, detail or "")
        except Exception as exc:  # noqa: BLE001 - every failure becomes a FAIL row
            detail = str(exc) if isinstance(exc, CheckFailed) else "".join(traceback.format_exception(exc)).strip()
            self.row(False, revision, surface, name, detail)

    # -- connections ---------------------------------------------------------------------------
    def transport(self, surface: str, wire: Wire, errlog: Any) -> tuple[Any, Any]:
        """(the SDK's transport for the surface, an httpx client to close or None)."""
        if surface == "node":
            token = Path(os.environ["CLAWMCP_E2E_TOKEN_FILE"]).read_text().strip()

            async def record(request: httpx2.Request) -> None:
                if request.method == "POST":
                    try:
                        method = json.loads(request.content).get("method", "<response>")
                    except ValueError:
                        method = "<unparsable>"
                    wire.http_posts.append((method, request.headers.get("mcp-protocol-version")))

            http = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {token}"},
                timeout=httpx2.Timeout(CALL_TIMEOUT_SECONDS),
                event_hooks={"request": [record]},
            )
            return streamable_http_client(os.environ["CLAWMCP_E2E_URL"], http_client=http), http
        homes = Path(os.environ["CLAWMCP_VERSIONS_HOME"])
        homes.mkdir(parents=True, exist_ok=True, mode=0o700)
        home = Path(tempfile.mkdtemp(prefix=f"python-{surface}-", dir=homes))
        env = bridge_env(home)
        args = [surface, "--url", os.environ["CLAWMCP_GW_URL"], "--token-file", os.environ["CLAWMCP_GW_TOKEN_FILE"]]
        if surface == "serve":
            args += ["--claude-channel-mode", "off"]
        else:
            (home / "workspace").mkdir(mode=0o700)
            env["OPENCLAW_WORKSPACE"] = str(home / "workspace")
        params = StdioServerParameters(command=os.environ["CLAWMCP_E2E_BIN"], args=args, env=env, cwd=str(home))
        return stdio_client(params, errlog=errlog), None

    # -- one cell ------------------------------------------------------------------------------
    async def cell(self, revision: str, surface: str) -> None:
        started = time.monotonic()
        await self.cell_checks(revision, surface)
        print(f"TIME  python {revision} {surface}  {time.monotonic() - started:.1f} s", flush=True)

    async def cell_checks(self, revision: str, surface: str) -> None:
        wire = Wire()
        calls = MATRIX["surfaces"][surface]["calls"]
        log_dir = Path(os.environ.get("CLAWMCP_VERSIONS_HOME", tempfile.gettempdir()))
        log_dir.mkdir(parents=True, exist_ok=True)
        with (log_dir / f"python-{surface}-{revision}.stderr").open("w") as errlog:
            inner, http = self.transport(surface, wire, errlog)
            try:
                with anyio.fail_after(CELL_TIMEOUT_SECONDS):
                    async with Client(
                        pinned(inner, revision, wire),
                        mode="legacy",
                        read_timeout_seconds=CALL_TIMEOUT_SECONDS,
                        raise_exceptions=True,
                        cache=None,
                    ) as client:
                        await self.session_checks(client, wire, revision, surface, calls)
            except Exception as exc:  # noqa: BLE001 - connecting or closing failed
                self.row(False, revision, surface, "connect", "".join(traceback.format_exception(exc)).strip())
                return
            finally:
                if http is not None:
                    await http.aclose()
        await self.check(revision, surface, "fields", lambda: self.fields(wire, revision))
        if surface == "node":
            await self.check(revision, surface, "header", lambda: self.header(wire, revision))

    async def session_checks(self, client: Client, wire: Wire, revision: str, surface: str, calls: list[Any]) -> None:
        async def negotiated() -> str:
            expect(client.protocol_version == revision, f"SDK adopted {client.protocol_version!r}, pinned {revision}")
            (answer,) = wire.result_of("initialize")
            expect(answer.get("protocolVersion") == revision, f"initialize answered {answer.get('protocolVersion')!r}")
            how = "as the SDK offered it" if wire.offered == revision else f"rewritten from the SDK's {wire.offered}"
            return f"initialize {revision} ({how}); server {answer.get('serverInfo')}"

        listed: dict[str, Any] = {}

        async def tools_list() -> str:
            result = await client.list_tools()
            listed.update({tool.name: tool for tool in result.tools})
            missing = [call["name"] for call in calls if call["name"] not in listed]
            expect(not missing, f"not listed: {missing}; listed: {sorted(listed)}")
            (raw,) = wire.result_of("tools/list")
            self.listings.setdefault(surface, {})[revision] = {tool["name"]: tool for tool in raw["tools"]}
            titled = sorted(name for name, tool in listed.items() if tool.title)
            with_schema = sorted(name for name, tool in listed.items() if tool.output_schema)
            return f"{len(listed)} tools; title: {titled or 'none'}; outputSchema: {with_schema or 'none'}"

        await self.check(revision, surface, "negotiated", negotiated)
        await self.check(revision, surface, "tools-list", tools_list)
        for call in calls:
            name = call["name"]
            schema = listed[name].output_schema if name in listed else None
            await self.check(revision, surface, f"call:{name}", lambda c=call, s=schema: self.call(client, c, s))
            if schema is not None:
                await self.check(
                    revision, surface, f"schema-enforced:{name}", lambda c=call, s=schema: self.tampered(client, wire, c, s)
                )

    async def call(self, client: Client, call: dict[str, Any], schema: dict[str, Any] | None) -> str:
        result = await client.call_tool(call["name"], call["arguments"])
        expect(result.is_error is not True, f"isError: {result.content!r}")
        expect(bool(result.content), "no content blocks")
        kinds = [block.type for block in result.content]
        if result.structured_content is not None:
            # The spec (2025-06-18, tools): structured results SHOULD also come serialised in a
            # text block, for clients that do not read structuredContent.
            expect("text" in kinds, f"structuredContent needs a text block beside it for older clients: {kinds}")
        if schema is None:
            # Allowed without an outputSchema (the spec only binds results to a declared one);
            # `clawmcp serve` does it like the TS SDK server behind `openclaw mcp serve`.
            extra = "; structuredContent (no schema to validate it against)" if result.structured_content is not None else ""
            return f"content {kinds}, no outputSchema{extra}"
        expect(isinstance(result.structured_content, dict), "outputSchema but no structuredContent")
        return f"content {kinds}; structuredContent validated by the SDK against the outputSchema"

    async def tampered(self, client: Client, wire: Wire, call: dict[str, Any], schema: dict[str, Any]) -> str:
        wire.tamper_next_call = schema
        try:
            await client.call_tool(call["name"], call["arguments"])
        except RuntimeError as err:
            expect("Invalid structured content" in str(err), f"rejected, but not by the schema check: {err}")
            return f"SDK rejected invalid structuredContent: {str(err)[:120]}"
        finally:
            wire.tamper_next_call = None
        raise CheckFailed("the SDK accepted structuredContent that violates the outputSchema")

    async def fields(self, wire: Wire, revision: str) -> str:
        present = gated_fields_present(wire)
        early = {field: where for field, where in present.items() if FIELD_SINCE[field] > revision}
        expect(not early, f"fields {revision} does not define: {early}")
        return f"present: {sorted(present) or 'none'}; none beyond {revision}"

    async def header(self, wire: Wire, revision: str) -> str:
        after = wire.http_posts[[method for method, _ in wire.http_posts].index("initialize") + 1 :]
        expect(after, "no requests after initialize")
        wrong = [(method, header) for method, header in after if header != revision]
        expect(not wrong, f"MCP-Protocol-Version != {revision}: {wrong}")
        return f"{len(after)} POSTs after initialize, all MCP-Protocol-Version: {revision}"

    def same_definitions(self, surface: str) -> None:
        listings = self.listings.get(surface, {})
        revisions = sorted(listings)
        if len(revisions) < 2:
            self.row(False, "all", surface, "same-definitions", f"tools/list seen at {revisions} only")
            return

        def core(tool: dict[str, Any]) -> dict[str, Any]:
            return {key: value for key, value in tool.items() if key not in GATED_TOOL_KEYS}

        defined_here = MATRIX["surfaces"][surface].get("definedHere")
        problems = []
        if defined_here is not None:
            names = {revision: list(listing) for revision, listing in listings.items()}
            if any(listed != names[revisions[0]] for listed in names.values()):
                problems.append(f"the tool names differ between revisions: {names}")
            listings = {rev: {n: t for n, t in listing.items() if n in defined_here} for rev, listing in listings.items()}
        base = listings[revisions[0]]
        for revision in revisions[1:]:
            other = listings[revision]
            if list(other) != list(base):
                problems.append(f"{revision} lists {list(other)}, {revisions[0]} lists {list(base)}")
                continue
            problems += [
                f"{name} at {revision}: {json.dumps(core(other[name]))[:300]} vs {json.dumps(core(base[name]))[:300]}"
                for name in base
                if core(other[name]) != core(base[name])
            ]
        self.row(not problems, "all", surface, "same-definitions", "\n".join(problems) or f"{len(base)} tools identical at {revisions} beside gated fields" + (" (the tools clawmcp defines; names of all equal)" if defined_here else ""))

    async def run(self, surfaces: list[str]) -> int:
        for surface in surfaces:
            revisions = list(MATRIX["revisions"])
            revisions += [rev for rev, where in MATRIX["legacyRevisions"].items() if surface in where]
            for revision in revisions:
                await self.cell(revision, surface)
            self.same_definitions(surface)
        failed = sum(1 for ok, _, _ in self.rows if not ok)
        print(f"python-versions: {len(self.rows) - failed} passed, {failed} failed", flush=True)
        return 1 if failed else 0


def main() -> int:
    surfaces = sys.argv[1:]
    unknown = [s for s in surfaces if s not in MATRIX["surfaces"]]
    if not surfaces or unknown:
        print(f"usage: python_versions.py {'|'.join(MATRIX['surfaces'])}... (unknown: {unknown})", file=sys.stderr)
        return 2
    return anyio.run(Matrix().run, surfaces)


if __name__ == "__main__":
    sys.exit(main())
