"""The report of bench/screen.sh: hyperfine's timings per scene, ratios and bytes.

Reads, from the run's temp dir: <scene>.hyperfine.json (hyperfine --export-json), <scene>-<mode>.meta.json (what
`clawmcp call screen.snapshot` printed: the result's metadata, with `bytes`), and the PNG files the alternatives wrote.
Prints the tables; with --markdown also writes them, with the machine and the command, to that file.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from datetime import datetime, timezone
from pathlib import Path

import machine

SCENES = ("desktop", "photo")
FLOOR = "floor-shm"
ALTERNATIVES = ("import", "ffmpeg", "scrot")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tmp", type=Path, required=True)
    parser.add_argument("--runs", type=int, required=True)
    parser.add_argument("--command", required=True)
    parser.add_argument("--size", required=True)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()

    sections = []
    for scene in SCENES:
        results = json.loads((args.tmp / f"{scene}.hyperfine.json").read_text())["results"]
        by_name = {result["command"]: result for result in results}
        median = {name: statistics.median(result["times"]) * 1e3 for name, result in by_name.items()}
        fastest_alternative = min(ALTERNATIVES, key=lambda name: median[name])
        rows = [
            "| command | mean ms | median ms | vs floor (median) | bytes written |",
            "| --- | --- | --- | --- | --- |",
        ]
        for name, result in by_name.items():
            rows.append(
                f"| {name} | {result['mean'] * 1e3:.1f} ± {result['stddev'] * 1e3:.1f} | {median[name]:.1f} | "
                f"{median[name] / median[FLOOR]:.2f}x | {bytes_of(args.tmp, scene, name)} |"
            )
        verdicts = [
            f"- ours (full-size png) / floor (MIT-SHM capture, no encoding): **{median['ours-png'] / median[FLOOR]:.2f}x**; "
            f"jpeg {median['ours-jpeg'] / median[FLOOR]:.2f}x; default (png under 1.15 MP) "
            f"{median['ours-default'] / median[FLOOR]:.2f}x (target: at most 1.5x)",
            f"- the fastest alternative, {fastest_alternative}, / ours (full-size png): "
            f"**{median[fastest_alternative] / median['ours-png']:.1f}x** slower "
            + ("(target met: faster than every alternative)" if median["ours-png"] < median[fastest_alternative] else "(target missed)"),
        ]
        sections.append(f"### Scene `{scene}`\n\n" + "\n".join(rows) + "\n\n" + "\n".join(verdicts))

    header = (
        f"# screen.snapshot benchmark\n\n"
        f"Recorded {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC with `{args.command}` "
        f"({args.runs} runs per command, hyperfine -N, one interleaved session per scene; {args.size} Xvfb).\n"
        f"Machine: {machine.cpu_model()}, {machine.mem_total_gib():.0f} GiB, {machine.os_name()}, "
        f"Linux {platform.release()}; load average {Path('/proc/loadavg').read_text().split()[0]} when the run ended "
        "(anything else running moves these numbers).\n\n"
        "Every row is a whole process, as a user runs it: the floor connects, fetches the root's pixels and exits "
        "(no encoding); ours is `clawmcp call screen.snapshot` against a running node (client start, HTTP, capture, "
        "encode, base64, JSON); the alternatives write a PNG file. Bytes: ours is the encoded image in the result, "
        "the alternatives' is their file, the floor's is the raw pixels fetched."
    )
    text = header + "\n\n" + "\n\n".join(sections) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


def bytes_of(tmp: Path, scene: str, name: str) -> str:
    if name.startswith("ours-"):
        meta = json.loads((tmp / f"{scene}-{name.removeprefix('ours-')}.meta.json").read_text())
        return f"{meta['bytes']:,} ({meta['format']} {meta['width']}x{meta['height']})"
    if name in ALTERNATIVES:
        return f"{(tmp / f'{scene}-{name}.png').stat().st_size:,} (png)"
    return "8,294,400 (raw BGRX)" if name.startswith("floor") else "?"


if __name__ == "__main__":
    main()
