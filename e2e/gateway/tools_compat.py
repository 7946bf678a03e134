#!/usr/bin/env python3
"""`clawmcp tools` against the REAL OpenClaw gateway (started by start.sh --seed).

Checks (each prints a PASS/FAIL row; exit 1 if any failed, nothing is skipped):
  initialize            answered, serverInfo clawmcp-tools (latency reported)
  list-is-http-set      the gateway tools listed are exactly the tools the gateway serves over
                        HTTP: every candidate name (tools.catalog, tools.effective, our list) is
                        probed with POST /tools/invoke {args:{}} and a non-404 means "served"
                        (sessions_yield aside: ours shadows the gateway's)
  live-schemas          each listed tool's inputSchema is the gateway's own (attach.grant ->
                        loopback MCP tools/list, fetched here independently), overlays aside;
                        descriptions are tools.effective's rawDescription
  same-result:<tool>    sessions_list, session_status, sessions_history: the MCP content equals
                        result.content of a direct POST /tools/invoke (session_status digits
                        masked: it prints the clock and uptime)
  tool-error            sessions_history {} is an isError result carrying the gateway's message
  denied-tool           sessions_spawn (default HTTP deny) is not listed, is refused by the
                        bridge without reaching the gateway, and really is a 404 over HTTP
  unknown-tool          a never-advertised name is refused
  regen                 `clawmcp tools regen` writes a snapshot with exactly the listed tools,
                        and the bundled 2026.9.6 snapshot's schemas equal the live ones
  python-sdk            the official Python `mcp` SDK drives the local tools over stdio
                        (write/read/edit/glob/grep/exec/process)
  eof-exit              closing stdin ends the process with status 0

Usage: tools_compat.py --gateway-env ENV --clawmcp-bin BIN --sdk-python PY --artifacts DIR
       tools_compat.py --sdk-driver BIN URL TOKEN_FILE WORKDIR   (run by the SDK's python)
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUNDLED = REPO / "crates/tools/data/gateway-tools-2026.9.6.json"
LOCAL_TOOLS = ["read", "write", "edit", "exec", "glob", "grep", "process", "sessions_yield"]
# Properties the bridge adds to gateway schemas for upstream compatibility (compat.rs).
OVERLAY_PROPERTIES = {"to", "filePath", "components", "sessionKey", "thread", "limit", "path", "paths", "member_type"}
SEEDED = "agent:main:main"
SAME_RESULT_CALLS = [
    ("sessions_list", {}),
    ("session_status", {"sessionKey": SEEDED}),
    ("sessions_history", {"sessionKey": SEEDED, "limit": 2}),
]


class Failed(Exception):
    pass


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Failed(message)


class GatewayHttp:
    """Direct POST /tools/invoke over one keep-alive connection (the comparison baseline)."""

    def __init__(self, url: str, token: str):
        parsed = urlparse(url)
        self.host, self.port, self.token = parsed.hostname, parsed.port, token
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)

    def invoke(self, body: dict[str, Any]) -> tuple[int, Any]:
        payload = json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        for attempt in range(2):
            try:
                self.conn.request("POST", "/tools/invoke", payload, headers)
                response = self.conn.getresponse()
                raw = response.read()
                break
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                if attempt:
                    raise
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw.decode("utf-8", "replace")


def mask_digits(value: Any) -> Any:
    return json.loads(re.sub(r"\d+", "#", json.dumps(value, ensure_ascii=False)))


def loopback_tools(gateway: Any) -> dict[str, dict[str, Any]]:
    """The gateway's own schemas: attach.grant, then MCP initialize + tools/list on its URL."""
    grant = gateway.rpc("attach.grant", {"sessionKey": SEEDED, "ttlMs": 60000})
    url = urlparse(grant["mcpConfig"]["mcpServers"]["openclaw"]["url"])
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    headers = {
        "Authorization": f"Bearer {grant['token']}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }

    def call(request_id: int, method: str, params: dict[str, Any]) -> Any:
        conn.request("POST", url.path, json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}), headers)
        response = conn.getresponse()
        return json.loads(response.read())["result"]

    call(1, "initialize", {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}})
    tools = call(2, "tools/list", {})["tools"]
    gateway.rpc("attach.revoke", {"token": grant["token"]})
    return {tool["name"]: tool for tool in tools}


def effective_tools(gateway: Any) -> dict[str, dict[str, Any]]:
    payload = gateway.rpc("tools.effective", {"sessionKey": SEEDED})
    return {tool["id"]: tool for group in payload["groups"] for tool in group["tools"]}


def catalog_ids(gateway: Any) -> set[str]:
    payload = gateway.rpc("tools.catalog", {"agentId": "main"})
    return {tool["id"] for group in payload["groups"] for tool in group["tools"]}


def content_of(reply: Any) -> tuple[list[Any], bool]:
    expect(reply.error is None, f"JSON-RPC error: {reply.error}")
    return reply.result["content"], bool(reply.result.get("isError"))


def first_text(reply: Any) -> str:
    content, _ = content_of(reply)
    return content[0].get("text", "") if content else ""


class Suite:
    def __init__(self, args: argparse.Namespace):
        sys.path.insert(0, str(HERE))
        from harness import Gateway, bridge_env  # noqa: PLC0415  (shared harness, imported at run time)

        self.gateway = Gateway.from_env_file(Path(args.gateway_env))
        self.bin = args.clawmcp_bin
        self.sdk_python = args.sdk_python
        self.artifacts = Path(args.artifacts)
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self.token = self.gateway.token_file.read_text().strip()
        self.http = GatewayHttp(self.gateway.url, self.token)
        self.home = self.artifacts / "home"
        self.env = bridge_env(self.home) | {"OPENCLAW_WORKSPACE": str(self.home / "workspace")}
        self.flags = ["--url", self.gateway.url, "--token-file", str(self.gateway.token_file)]
        self.rows: list[tuple[str, bool, str]] = []
        self.server: Any = None
        self.listed: dict[str, dict[str, Any]] = {}

    def check(self, name: str, body) -> None:
        try:
            detail = body() or ""
            self.rows.append((name, True, detail))
        except Exception as err:  # noqa: BLE001 - every failure becomes a FAIL row
            detail = str(err) if isinstance(err, Failed) else f"{type(err).__name__}: {err}\n{traceback.format_exc()}"
            self.rows.append((name, False, detail))

    def start_bridge(self):
        from mcp_stdio import StdioServer  # noqa: PLC0415

        self.server = StdioServer(
            name="clawmcp-tools",
            argv=[self.bin, "tools", *self.flags],
            env=self.env,
            transcript=self.artifacts / "clawmcp-tools.transcript",
            stderr_log=self.artifacts / "clawmcp-tools.stderr",
            cwd=str(self.home),
        )

    # -- checks ------------------------------------------------------------------------------------
    def initialize(self) -> str:
        reply = self.server.initialize(timeout=30)
        expect(reply.error is None, f"initialize failed: {reply.error}")
        expect(reply.result["serverInfo"]["name"] == "clawmcp-tools", f"serverInfo {reply.result['serverInfo']}")
        listed = self.server.request("tools/list", {}, timeout=30)
        expect(listed.error is None, f"tools/list failed: {listed.error}")
        self.listed = {tool["name"]: tool for tool in listed.result["tools"]}
        names = list(self.listed)
        expect(names[: len(LOCAL_TOOLS)] == LOCAL_TOOLS, f"local tools first: {names}")
        return f"initialize {reply.latency * 1000:.0f} ms, first tools/list {listed.latency * 1000:.0f} ms, {len(names)} tools"

    def gateway_names(self) -> set[str]:
        return set(self.listed) - set(LOCAL_TOOLS)

    def list_is_http_set(self) -> str:
        candidates = catalog_ids(self.gateway) | set(effective_tools(self.gateway)) | self.gateway_names()
        served = set()
        for name in sorted(candidates):
            status, _ = self.http.invoke({"tool": name, "args": {}})
            if status != 404:
                served.add(name)
        served.discard("sessions_yield")
        (self.artifacts / "served-over-http.json").write_text(json.dumps(sorted(served), indent=2) + "\n")
        extra, missing = self.gateway_names() - served, served - self.gateway_names()
        expect(not extra and not missing, f"listed but not served: {sorted(extra)}; served but not listed: {sorted(missing)}")
        return f"{len(served)} tools served over HTTP (of {len(candidates)} probed), all listed, nothing else"

    def live_schemas(self) -> str:
        loopback, effective = loopback_tools(self.gateway), effective_tools(self.gateway)
        compared = 0
        for name in sorted(self.gateway_names()):
            ours = self.listed[name]
            expect(ours["description"] == effective[name].get("rawDescription"), f"{name}: description differs from tools.effective")
            if name not in loopback:
                expect(ours["inputSchema"].get("type") == "object", f"{name}: no object schema")
                continue
            theirs = loopback[name]["inputSchema"]
            ours_schema = dict(ours["inputSchema"])
            ours_props, their_props = ours_schema.pop("properties", {}), dict(theirs).get("properties", {})
            added = set(ours_props) - set(their_props)
            expect(added <= OVERLAY_PROPERTIES, f"{name}: unexpected extra properties {sorted(added)}")
            expect(all(ours_props[k] == v for k, v in their_props.items()), f"{name}: a property differs from the gateway's")
            rest = {k: v for k, v in theirs.items() if k != "properties"}
            expect(ours_schema == rest, f"{name}: schema keywords differ: {ours_schema} vs {rest}")
            compared += 1
        return f"{compared} schemas equal the gateway's loopback tools/list; the rest are owner-only (not in a grant)"

    def same_result(self, tool: str, args: dict[str, Any]) -> str:
        reply = self.server.call_tool(tool, args, timeout=60)
        status, direct = self.http.invoke({"tool": tool, "args": args})
        expect(status == 200 and direct.get("ok") is True, f"direct POST: HTTP {status} {str(direct)[:300]}")
        content, is_error = content_of(reply)
        expect(not is_error, f"isError: {content}")
        ours, theirs = content, direct["result"]["content"]
        if tool == "session_status":
            ours, theirs = mask_digits(ours), mask_digits(theirs)
        expect(ours == theirs, f"content differs:\n  bridge: {json.dumps(ours)[:600]}\n  direct: {json.dumps(theirs)[:600]}")
        return f"{len(json.dumps(content))} bytes of content identical"

    def tool_error(self) -> str:
        reply = self.server.call_tool("sessions_history", {}, timeout=30)
        content, is_error = content_of(reply)
        status, direct = self.http.invoke({"tool": "sessions_history", "args": {}})
        expect(status == 400, f"direct POST gave HTTP {status}")
        message = direct["error"]["message"]
        expect(is_error and message in first_text(reply), f"isError={is_error} text={first_text(reply)!r}")
        return first_text(reply)

    def denied_tool(self) -> str:
        expect("sessions_spawn" not in self.listed, "sessions_spawn is listed")
        reply = self.server.call_tool("sessions_spawn", {"task": "e2e"}, timeout=30)
        _, is_error = content_of(reply)
        expect(is_error and first_text(reply).startswith("Unknown tool: sessions_spawn"), first_text(reply))
        status, direct = self.http.invoke({"tool": "sessions_spawn", "args": {"task": "e2e"}})
        expect(status == 404, f"the gateway itself answered HTTP {status}: {direct}")
        return "not listed; refused; the gateway's own answer is 404"

    def unknown_tool(self) -> str:
        reply = self.server.call_tool("no_such_tool", {}, timeout=30)
        _, is_error = content_of(reply)
        expect(is_error and "Unknown tool: no_such_tool" in first_text(reply), first_text(reply))
        return first_text(reply)[:80]

    def regen(self) -> str:
        out = self.artifacts / "tools-snapshot.json"
        done = subprocess.run([self.bin, "tools", "regen", *self.flags, "--output", str(out)], env=self.env, capture_output=True, text=True, timeout=120)
        expect(done.returncode == 0, f"exit {done.returncode}: {done.stderr[-800:]}")
        expect(done.stdout.strip() == str(out), f"stdout {done.stdout!r}")
        snapshot = json.loads(out.read_text())
        names = {tool["name"] for tool in snapshot["tools"]}
        expect(names == self.gateway_names(), f"snapshot {sorted(names)} vs listed {sorted(self.gateway_names())}")
        bundled = {tool["name"]: tool for tool in json.loads(BUNDLED.read_text())["tools"]}
        differ = [t["name"] for t in snapshot["tools"] if bundled.get(t["name"], {}).get("inputSchema") != t["inputSchema"]]
        expect(not differ, f"bundled snapshot schemas differ from the live gateway for {differ}")
        return f"{len(names)} tools, openclaw {snapshot['openclawVersion']}; bundled schemas equal the live ones; {done.stderr.strip().splitlines()[-1]}"

    def python_sdk(self) -> str:
        workdir = self.artifacts / "sdk-workdir"
        workdir.mkdir(exist_ok=True)
        done = subprocess.run(
            [self.sdk_python, str(Path(__file__)), "--sdk-driver", self.bin, self.gateway.url, str(self.gateway.token_file), str(workdir)],
            env=self.env | {"PYTHONPATH": ""},
            capture_output=True,
            text=True,
            timeout=180,
        )
        (self.artifacts / "python-sdk.log").write_text(done.stdout + done.stderr)
        expect(done.returncode == 0, f"exit {done.returncode}:\n{done.stdout[-1500:]}{done.stderr[-1500:]}")
        return done.stdout.strip().splitlines()[-1]

    def eof_exit(self) -> str:
        code = self.server.close(grace=15)
        expect(code == 0, f"exit status {code}; {self.server.stderr_tail(5)}")
        expect(not self.server.protocol_errors, f"protocol errors: {self.server.protocol_errors}")
        return "exit 0 after stdin closed; stdout carried JSON-RPC only"

    def run(self) -> int:
        self.start_bridge()
        self.check("initialize", self.initialize)
        if not self.listed:
            self.rows.append(("list-is-http-set", False, "no tool list (initialize failed)"))
        else:
            self.check("list-is-http-set", self.list_is_http_set)
            self.check("live-schemas", self.live_schemas)
            for tool, args in SAME_RESULT_CALLS:
                self.check(f"same-result:{tool}", lambda tool=tool, args=args: self.same_result(tool, args))
            self.check("tool-error", self.tool_error)
            self.check("denied-tool", self.denied_tool)
            self.check("unknown-tool", self.unknown_tool)
        self.check("eof-exit", self.eof_exit)
        self.check("regen", self.regen)
        self.check("python-sdk", self.python_sdk)
        width = max(len(name) for name, _, _ in self.rows)
        for name, ok, detail in self.rows:
            print(f"{'PASS' if ok else 'FAIL'}  {name.ljust(width)}  {detail.splitlines()[0] if ok and detail else detail}")
        failed = sum(1 for _, ok, _ in self.rows if not ok)
        print(f"tools-compat: {len(self.rows) - failed} passed, {failed} failed")
        (self.artifacts / "tools-compat.json").write_text(json.dumps([{"check": n, "ok": ok, "detail": d} for n, ok, d in self.rows], indent=2))
        return 1 if failed else 0


# -- the Python SDK driver (runs under the SDK's virtualenv python) ----------------------------------
def sdk_driver(binary: str, url: str, token_file: str, workdir: str) -> int:
    import anyio
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=binary, args=["tools", "--url", url, "--token-file", token_file], env=dict(os.environ), cwd=workdir
    )

    # A unique sleep length makes the background job findable in /proc (and nothing else).
    marker = f"sleep 30.{os.getpid()}"

    def marker_running() -> bool:
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes().replace(b"\0", b" "):
                    return True
            except OSError:
                continue
        return False

    def text_of(result: Any) -> str:
        return "".join(block.text for block in result.content if getattr(block, "type", None) == "text")

    async def main() -> None:
        async with Client(params, read_timeout_seconds=60, raise_exceptions=True) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            expect(names[: len(LOCAL_TOOLS)] == LOCAL_TOOLS, f"tools: {names}")
            steps = [
                ("write", {"path": "notes/plan.txt", "content": "alpha\nbeta\n"}, None),
                ("read", {"path": "notes/plan.txt"}, "beta"),
                ("edit", {"path": "notes/plan.txt", "oldText": "beta", "newText": "gamma"}, None),
                ("read", {"file_path": str(Path(workdir) / "notes/plan.txt")}, "gamma"),
                ("glob", {"pattern": "**/*.txt"}, "notes/plan.txt"),
                ("grep", {"pattern": "gam+a"}, "notes/plan.txt"),
                ("exec", {"command": "printf sdk-%s ok"}, "sdk-ok"),
                ("exec", {"command": marker, "background": True}, "bg-"),
                ("process", {"action": "list"}, marker),
            ]
            for name, args, needle in steps:
                result = await client.call_tool(name, args)
                expect(not result.is_error, f"{name} {args}: {text_of(result)}")
                if needle is not None:
                    expect(needle in text_of(result), f"{name}: {needle!r} not in {text_of(result)[:300]!r}")
                print(f"ok {name}")
            expect((Path(workdir) / "notes/plan.txt").read_text() == "alpha\ngamma\n", "the edit is on disk")
            missing = await client.call_tool("read", {"path": "nope.txt"})
            expect(missing.is_error, "reading a missing file is a tool error")
            expect(marker_running(), f"the background job `{marker}` runs")
        deadline = time.monotonic() + 15
        while marker_running() and time.monotonic() < deadline:
            await anyio.sleep(0.1)
        expect(not marker_running(), f"`{marker}` outlived the session")
        print(f"python mcp SDK drove {len(steps)} local tool calls over stdio; missing file = isError; the background job ended with the session")

    anyio.run(main)
    return 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--sdk-driver":
        return sdk_driver(*sys.argv[2:6])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gateway-env", required=True)
    parser.add_argument("--clawmcp-bin", required=True)
    parser.add_argument("--sdk-python", required=True)
    parser.add_argument("--artifacts", required=True)
    return Suite(parser.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
