"""The report of bench/files.sh: throughput of the file channel against the HTTP floor.

Reads <fetch|create>.hyperfine.json (hyperfine --export-json) from the run's temp dir; prints the
table, and with --markdown also writes it, with the machine and the command, to that file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from datetime import datetime, timezone
from pathlib import Path

import machine

TARGET = 1 / 3  # ours at least a third of the floor's throughput


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tmp", type=Path, required=True)
    parser.add_argument("--runs", type=int, required=True)
    parser.add_argument("--mib", type=int, required=True)
    parser.add_argument("--command", required=True)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()

    rows = []
    for direction in ("fetch", "create"):
        results = {r["command"]: r for r in json.loads((args.tmp / f"{direction}.hyperfine.json").read_text())["results"]}
        floor, ours = results[f"floor-{direction}"], results[f"ours-{direction}"]
        mb_s = lambda r: args.mib * 1.048576 / r["median"]  # noqa: E731 (MB per second at the median)
        ratio = floor["median"] / ours["median"]
        rows.append(
            f"| {direction} | {floor['median'] * 1000:.0f} ms ({mb_s(floor):.0f} MB/s) | "
            f"{ours['median'] * 1000:.0f} ms ({mb_s(ours):.0f} MB/s) | {ratio:.2f}x | "
            f"{'met' if ratio >= TARGET else 'NOT met'} |"
        )
    table = "\n".join(
        [
            f"{args.mib} MiB of random bytes, median of {args.runs} runs each (hyperfine), one client process per transfer.",
            "",
            "| direction | floor (curl + bench-floor) | ours (clawmcp call over the file channel) | ours/floor throughput | target >= 0.33x |",
            "| --- | --- | --- | --- | --- |",
            *rows,
        ]
    )
    print(table)
    if args.markdown:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        args.markdown.write_text(
            "\n".join(
                [
                    "# File channel throughput (bench/files.sh)",
                    "",
                    f"Recorded {stamp} with `{args.command}` on {machine.cpu_model()}, {os.cpu_count()} cores, "
                    f"{machine.mem_total_gib():.0f} GiB, {machine.os_name()} ({platform.machine()}), load average "
                    f"{os.getloadavg()[0]:.1f} at the end.",
                    "",
                    table,
                    "",
                    "The floor is the least any loopback transfer must do: one HTTP exchange carrying the raw bytes. Ours "
                    "adds the channel (open, preflight, attach), base64 in 8 KiB frames, a poll per 16 frames (fetch) or an "
                    "input request per frame (create), an ack per 1 MiB message, the sha256 on both sides and the move "
                    "into place.",
                    "",
                ]
            )
        )


if __name__ == "__main__":
    main()
