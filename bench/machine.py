"""What every benchmark report states about the machine, and the one percentile rule they use.

Imported by bench/report.py, bench/serve_bench.py, bench/tools_bench.py and bench/node_gateway_bench.py (run as scripts from
bench/, so this directory is on sys.path). Linux facts from /proc and /etc/os-release.
"""

from __future__ import annotations

import platform
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what `platform` knows."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "?"


def mem_total_gib() -> float:
    """Physical memory (MemTotal) in GiB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1048576
    return 0.0


def os_name() -> str:
    """The distribution's PRETTY_NAME, else the kernel's system name."""
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return platform.system()


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile: the smallest value with at least p% of the values at or below it."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]
