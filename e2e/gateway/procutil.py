"""/proc helpers shared by the gateway harness, the serve compatibility suite and bench/serve.sh.

Why /proc and not psutil/ss: the suite runs on a bare Debian machine with only python3
(no pip packages, no iproute2), and everything it needs is a few /proc files.

As a script:
  procutil.py listeners PID   print every listening TCP socket owned by PID or its
                              descendants as ADDR:PORT; exit 1 if any is not loopback
  procutil.py tree PID        print PID and its descendants, one per line
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
import sys


def children(pid: int) -> list[int]:
    """Direct children of pid (all threads), [] if it is gone."""
    kids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return kids


def tree(pid: int) -> list[int]:
    """pid followed by all its live descendants (breadth first)."""
    seen = [pid]
    i = 0
    while i < len(seen):
        for kid in children(seen[i]):
            if kid not in seen:
                seen.append(kid)
        i += 1
    return [p for p in seen if os.path.exists(f"/proc/{p}")]


def start_time(pid: int) -> str:
    """Process start time in clock ticks since boot (field 22 of /proc/PID/stat), '' if gone.

    The command name (field 2) may contain spaces and parentheses, so split after the last ')'.
    """
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return ""
    return stat[stat.rindex(")") + 2 :].split()[19]


def status_kb(pid: int, field: str) -> int | None:
    """A kB field of /proc/PID/status (VmRSS, VmHWM, ...), None if missing or gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def tree_rss_kb(pid: int) -> tuple[int, int]:
    """(sum of VmRSS over pid and its descendants in kB, number of processes)."""
    pids = tree(pid)
    return sum(status_kb(p, "VmRSS") or 0 for p in pids), len(pids)


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) pid has used so far, summed over its live threads.

    /proc/PID/task/*/schedstat counts nanoseconds; /proc/PID/stat only 10 ms clock ticks,
    too coarse for a process that initializes in a few milliseconds. Falls back to ticks
    where schedstat is missing. 0.0 if the process is gone.
    """
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    total_ns = 0
    try:
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                    total_ns += int(f.read().split()[0])
            except FileNotFoundError:
                if not os.path.exists(f"/proc/{pid}/task/{task}"):
                    continue  # the thread ended meanwhile
                raise
        return total_ns / 1e9
    except (OSError, ValueError, IndexError):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return 0.0


def tree_cpu_seconds(pid: int) -> float:
    """cpu_seconds summed over pid and its live descendants."""
    return sum(cpu_seconds(p) for p in tree(pid))


def _socket_inodes(pid: int) -> set[str]:
    inodes: set[str] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def _decode_addr(hex_addr: str, family: int) -> str:
    raw = bytes.fromhex(hex_addr)
    if family == socket.AF_INET:
        return socket.inet_ntop(family, struct.pack("<I", struct.unpack(">I", raw)[0]))
    # /proc/net/tcp6 stores the address as four host-order 32-bit words.
    words = struct.unpack(">4I", raw)
    return socket.inet_ntop(family, struct.pack("<4I", *words))


def listeners(pid: int) -> list[tuple[str, int]]:
    """Listening TCP sockets (address, port) owned by pid or any descendant."""
    inodes: set[str] = set()
    for p in tree(pid):
        inodes |= _socket_inodes(p)
    found: list[tuple[str, int]] = []
    for path, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            with open(path) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state != "0A" or inode not in inodes:  # 0A = TCP_LISTEN
                continue
            addr, port = local.split(":")
            found.append((_decode_addr(addr, family), int(port, 16)))
    return found


def is_loopback(address: str) -> bool:
    return ipaddress.ip_address(address).is_loopback


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("listeners", "tree"):
        print(__doc__, file=sys.stderr)
        return 2
    pid = int(argv[2])
    if argv[1] == "tree":
        print("\n".join(str(p) for p in tree(pid)))
        return 0
    bad = 0
    for address, port in listeners(pid):
        print(f"{address}:{port}")
        bad += not is_loopback(address)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
