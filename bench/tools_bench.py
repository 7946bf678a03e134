#!/usr/bin/env python3
"""Measure `clawmcp tools` against its floors, side by side in one run (bench/tools.sh starts
the real gateway and calls this). A script that reports numbers, not a test: nothing here
asserts a threshold; each target is printed next to the measured value.

  overhead  --calls tools/call sessions_list through `clawmcp tools` (MCP over stdio, then
            POST /tools/invoke) alternating call by call with a direct POST /tools/invoke of
            the same tool on one keep-alive connection from this process; p50/p90/p99 of each,
            the added p50 and the median of the paired differences (target: < 1 ms added at p50);
            then the same against an instant stub gateway (a Python HTTP server answering the real
            sessions_list body), where the gateway's own 10-40 ms jitter cannot hide the bridge
  grep      the `grep` tool (through a running `clawmcp tools`, so including the MCP round
            trip) against the `rg` binary (spawned per search, as a user runs it) on the same
            tree with equivalent flags, --runs alternating runs per pattern, medians
            (target: within 1.5x of rg)
  startup   spawn -> initialize answer and VmRSS after it, `clawmcp tools` against a bare
            `node -e` that reads stdin and answers initialize (Node 24 from the gateway
            install: the floor any Node-based bridge starts from), --runs alternating fresh
            spawns, medians (target: faster and smaller than that floor)

Usage: tools_bench.py --gateway-env ENV --clawmcp-bin BIN --tree DIR --rg RG --workdir DIR
                      [--calls N] [--runs N] [--results FILE --command STR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "e2e" / "gateway"))

from harness import Gateway, bridge_env  # noqa: E402
from mcp_stdio import StdioServer  # noqa: E402

from machine import mem_total_gib, percentile  # noqa: E402

# The floor: a Node process that reads stdin and answers the first line with a fixed
# initialize result (no JSON-RPC library, no tool table): less than any Node bridge does.
NODE_FLOOR = (
    "process.stdin.setEncoding('utf8');let b='';process.stdin.on('data',d=>{b+=d;let i;"
    "while((i=b.indexOf('\\n'))>=0){const m=JSON.parse(b.slice(0,i));b=b.slice(i+1);"
    "if(m.id!==undefined)process.stdout.write(JSON.stringify({jsonrpc:'2.0',id:m.id,result:"
    "{protocolVersion:'2024-11-05',capabilities:{tools:{}},serverInfo:{name:'floor',version:'0'}}})+'\\n')}})"
)
# An instant gateway stand-in for the isolated overhead measurement: answers every POST with
# the real sessions_list body of the seeded gateway (e2e/gateway/seed.mjs), so both
# paths see the same sub-millisecond server and the difference is what the bridge adds.
STUB_GATEWAY = r"""
import http.server, json, sys
BODY = json.dumps({"ok": True, "result": {"content": [{"type": "text", "text": json.dumps({"count": 1, "sessions": [{"key": "agent:main:main", "sessionId": "sess-main", "agentId": "main", "kind": "main", "channel": "imessage", "archived": False, "pinned": False, "displayName": "Harness Seeded Conversation", "updatedAt": 1795991581121, "model": "gpt-6-astra"}], "hasMore": False, "limitApplied": 100}, indent=2)}], "details": {"count": 1}}}).encode()
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""
# Patterns for the grep comparison: one that matches nothing (a full scan), one rare.
GREP_PATTERNS = [("no match", r"clawmcp_bench_no_such_token_[0-9]{6}"), ("rare match", r"DEFAULT_GATEWAY_HTTP_TOOL_DENY")]


class Direct:
    """POST /tools/invoke on one keep-alive socket with a pre-built request and a minimal
    response reader, so the baseline carries as little client overhead as possible (Python's
    http.client spends ~0.1 ms per response parsing headers, which would flatter the bridge)."""

    def __init__(self, url: str, token: str):
        parsed = urlparse(url)
        self.address = (parsed.hostname, parsed.port)
        self.token = token
        self.sock: socket.socket | None = None

    def connect(self) -> socket.socket:
        if self.sock is None:
            self.sock = socket.create_connection(self.address, timeout=60)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.sock

    def invoke(self, tool: str, args: dict) -> tuple[float, dict]:
        body = json.dumps({"tool": tool, "args": args}).encode()
        request = (
            f"POST /tools/invoke HTTP/1.1\r\nHost: {self.address[0]}:{self.address[1]}\r\n"
            f"Authorization: Bearer {self.token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        sock = self.connect()
        started = time.perf_counter()
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError(f"direct {tool}: the server closed the connection")
            data += chunk
        head, body_part = data.split(b"\r\n\r\n", 1)
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
        while len(body_part) < length:
            body_part += sock.recv(65536)
        elapsed = time.perf_counter() - started
        status = int(head.split(b" ", 2)[1])
        if status != 200:
            raise RuntimeError(f"direct {tool}: HTTP {status} {body_part[:200]!r}")
        return elapsed, json.loads(body_part)


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.gateway = Gateway.from_env_file(Path(args.gateway_env))
        self.token = self.gateway.token_file.read_text().strip()
        self.workdir = Path(args.workdir)
        self.env = bridge_env(self.workdir / "home") | {"OPENCLAW_WORKSPACE": str(self.workdir / "workspace")}
        self.argv = [args.clawmcp_bin, "tools", "--url", self.gateway.url, "--token-file", str(self.gateway.token_file)]
        self.sections: list[tuple[str, list[str], list[list[str]]]] = []
        self.failures: list[str] = []

    def spawn(self, name: str, argv: list[str], cwd: str) -> StdioServer:
        return StdioServer(name=name, argv=argv, env=self.env, stderr_log=self.workdir / f"{name}.stderr", cwd=cwd)

    # -- overhead -------------------------------------------------------------------------------
    def overhead(self) -> None:
        self.summary_overhead = self.measure_overhead(self.gateway.url, self.argv, "the real gateway")

    def overhead_stub(self) -> None:
        stub = subprocess.Popen([sys.executable, "-c", STUB_GATEWAY], stdout=subprocess.PIPE, text=True)
        try:
            port = int(stub.stdout.readline())
            url = f"ws://127.0.0.1:{port}"  # the bridge takes the gateway URL; it POSTs to http
            argv = [self.args.clawmcp_bin, "tools", "--url", url, "--token-file", str(self.gateway.token_file)]
            self.summary_overhead_stub = self.measure_overhead(url, argv, "an instant stub gateway (isolates the bridge)")
        finally:
            stub.terminate()
            stub.wait(timeout=10)

    def measure_overhead(self, url: str, argv: list[str], against: str) -> str:
        bridge = self.spawn("clawmcp-tools", argv, str(self.workdir))
        direct = Direct(url, self.token)
        try:
            bridge.initialize(timeout=60)
            listed = bridge.request("tools/list", {}, timeout=60).result["tools"]
            if "sessions_list" not in {t["name"] for t in listed}:
                raise RuntimeError("clawmcp tools does not list sessions_list")
            for _ in range(20):  # warm both paths (connection pools, JIT in the gateway)
                bridge.call_tool("sessions_list", {}, timeout=60)
                direct.invoke("sessions_list", {})
            ours, floor = [], []
            for _ in range(self.args.calls):
                reply = bridge.call_tool("sessions_list", {}, timeout=60)
                if reply.error or reply.result.get("isError"):
                    raise RuntimeError(f"bridge call failed: {reply.message}")
                ours.append(reply.latency)
                floor.append(direct.invoke("sessions_list", {})[0])
        finally:
            bridge.close()
        paired = statistics.median(o - f for o, f in zip(ours, floor, strict=True))
        ms = lambda s: f"{s * 1000:.3f}"  # noqa: E731
        rows = [
            ["clawmcp tools (MCP stdio -> POST)", ms(percentile(ours, 50)), ms(percentile(ours, 90)), ms(percentile(ours, 99))],
            ["direct POST /tools/invoke", ms(percentile(floor, 50)), ms(percentile(floor, 90)), ms(percentile(floor, 99))],
        ]
        added = percentile(ours, 50) - percentile(floor, 50)
        self.sections.append(
            (
                f"Per-call overhead: sessions_list against {against}, {self.args.calls} calls each, alternating",
                ["path", "p50 ms", "p90 ms", "p99 ms"],
                rows,
            )
        )
        return (
            f"against {against}: added at p50 {added * 1000:.3f} ms (median of paired differences "
            f"{paired * 1000:.3f} ms); ratio p50 {percentile(ours, 50) / percentile(floor, 50):.2f}x; target < 1 ms added at p50"
        )

    # -- grep -----------------------------------------------------------------------------------
    def grep(self) -> None:
        tree = self.args.tree
        bridge = self.spawn("clawmcp-tools-grep", self.argv, tree)
        rows, ratios = [], []
        try:
            bridge.initialize(timeout=60)
            for label, pattern in GREP_PATTERNS:
                rg_argv = [self.args.rg, "--hidden", "--no-heading", "-n", "-e", pattern, "."]
                ours_times, rg_times, outputs = [], [], {}
                for run in range(self.args.runs + 1):  # run 0 warms the page cache for both
                    reply = bridge.call_tool("grep", {"pattern": pattern, "output_mode": "content", "-n": True}, timeout=600)
                    if reply.error or reply.result.get("isError"):
                        raise RuntimeError(f"grep {label}: {reply.message}")
                    started = time.perf_counter()
                    done = subprocess.run(rg_argv, cwd=tree, capture_output=True, timeout=600)
                    rg_elapsed = time.perf_counter() - started
                    if done.returncode not in (0, 1):
                        raise RuntimeError(f"rg {label}: exit {done.returncode} {done.stderr[:300]!r}")
                    outputs = {"ours": reply.result["content"][0]["text"], "rg": done.stdout.decode("utf-8", "replace")}
                    if run:
                        ours_times.append(reply.latency)
                        rg_times.append(rg_elapsed)
                ours_matches = sum(1 for line in outputs["ours"].splitlines() if ":" in line and line[:1] not in "[(")
                # rg reports matches before the first NUL of a file it then calls binary; our grep
                # skips such files whole (by design), so compare text files only.
                rg_lines = outputs["rg"].splitlines()
                binary = {line.split(": WARNING:")[0] for line in rg_lines if ": WARNING: stopped searching binary file" in line}
                rg_matches = sum(1 for line in rg_lines if "WARNING:" not in line and line.split(":")[0] not in binary)
                if ours_matches != rg_matches:
                    self.failures.append(f"grep {label}: ours found {ours_matches} lines, rg {rg_matches}")
                ratio = statistics.median(ours_times) / statistics.median(rg_times)
                ratios.append(ratio)
                rows.append(
                    [
                        label,
                        str(rg_matches),
                        f"{statistics.median(ours_times) * 1000:.1f}",
                        f"{statistics.median(rg_times) * 1000:.1f}",
                        f"{ratio:.2f}x",
                    ]
                )
        finally:
            bridge.close()
        files = sum(len(f) for _, _, f in os.walk(tree))
        size = sum(os.path.getsize(os.path.join(d, n)) for d, _, fs in os.walk(tree) for n in fs)
        self.sections.append(
            (
                f"grep vs rg: {files} files, {size / 1e6:.0f} MB, medians of {self.args.runs} runs each",
                ["pattern", "matching lines", "clawmcp grep ms", "rg ms", "ours/rg"],
                rows,
            )
        )
        self.summary_grep = f"worst ours/rg {max(ratios):.2f}x; target within 1.5x"

    # -- startup --------------------------------------------------------------------------------
    def startup(self) -> None:
        node = [self.gateway.node, "-e", NODE_FLOOR]
        times: dict[str, list[float]] = {"ours": [], "node": []}
        rss: dict[str, list[int]] = {"ours": [], "node": []}
        for run in range(self.args.runs + 1):  # run 0 is a warm-up (page cache) for both
            for kind, argv in (("ours", self.argv), ("node", node)) if run % 2 else (("node", node), ("ours", self.argv)):
                server = self.spawn(f"startup-{kind}", argv, str(self.workdir))
                try:
                    reply = server.initialize(timeout=60)
                    if reply.error:
                        raise RuntimeError(f"{kind} initialize: {reply.error}")
                    elapsed = reply.received_at - server.spawned_at
                    kb, _ = server.rss_kb()
                finally:
                    server.close()
                if run:
                    times[kind].append(elapsed)
                    rss[kind].append(kb)
        med = {k: statistics.median(v) for k, v in times.items()}
        mem = {k: statistics.median(v) for k, v in rss.items()}
        self.sections.append(
            (
                f"Start-up: spawn -> initialize answer, VmRSS after it; medians of {self.args.runs} spawns each, alternating",
                ["process", "spawn -> initialize ms", "VmRSS MiB"],
                [
                    ["clawmcp tools (release)", f"{med['ours'] * 1000:.1f}", f"{mem['ours'] / 1024:.1f}"],
                    [f"bare node -e floor ({self.node_version()})", f"{med['node'] * 1000:.1f}", f"{mem['node'] / 1024:.1f}"],
                ],
            )
        )
        self.summary_startup = (
            f"clawmcp tools starts {med['node'] / med['ours']:.1f}x faster and uses {mem['node'] / mem['ours']:.1f}x less "
            f"memory than the bare Node floor; target: faster and smaller"
        )

    def node_version(self) -> str:
        return subprocess.run([self.gateway.node, "--version"], capture_output=True, text=True).stdout.strip()

    # -- report ---------------------------------------------------------------------------------
    def render(self, markdown: bool) -> str:
        lines: list[str] = []
        for title, header, rows in self.sections:
            if markdown:
                lines += [f"## {title}", "", "| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
                lines += ["| " + " | ".join(row) + " |" for row in rows]
            else:
                widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
                lines += [title, "  " + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
                lines += ["  " + "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
            lines.append("")
        summaries = [getattr(self, n, None) for n in ("summary_overhead", "summary_overhead_stub", "summary_grep", "summary_startup")]
        lines += [("- " if markdown else "") + s for s in summaries if s]
        lines += [("- " if markdown else "") + f"CHECK FAILED: {f}" for f in self.failures]
        return "\n".join(lines)

    def machine(self) -> str:
        rg = subprocess.run([self.args.rg, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        return (
            f"Machine: {os.cpu_count()} cores, {mem_total_gib():.0f} GiB RAM, kernel {platform.release()}; "
            f"openclaw {self.gateway.openclaw_version} gateway on 127.0.0.1; {rg}; node {self.node_version()}."
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--gateway-env", "--clawmcp-bin", "--tree", "--rg", "--workdir"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--results")
    parser.add_argument("--command", default="bench/tools.sh")
    args = parser.parse_args()
    bench = Bench(args)
    load_before = os.getloadavg()
    errors = []
    for name in ("overhead", "overhead_stub", "grep", "startup"):
        try:
            getattr(bench, name)()
        except Exception as err:  # noqa: BLE001 - report every section that could not be measured
            errors.append(f"{name}: {err}")
    load_after = os.getloadavg()
    print(bench.render(markdown=False))
    for error in errors:
        print(f"NOT MEASURED: {error}")
    if args.results and not errors:
        stamp = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
        text = "\n".join(
            [
                "# clawmcp tools benchmark results",
                "",
                f"Generated by `{args.command}` on {stamp} (release build).",
                "",
                bench.machine(),
                f"Load average (1/5/15 min) before: {'/'.join(f'{x:.2f}' for x in load_before)}; "
                f"after: {'/'.join(f'{x:.2f}' for x in load_after)}.",
                "",
                "How to read: each pair is measured in the same run, alternating, so both sides see the same "
                "machine load. Overhead: both paths call the same tool on the same server; the direct path is a "
                "pre-built request on a raw keep-alive socket (the least client work possible), the bridge path a "
                "JSON-RPC line over the bridge's stdin; the stub rows remove the real gateway's 10-40 ms jitter. "
                "grep: `grep` through a running `clawmcp tools` (MCP round trip included) against a spawned "
                "`rg --hidden -n` on the same files (a copy without .git/node_modules, which our walk skips by "
                "design); matching lines are compared on text files (our grep skips a file with a NUL byte "
                "whole, rg reports matches before it). Start-up: the floor is the least a Node-based bridge "
                "must do.",
                "",
                bench.render(markdown=True),
                "",
            ]
        )
        Path(args.results).write_text(text)
    return 1 if errors or bench.failures else 0


if __name__ == "__main__":
    sys.exit(main())
