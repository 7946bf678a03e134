#!/usr/bin/env python3
"""Measure `clawmcp serve` against the real `openclaw mcp serve`, side by side, against the
same real gateway in one run (bench/serve.sh starts the gateway and calls this).

A script that reports numbers, not a test: nothing here asserts a threshold. The targets
(>= 50x faster to initialize, >= 20x less memory) are printed next to the measured ratios.

Measurements (both bridges get identical flags: --url --token-file --claude-channel-mode off,
and identical private environments, see e2e/gateway/harness.py):
  startup   spawn -> initialize result, and spawn -> first conversations_list result (the
            first call that needs the gateway connection), median of --runs fresh spawns
            each, plus the CPU time the bridge used until initialize (wall time on a shared
            2-core machine moves with the load; CPU time much less), interleaved A/B then B/A so both see the same background load; one untimed
            warm-up spawn each first (device pairing, Node's compile cache)
  memory    VmRSS summed over the bridge's process tree after initialize + first call, and
            after --events live events (chat.inject through one gateway connection) have been
            queued by both bridges, which run at the same time; plus CPU time each bridge
            spent ingesting those events
  latency   --calls tools/call each of conversations_list (a gateway round trip) and
            events_poll past the newest cursor (bridge-local), alternating between the two
            bridges call by call; p50 / p99 from request write to answer read

Usage: serve_bench.py --gateway-env ROOT/gateway.env --clawmcp-bin PATH --workdir DIR
                      [--runs N] [--events N] [--calls N] [--results FILE --command STR]
Prints a table; with --results also writes it as markdown with the machine facts.
Exits 1 if a bridge could not be measured (the numbers that were measured are still printed).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "e2e" / "gateway"))

from harness import SEEDED_SESSION, Gateway, bridge_argv, bridge_env  # noqa: E402
from mcp_stdio import Reply, ServerGone, StdioServer  # noqa: E402
from procutil import tree_cpu_seconds  # noqa: E402

from machine import cpu_model, mem_total_gib, os_name, percentile  # noqa: E402

KINDS = ("openclaw", "clawmcp")
LABELS = {"openclaw": "openclaw mcp serve", "clawmcp": "clawmcp serve"}
MODE = "off"
INITIALIZE_TIMEOUT = 120.0
EVENT_INGEST_TIMEOUT = 300.0
INJECT_IN_FLIGHT = 8


@dataclass
class Numbers:
    init_s: list[float] = field(default_factory=list)
    init_cpu_s: list[float] = field(default_factory=list)
    first_list_s: list[float] = field(default_factory=list)
    rss_idle_kb: int | None = None
    rss_events_kb: int | None = None
    procs: int | None = None
    ingest_cpu_s: float | None = None
    latency_s: dict[str, list[float]] = field(default_factory=dict)
    error: str = ""


class Bench:
    def __init__(self, gateway: Gateway, clawmcp_bin: str, workdir: Path):
        self.gateway, self.clawmcp_bin, self.workdir = gateway, clawmcp_bin, workdir
        self.numbers = {kind: Numbers() for kind in KINDS}

    def spawn(self, kind: str, tag: str) -> StdioServer:
        # One HOME per bridge kind for the whole run: later spawns reuse the paired device
        # identity, like a user's second session does.
        home = self.workdir / kind
        return StdioServer(
            name=kind,
            argv=bridge_argv(kind, self.gateway, MODE, self.clawmcp_bin),
            env=bridge_env(home),
            stderr_log=self.workdir / f"{kind}-{tag}.stderr",
            cwd=str(home),
        )

    def fail(self, kind: str, why: str, server: StdioServer | None = None) -> None:
        tail = f"; stderr: {server.stderr_tail(5)}" if server else ""
        self.numbers[kind].error = self.numbers[kind].error or f"{why}{tail}"
        print(f"[serve-bench] {kind}: {why}{tail}", file=sys.stderr)

    def ready(self, server: StdioServer, init: Reply | None = None) -> tuple[Reply, Reply]:
        """initialize (unless already done), then the first conversations_list; raises on any failure."""
        init = init or server.initialize(INITIALIZE_TIMEOUT)
        if init.error is not None:
            raise RuntimeError(f"initialize failed: {init.error}")
        first = server.call_tool("conversations_list", {}, timeout=INITIALIZE_TIMEOUT)
        if first.error is not None or (first.result or {}).get("isError"):
            raise RuntimeError(f"conversations_list failed: {first.message}")
        return init, first

    def startup(self, runs: int) -> None:
        for round_no in range(runs + 1):  # round 0 is the untimed warm-up
            order = KINDS if round_no % 2 else tuple(reversed(KINDS))
            for kind in order:
                if self.numbers[kind].error:
                    continue
                server = self.spawn(kind, "startup")
                try:
                    init = server.initialize(INITIALIZE_TIMEOUT)
                    init_cpu = tree_cpu_seconds(server.proc.pid)
                    init, first = self.ready(server, init)
                    if round_no:
                        self.numbers[kind].init_s.append(init.received_at - server.spawned_at)
                        self.numbers[kind].init_cpu_s.append(init_cpu)
                        self.numbers[kind].first_list_s.append(first.received_at - server.spawned_at)
                except (RuntimeError, ServerGone, TimeoutError) as err:
                    self.fail(kind, f"startup run {round_no}: {err}", server)
                finally:
                    server.close(grace=10.0)
            done = ", ".join(f"{k} {statistics.median(self.numbers[k].init_s):.3f}s" for k in KINDS if self.numbers[k].init_s)
            print(f"[serve-bench] startup round {round_no}/{runs} {('(warm-up)' if not round_no else done)}", file=sys.stderr)

    def memory_and_latency(self, events: int, calls: int) -> None:
        servers: dict[str, StdioServer] = {}
        try:
            for kind in KINDS:
                if self.numbers[kind].error:
                    continue
                server = self.spawn(kind, "load")
                try:
                    self.ready(server)
                    servers[kind] = server
                except (RuntimeError, ServerGone, TimeoutError) as err:
                    self.fail(kind, f"load run: {err}", server)
                    server.close(grace=5.0)
            time.sleep(1.0)  # let start-up allocations settle before reading idle memory
            cpu_before = {}
            for kind, server in servers.items():
                self.numbers[kind].rss_idle_kb, _ = server.rss_kb()
                cpu_before[kind] = tree_cpu_seconds(server.proc.pid)

            print(f"[serve-bench] injecting {events} events through the gateway", file=sys.stderr)
            started = time.perf_counter()
            summary = self.gateway.rpc(
                "chat.inject",
                {"sessionKey": SEEDED_SESSION, "message": "bench event {i}"},
                count=events,
                in_flight=INJECT_IN_FLIGHT,
                timeout_s=int(EVENT_INGEST_TIMEOUT),
            )
            print(f"[serve-bench] gateway took {time.perf_counter() - started:.1f}s: {summary}", file=sys.stderr)
            for kind, server in servers.items():
                try:
                    wait_for_cursor(server, events)
                except (RuntimeError, ServerGone, TimeoutError) as err:
                    self.fail(kind, f"did not queue {events} events: {err}", server)
                    continue
                self.numbers[kind].ingest_cpu_s = tree_cpu_seconds(server.proc.pid) - cpu_before[kind]
            time.sleep(1.0)
            for kind, server in servers.items():
                if not self.numbers[kind].error:
                    self.numbers[kind].rss_events_kb, self.numbers[kind].procs = server.rss_kb()

            calls_by_name = {
                "conversations_list": {},
                "events_poll (past newest)": {"after_cursor": events},
            }
            for label, arguments in calls_by_name.items():
                tool = label.split()[0]
                print(f"[serve-bench] {calls} x {tool} per bridge", file=sys.stderr)
                for _ in range(calls):
                    for kind, server in servers.items():
                        if self.numbers[kind].error:
                            continue
                        try:
                            reply = server.call_tool(tool, arguments)
                            if reply.error is not None or (reply.result or {}).get("isError"):
                                raise RuntimeError(f"{tool} failed: {reply.message}")
                            self.numbers[kind].latency_s.setdefault(label, []).append(reply.latency)
                        except (RuntimeError, ServerGone, TimeoutError) as err:
                            self.fail(kind, str(err), server)
        finally:
            for server in servers.values():
                server.close(grace=10.0)


def wait_for_cursor(server: StdioServer, cursor: int) -> None:
    """Until the bridge has queued the event with this cursor (events are numbered from 1)."""
    deadline = time.perf_counter() + EVENT_INGEST_TIMEOUT
    while time.perf_counter() < deadline:
        reply = server.call_tool("events_poll", {"after_cursor": cursor - 1, "limit": 1})
        structured = (reply.result or {}).get("structuredContent") or {}
        if structured.get("events"):
            return
        time.sleep(0.2)
    raise TimeoutError(f"cursor {cursor} not reached within {EVENT_INGEST_TIMEOUT:.0f}s")


# -- report ---------------------------------------------------------------------------------------


def fmt_s(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value * 1000:.2f} ms" if value < 1 else f"{value:.2f} s"


def fmt_kb(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 1024:.1f} MiB"


def ratio(ref: float | None, ours: float | None) -> str:
    if not ref or not ours:
        return "n/a"
    return f"{ref / ours:.1f}x"


def table(bench: Bench, events: int, calls: int, runs: int) -> list[str]:
    ref, ours = bench.numbers["openclaw"], bench.numbers["clawmcp"]
    median = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
    span = lambda xs: f" ({fmt_s(min(xs))}-{fmt_s(max(xs))})" if xs else ""  # noqa: E731
    rows = [
        "| metric | openclaw mcp serve | clawmcp serve | ratio (openclaw / clawmcp) | target |",
        "| --- | --- | --- | --- | --- |",
        f"| spawn -> initialize, median of {runs} (min-max) | {fmt_s(median(ref.init_s))}{span(ref.init_s)} "
        f"| {fmt_s(median(ours.init_s))}{span(ours.init_s)} | {ratio(median(ref.init_s), median(ours.init_s))} | >= 50x |",
        f"| CPU time spawn -> initialize, median of {runs} (steadier than wall time on a busy machine) "
        f"| {fmt_s(median(ref.init_cpu_s))} | {fmt_s(median(ours.init_cpu_s))} "
        f"| {ratio(median(ref.init_cpu_s), median(ours.init_cpu_s))} | |",
        f"| spawn -> first conversations_list, median of {runs} (min-max) | {fmt_s(median(ref.first_list_s))}"
        f"{span(ref.first_list_s)} | {fmt_s(median(ours.first_list_s))}{span(ours.first_list_s)} "
        f"| {ratio(median(ref.first_list_s), median(ours.first_list_s))} | |",
        f"| VmRSS of the process tree after initialize + first call | {fmt_kb(ref.rss_idle_kb)} | {fmt_kb(ours.rss_idle_kb)} "
        f"| {ratio(ref.rss_idle_kb, ours.rss_idle_kb)} | |",
        f"| VmRSS of the process tree after {events:,} queued events | {fmt_kb(ref.rss_events_kb)} "
        f"| {fmt_kb(ours.rss_events_kb)} | {ratio(ref.rss_events_kb, ours.rss_events_kb)} | >= 20x |",
        f"| CPU time to ingest {events:,} events | {fmt_s(ref.ingest_cpu_s)} | {fmt_s(ours.ingest_cpu_s)} "
        f"| {ratio(ref.ingest_cpu_s, ours.ingest_cpu_s)} | |",
    ]
    for label in ("conversations_list", "events_poll (past newest)"):
        for p in (50, 99):
            a, b = ref.latency_s.get(label), ours.latency_s.get(label)
            pa, pb = (percentile(a, p) if a else None), (percentile(b, p) if b else None)
            rows.append(f"| tools/call {label} p{p} ({calls} calls) | {fmt_s(pa)} | {fmt_s(pb)} | {ratio(pa, pb)} | |")
    return rows


def working_tree_note() -> str:
    """' plus uncommitted changes' when the build may not be the commit (read-only git calls)."""
    try:
        changed = subprocess.run(["git", "diff", "--quiet", "HEAD", "--"], cwd=ROOT, timeout=30).returncode != 0
        untracked = subprocess.run(
            ["git", "ls-files", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return " plus uncommitted changes" if changed or untracked else ""


def machine_facts(gateway: Gateway, clawmcp_bin: str) -> list[str]:
    def first_line(argv: list[str]) -> str:
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=ROOT)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "unknown"

    return [
        f"- CPU: {cpu_model()}, {os.cpu_count()} logical cores; RAM {mem_total_gib():.1f} GiB; {os_name()}, "
        f"kernel {platform.release()}",
        f"- clawmcp: `{first_line([clawmcp_bin, '--version'])}` (release build), commit "
        f"`{first_line(['git', 'rev-parse', '--short', 'HEAD'])}`{working_tree_note()}; {first_line(['rustc', '--version'])}",
        f"- openclaw {gateway.openclaw_version} on Node {first_line([gateway.node, '--version'])} (npm), "
        f"OPENCLAW_NO_RESPAWN=1 (one process, its leaner shape)",
        f"- load average at the end: {open('/proc/loadavg').read().split()[:3]} (the machine is shared; "
        "startup and latency move with it, RSS does not)",
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gateway-env", required=True, type=Path)
    ap.add_argument("--clawmcp-bin", required=True)
    ap.add_argument("--workdir", required=True, type=Path)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--events", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--results", type=Path)
    ap.add_argument("--command", default="bench/serve.sh")
    a = ap.parse_args()
    for name, value, top in (("--runs", a.runs, 50), ("--events", a.events, 1000), ("--calls", a.calls, 5000)):
        if not 1 <= value <= top:
            ap.error(f"{name} must be 1..{top}")  # events: the bridges queue at most 1,000
    gateway = Gateway.from_env_file(a.gateway_env)
    bench = Bench(gateway, a.clawmcp_bin, a.workdir)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    bench.startup(a.runs)
    bench.memory_and_latency(a.events, a.calls)

    rows = table(bench, a.events, a.calls, a.runs)
    errors = [f"- {LABELS[k]} could not be fully measured: {bench.numbers[k].error}" for k in KINDS if bench.numbers[k].error]
    print("\n".join(rows + [""] + errors))
    if a.results:
        facts = machine_facts(gateway, a.clawmcp_bin)
        a.results.write_text(
            "\n".join(
                [
                    "# `clawmcp serve` vs `openclaw mcp serve`",
                    "",
                    f"Measured {started} with `{a.command}` (both bridges against the same real gateway, in one run;",
                    "`--claude-channel-mode off`; see the header of bench/serve_bench.py for what each row measures).",
                    "",
                    *facts,
                    "",
                    *rows,
                    "",
                    *errors,
                ]
            ).rstrip()
            + "\n"
        )
        print(f"[serve-bench] wrote {a.results}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
