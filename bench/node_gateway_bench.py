"""`clawmcp node` vs the real `openclaw node run`, both joined to the same real gateway, side by
side in one run: VmRSS of each node's process tree idle and after N system.which invokes, and
the invoke round trip through the gateway (p50/p99), interleaved in batches so both see the
same machine load. Reports numbers; asserts nothing (targets from the issue: >= 40x smaller,
faster at p50 and p99).

Setup (both nodes started, paired and approved) is the e2e suite's own (e2e/gateway/node_mode.py).
"""

from __future__ import annotations

import argparse
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


def rss_mb(pid: int) -> float:
    return procutil.tree_rss_kb(pid)[0] / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gateway-env", required=True)
    parser.add_argument("--clawmcp-bin", required=True)
    parser.add_argument("--artifacts", required=True)
    parser.add_argument("--invokes", type=int, default=1000)
    parser.add_argument("--write-results", default="")
    parser.add_argument("--command-line", default="bench/node_gateway.sh")
    args = parser.parse_args()
    invokes = max(BATCH, min(args.invokes, 5000)) // BATCH * BATCH
    load_before = "/".join(f"{x:.2f}" for x in os.getloadavg())

    suite = node_mode.Suite(argparse.Namespace(gateway_env=args.gateway_env, clawmcp_bin=args.clawmcp_bin,
                                               artifacts=args.artifacts))
    try:
        suite.start_ours()
        suite.start_real()
        suite.pending()
        suite.approve()
        suite.approve_real()
        nodes = {"clawmcp node": (suite.ours.pid, suite.ours_id), "openclaw node run": (suite.real.pid, suite.real_id)}
        time.sleep(SETTLE_S)
        idle = {name: rss_mb(pid) for name, (pid, _) in nodes.items()}
        latencies: dict[str, list[float]] = {name: [] for name in nodes}
        for batch in range(invokes // BATCH):
            order = list(nodes.items()) if batch % 2 == 0 else list(reversed(nodes.items()))
            for name, (_, node_id) in order:
                params = {"nodeId": node_id, "command": "system.which", "params": {"bins": ["sh"]},
                          "idempotencyKey": "bench-{i}", "timeoutMs": 15000}
                summary = suite.gateway.rpc("node.invoke", params, count=BATCH, timeout_s=300, latencies=True)
                if summary.get("failed"):
                    raise SystemExit(f"{name}: {summary['failed']} invokes failed: {summary.get('first_error')}")
                latencies[name].extend(summary["latencies_ms"])
        after = {name: rss_mb(pid) for name, (pid, _) in nodes.items()}
    finally:
        suite.stop()

    ours, real = "clawmcp node", "openclaw node run"
    rows = [
        "| measure | clawmcp node | openclaw node run | ratio |",
        "| --- | --- | --- | --- |",
        f"| RSS idle (process tree) | {idle[ours]:.1f} MB | {idle[real]:.1f} MB | {idle[real] / idle[ours]:.0f}x smaller |",
        f"| RSS after {invokes} invokes | {after[ours]:.1f} MB | {after[real]:.1f} MB | {after[real] / after[ours]:.0f}x smaller |",
    ]
    for label, p in (("p50", 50), ("p99", 99)):
        a, b = percentile(latencies[ours], p), percentile(latencies[real], p)
        rows.append(f"| system.which invoke {label} (through the gateway) | {a:.2f} ms | {b:.2f} ms | {b / a:.2f}x faster |")
    mean = {name: statistics.fmean(values) for name, values in latencies.items()}
    rows.append(f"| system.which invoke mean | {mean[ours]:.2f} ms | {mean[real]:.2f} ms | {mean[real] / mean[ours]:.2f}x faster |")
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
            "p50 and p99.",
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
