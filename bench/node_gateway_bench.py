"""`clawmcp node` vs the real `openclaw node run`, both joined to the same real gateway, side by
side in one run: VmRSS of each node's process tree idle and after N system.which invokes, the
invoke round trip through the gateway (p50/p99), and `file.fetch` of one random file (unary:
base64 in the invoke's payload, each answer's sha256 checked once), interleaved in batches so
both see the same machine load. Reports numbers; asserts nothing but the fetched bytes (targets
from the issues: >= 40x smaller, faster at p50 and p99; file.fetch faster than the real node).

Setup (both nodes started, paired and approved) is the e2e suite's own (e2e/gateway/node_mode.py).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "e2e" / "gateway"))

import node_mode  # noqa: E402  (the e2e suite: process setup and pairing)
import procutil  # noqa: E402
from machine import cpu_model, mem_total_gib, os_name, percentile  # noqa: E402

SETTLE_S = 5
BATCH = 100
# file.fetch: unary answers are at most 16 MiB (upstream's maxBytes cap).
FETCH_BATCH = 5
MAX_FETCH_BYTES = 16 * 1024 * 1024


def interleaved(suite: node_mode.Suite, nodes: dict[str, tuple[int, str]], invoke: dict, total: int, batch: int,
                timeout_s: int) -> dict[str, list[float]]:
    """Round trips of node.invoke `invoke` (its nodeId filled in per node), `total` per node in
    batches of `batch`, alternating which node goes first so both see the same load."""
    latencies: dict[str, list[float]] = {name: [] for name in nodes}
    for round_ in range(total // batch):
        order = list(nodes.items()) if round_ % 2 == 0 else list(reversed(nodes.items()))
        for name, (_, node_id) in order:
            params = invoke | {"nodeId": node_id, "idempotencyKey": f"bench-{invoke['command']}-{{i}}"}
            summary = suite.gateway.rpc("node.invoke", params, count=batch, timeout_s=timeout_s, latencies=True)
            if summary.get("failed"):
                raise SystemExit(f"{name}: {summary['failed']} of {invoke['command']} failed: {summary.get('first_error')}")
            latencies[name].extend(summary["latencies_ms"])
    return latencies


def fetched_bytes(answer: dict, what: str) -> bytes:
    """The bytes of one node.invoke file.fetch answer, its sha256 checked."""
    payload = answer.get("payload")
    if payload is None and isinstance(answer.get("payloadJSON"), str):
        payload = json.loads(answer["payloadJSON"])
    if not isinstance(payload, dict) or payload.get("ok") is False or "base64" not in payload:
        raise SystemExit(f"{what}: file.fetch failed: {json.dumps(answer)[:600]}")
    data = base64.b64decode(payload["base64"])
    if hashlib.sha256(data).hexdigest() != payload.get("sha256"):
        raise SystemExit(f"{what}: the bytes do not match the sha256 in the answer")
    return data


def rss_mb(pid: int) -> float:
    return procutil.tree_rss_kb(pid)[0] / 1024


def anon_mb(pid: int) -> float:
    """RssAnon over the process tree: memory the node itself allocated. VmRSS also counts the
    pages of the executable it has touched, which stay shared with the page cache."""
    return sum(procutil.status_kb(p, "RssAnon") or 0 for p in procutil.tree(pid)) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gateway-env", required=True)
    parser.add_argument("--clawmcp-bin", required=True)
    parser.add_argument("--artifacts", required=True)
    parser.add_argument("--invokes", type=int, default=1000)
    parser.add_argument("--fetch-mib", type=int, default=8)
    parser.add_argument("--fetches", type=int, default=20)
    parser.add_argument("--write-results", default="")
    parser.add_argument("--command-line", default="bench/node_gateway.sh")
    args = parser.parse_args()
    invokes = max(BATCH, min(args.invokes, 5000)) // BATCH * BATCH
    fetch_bytes = max(1, min(args.fetch_mib * 1024 * 1024, MAX_FETCH_BYTES))
    fetches = max(FETCH_BATCH, min(args.fetches, 200)) // FETCH_BATCH * FETCH_BATCH
    load_before = "/".join(f"{x:.2f}" for x in os.getloadavg())

    suite = node_mode.Suite(argparse.Namespace(gateway_env=args.gateway_env, clawmcp_bin=args.clawmcp_bin,
                                               artifacts=args.artifacts))
    served = Path(args.artifacts) / "served"
    served.mkdir(parents=True, exist_ok=True)
    fetched = served / "fetch.bin"
    content = os.urandom(fetch_bytes)
    fetched.write_bytes(content)
    # Our node serves files under NodeFileRoots only (default: its HOME, which is private here).
    suite.data.mkdir(mode=0o700, parents=True, exist_ok=True)
    settings = suite.data / "settings.json"
    settings.write_text(json.dumps({"NodeFileRoots": [str(served)]}) + "\n")
    settings.chmod(0o600)
    try:
        # The gateway admits no file command by default.
        suite.gateway.allow_node_commands(["file.fetch"])
        suite.start_ours()
        suite.start_real()
        suite.pending()
        suite.approve()
        suite.approve_real()
        nodes = {"clawmcp node": (suite.ours.pid, suite.ours_id), "openclaw node run": (suite.real.pid, suite.real_id)}
        time.sleep(SETTLE_S)
        idle = {name: rss_mb(pid) for name, (pid, _) in nodes.items()}
        idle_anon = {name: anon_mb(pid) for name, (pid, _) in nodes.items()}
        which = {"command": "system.which", "params": {"bins": ["sh"]}, "timeoutMs": 15000}
        latencies = interleaved(suite, nodes, which, invokes, BATCH, timeout_s=300)
        after = {name: rss_mb(pid) for name, (pid, _) in nodes.items()}
        fetch = {"command": "file.fetch", "params": {"path": str(fetched), "maxBytes": MAX_FETCH_BYTES},
                 "timeoutMs": 60000}
        for name, (_, node_id) in nodes.items():
            params = fetch | {"nodeId": node_id, "idempotencyKey": f"bench-fetch-check-{node_id}"}
            if fetched_bytes(suite.gateway.rpc("node.invoke", params, timeout_s=120), name) != content:
                raise SystemExit(f"{name}: file.fetch answered other bytes than the file's")
        fetch_latencies = interleaved(suite, nodes, fetch, fetches, FETCH_BATCH, timeout_s=600)
    finally:
        suite.stop()

    ours, real = "clawmcp node", "openclaw node run"
    rows = [
        "| measure | clawmcp node | openclaw node run | ratio |",
        "| --- | --- | --- | --- |",
        f"| RSS idle (process tree) | {idle[ours]:.1f} MB | {idle[real]:.1f} MB | {idle[real] / idle[ours]:.0f}x smaller |",
        f"| RSS after {invokes} invokes | {after[ours]:.1f} MB | {after[real]:.1f} MB | {after[real] / after[ours]:.0f}x smaller |",
        f"| RssAnon idle (process tree; the executable's pages not counted) | {idle_anon[ours]:.1f} MB | "
        f"{idle_anon[real]:.1f} MB | {idle_anon[real] / idle_anon[ours]:.0f}x smaller |",
    ]
    for label, p in (("p50", 50), ("p99", 99)):
        a, b = percentile(latencies[ours], p), percentile(latencies[real], p)
        rows.append(f"| system.which invoke {label} (through the gateway) | {a:.2f} ms | {b:.2f} ms | {b / a:.2f}x faster |")
    mean = {name: statistics.fmean(values) for name, values in latencies.items()}
    rows.append(f"| system.which invoke mean | {mean[ours]:.2f} ms | {mean[real]:.2f} ms | {mean[real] / mean[ours]:.2f}x faster |")
    mib = fetch_bytes / (1024 * 1024)
    for label, p in (("p50", 50), ("p99", 99)):
        a, b = percentile(fetch_latencies[ours], p), percentile(fetch_latencies[real], p)
        rows.append(f"| file.fetch {mib:g} MiB {label} (through the gateway) | {a:.1f} ms | {b:.1f} ms | {b / a:.2f}x faster |")
    print("\n".join(rows))
    if args.write_results:
        version = subprocess.run([args.clawmcp_bin, "--version"], capture_output=True, text=True).stdout.strip()
        text = [
            "# `clawmcp node` vs `openclaw node run` on the same real gateway",
            "",
            f"Command: `{args.command_line}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}).",
            "",
            f"Both nodes joined one real openclaw {suite.gateway.openclaw_version} gateway on 127.0.0.1 and were "
            f"approved; {version}, release build. RSS is VmRSS summed over each node's process tree (the real node host "
            f"is a launcher plus a worker) from /proc, {SETTLE_S} s after approval and again after {invokes} "
            f"`system.which {{bins:[sh]}}` invokes each. The round trip is one `node.invoke` from an operator "
            f"connection through the gateway to the node and back, sequential, in batches of {BATCH} alternating "
            "between the two nodes so both see the same load. Targets (issue 10): at least 40x smaller; faster at "
            f"p50 and p99. Then `file.fetch` of one {mib:g} MiB random file, unary (the bytes as base64 in the "
            f"invoke's payload), {fetches} times each in batches of {FETCH_BATCH}, alternating; one answer of each "
            "checked byte for byte and against its sha256 first (issue 12: faster than the real node host).",
            "",
            f"Machine: {os.cpu_count()} cores ({cpu_model()}), {mem_total_gib():.0f} GiB RAM, {os_name()}; load average "
            f"before the run {load_before}.",
            "",
            *rows,
            "",
        ]
        Path(args.write_results).write_text("\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
