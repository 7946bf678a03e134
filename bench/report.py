"""Turn the measurements bench/node.sh recorded into the results table (and bench/NODE_RESULTS.md).

Input: a file of `KIND key=value ...` lines (WRK, MEM, STARTUP, CLI, META; see bench/node.sh).
Each wrk cell is measured in several rounds, ours and the floor back to back; the table shows
the median per cell and the ratios of the medians, which a burst of unrelated load on the
shared machine shifts far less than a single run.

Usage: report.py MEASUREMENTS [--results FILE --command CMD --version TEXT]
Prints the markdown report; with --results also writes the full results document.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
from collections import defaultdict
from pathlib import Path

from machine import cpu_model, mem_total_gib, os_name

# Targets from the issue; reported against, never asserted.
TARGET_PING_RATIO_AT_16 = 0.8
# Server CPU time per ping at 16 connections, ours over the floor's (issue 8).
TARGET_PING_CPU_RATIO_AT_16 = 1.3
TARGET_P99_MS_AT_16 = 2.0
TARGET_IDLE_RSS_MIB = 15.0
TARGET_STARTUP_MS = 50.0

HOW_TO_READ = """\
How to read: ours and the floor run in the same invocation, back to back per cell and in
several rounds (medians shown), with the same request bytes; the floor (crates/bench-floor,
hyper answering a fixed body) sends the same answer bytes as ours (the ping result, or the exact
tools/list answer ours returned). So a ratio isolates what clawmcp adds: the security gate, the
token compare, JSON-RPC parsing, dispatch and building the answer. Placement: {placement}.
When pinned, each server under test (ours, the floor) has CPU 0 to itself and wrk the other
CPUs, so a server's CPU per request is its own work, not the scheduler's interleaving with wrk
(sharing every CPU moved the CPU ratio between 1.4x and 2.1x from run to run with the same
binaries); one CPU for the server also caps absolute throughput below what a bigger machine would
see. Tail latency (p99) is sensitive to anything else running: read it next to the floor's p99
from the same run."""


def placement_text(meta: dict[str, str]) -> str:
    """Where the servers and wrk ran, from bench/node.sh's META `placement` (older runs: shared)."""
    placement = meta.get("placement", "shared")
    if placement == "shared":
        return "not pinned (servers and wrk shared every CPU)"
    wrk_cpus = placement.rsplit("_cpus", 1)[-1]
    return f"servers pinned to CPU 0, wrk to CPUs {wrk_cpus} (taskset)"


def parse(path: Path) -> list[tuple[str, dict[str, str]]]:
    records = []
    for line in path.read_text().splitlines():
        kind, *pairs = line.split()
        records.append((kind, dict(pair.split("=", 1) for pair in pairs)))
    return records


def one(records: list[tuple[str, dict[str, str]]], kind: str, **match: str) -> dict[str, str]:
    found = [fields for k, fields in records if k == kind and all(fields.get(a) == b for a, b in match.items())]
    if len(found) != 1:
        raise SystemExit(f"expected one {kind} {match} record, found {len(found)}")
    return found[0]


def verdict(ok: bool) -> str:
    return "met" if ok else "**NOT met**"


def report(records: list[tuple[str, dict[str, str]]]) -> str:
    meta = one(records, "META")
    cells: dict[tuple[str, int, str], list[dict[str, float]]] = defaultdict(list)
    for kind, fields in records:
        if kind == "WRK":
            key = (fields["method"], int(fields["conns"]), fields["target"])
            cells[key].append({k: float(v) for k, v in fields.items() if k not in ("method", "target")})

    def median(method: str, conns: int, target: str, field: str) -> float:
        return statistics.median(run[field] for run in cells[(method, conns, target)])

    lines = [
        f"## Throughput and latency (wrk, keep-alive POST, {meta['rounds']} rounds x {meta['duration']}s per cell, medians)",
        "",
        (
            "| method | conns | ours req/s | ours p50 ms | ours p99 ms | floor req/s | floor p50 ms | floor p99 ms "
            "| req/s ours/floor | p99 ours/floor | error answers |"
        ),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    conns_list = sorted({conns for _, conns, _ in cells})
    for conns in conns_list:
        for method in ("ping", "tools/list"):
            o = {f: median(method, conns, "ours", f) for f in ("rps", "p50_us", "p99_us")}
            f = {f: median(method, conns, "floor", f) for f in ("rps", "p50_us", "p99_us")}
            errors = sum(
                int(run["http_errors"] + run["socket_errors"])
                for target in ("ours", "floor")
                for run in cells[(method, conns, target)]
            )
            lines.append(
                f"| {method} | {conns} | {o['rps']:,.0f} | {o['p50_us'] / 1000:.3f} | {o['p99_us'] / 1000:.3f} "
                f"| {f['rps']:,.0f} | {f['p50_us'] / 1000:.3f} | {f['p99_us'] / 1000:.3f} "
                f"| {o['rps'] / f['rps']:.2f}x | {o['p99_us'] / max(f['p99_us'], 1):.2f}x | {errors} |"
            )

    lines += [
        "",
        "## Server CPU time per request (medians; steadier than req/s when other work shares the machine)",
        "",
        "| method | conns | ours CPU us/req | floor CPU us/req | ours/floor |",
        "| --- | --- | --- | --- | --- |",
    ]
    for conns in conns_list:
        for method in ("ping", "tools/list"):
            ours_cpu = median(method, conns, "ours", "cpu_us_per_req")
            floor_cpu = median(method, conns, "floor", "cpu_us_per_req")
            lines.append(
                f"| {method} | {conns} | {ours_cpu:.1f} | {floor_cpu:.1f} | {ours_cpu / max(floor_cpu, 0.1):.2f}x |"
            )

    mem = one(records, "MEM")
    ours_start, floor_start = one(records, "STARTUP", target="ours"), one(records, "STARTUP", target="floor")
    cli = one(records, "CLI")
    kib = {k: int(v) for k, v in mem.items()}
    idle_mib = max(kib["idle_start_kib"], kib["idle_after_kib"]) / 1024
    lines += [
        "",
        "## Memory and start-up",
        "",
        "| measure | clawmcp node | floor |",
        "| --- | --- | --- |",
        f"| VmRSS idle after start | {kib['idle_start_kib'] / 1024:.1f} MiB | |",
        f"| VmRSS idle after the load | {kib['idle_after_kib'] / 1024:.1f} MiB | |",
        f"| VmHWM (peak RSS over the whole load) | {kib['peak_kib'] / 1024:.1f} MiB | |",
        (
            f"| spawn -> first authenticated HTTP 200, median of {ours_start['runs']} (min-max) "
            f"| {ours_start['median_ms']} ms ({ours_start['min_ms']}-{ours_start['max_ms']}) "
            f"| {floor_start['median_ms']} ms ({floor_start['min_ms']}-{floor_start['max_ms']}) |"
        ),
        (
            f"| `clawmcp call --list-tools`, whole client process (hyperfine median of {cli['runs']}) "
            f"| {cli['median_ms']} ms | |"
        ),
    ]

    ping_ratio = median("ping", 16, "ours", "rps") / median("ping", 16, "floor", "rps")
    ping_cpu_ratio = median("ping", 16, "ours", "cpu_us_per_req") / max(
        median("ping", 16, "floor", "cpu_us_per_req"), 0.1
    )
    p99_ms = median("ping", 16, "ours", "p99_us") / 1000
    floor_p99_ms = median("ping", 16, "floor", "p99_us") / 1000
    start_ms = float(ours_start["median_ms"])
    lines += [
        "",
        "## Targets (reported, not asserted)",
        "",
        "| target | measured | verdict |",
        "| --- | --- | --- |",
        (
            f"| ping throughput >= {TARGET_PING_RATIO_AT_16}x the floor at 16 connections | {ping_ratio:.2f}x "
            f"| {verdict(ping_ratio >= TARGET_PING_RATIO_AT_16)} |"
        ),
        (
            f"| ping CPU per request <= {TARGET_PING_CPU_RATIO_AT_16}x the floor's at 16 connections "
            f"| {ping_cpu_ratio:.2f}x | {verdict(ping_cpu_ratio <= TARGET_PING_CPU_RATIO_AT_16)} |"
        ),
        (
            f"| ping p99 < {TARGET_P99_MS_AT_16:g} ms at 16 connections | {p99_ms:.3f} ms (floor {floor_p99_ms:.3f} ms) "
            f"| {verdict(p99_ms < TARGET_P99_MS_AT_16)} |"
        ),
        f"| idle RSS < {TARGET_IDLE_RSS_MIB:g} MiB | {idle_mib:.1f} MiB | {verdict(idle_mib < TARGET_IDLE_RSS_MIB)} |",
        f"| start-to-first-answer < {TARGET_STARTUP_MS:g} ms | {start_ms:.2f} ms | {verdict(start_ms < TARGET_STARTUP_MS)} |",
    ]
    return "\n".join(lines) + "\n"


def tool_version(argv: list[str]) -> str:
    try:
        first_line = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False).stdout.split("\n")[0]
        return " ".join(first_line.split()[:2])  # name and version, without banners
    except OSError:
        return "unknown"


def machine_facts(meta: dict[str, str]) -> str:
    cpu, mem_gib, os_label = cpu_model(), mem_total_gib(), os_name()
    return (
        f"Machine: {os.cpu_count()} cores ({cpu}), {mem_gib:.0f} GiB RAM, kernel {platform.release()}, {os_label}.\n"
        f"Tools: {tool_version(['wrk', '-v'])}; {tool_version(['hyperfine', '--version'])}.\n"
        f"Load average (1/5/15 min) before the run: {meta['load_before']}; after: {meta['load_after']}."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measurements", type=Path)
    parser.add_argument("--results", type=Path)
    parser.add_argument("--command", default="bash bench/node.sh --write-results")
    parser.add_argument("--version", default="clawmcp")
    args = parser.parse_args()
    records = parse(args.measurements)
    body = report(records)
    print(body)
    if args.results:
        meta = one(records, "META")
        args.results.write_text(
            "# clawmcp node benchmark results\n\n"
            f"Generated by `{args.command}` on {meta['date']} ({args.version}, release build).\n\n"
            f"{machine_facts(meta)}\n\n{HOW_TO_READ.format(placement=placement_text(meta))}\n\n{body}"
        )
        print(f"wrote {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
