"""Time spawn -> first successful answer for a loopback HTTP server, N times.

Why not hyperfine: hyperfine times a command until it exits; a server never exits on its
own, and what users feel is how long after `clawmcp node` starts a client can be answered.
This loop spawns the server, retries a GET (with the bearer token, if given) as fast as the
socket refuses, records the time of the first HTTP 200, then SIGTERMs the server by PID and
waits for it. One untimed warm-up run first (page cache, token file creation).

Usage: startup.py --runs N --port P [--token-file F] -- COMMAND ARGS...
Prints one line: `STARTUP median_ms=... min_ms=... max_ms=... runs=N`.
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import subprocess
import sys
import time
from pathlib import Path

GIVE_UP_SECONDS = 10.0
STOP_GRACE_SECONDS = 10.0


def first_answer_ms(command: list[str], port: int, token_file: Path | None) -> float:
    start = time.perf_counter()
    server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            elapsed = time.perf_counter() - start
            if elapsed > GIVE_UP_SECONDS:
                raise RuntimeError(f"no HTTP 200 from 127.0.0.1:{port} within {GIVE_UP_SECONDS}s: {command}")
            if server.poll() is not None:
                raise RuntimeError(f"server exited with {server.returncode} before answering: {command}")
            headers = {}
            if token_file is not None:
                if not token_file.exists():
                    time.sleep(0.0005)
                    continue
                headers["Authorization"] = f"Bearer {token_file.read_text().strip()}"
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            try:
                connection.request("GET", "/", headers=headers)
                if connection.getresponse().status == 200:
                    return (time.perf_counter() - start) * 1000
            except OSError:
                time.sleep(0.0005)
            finally:
                connection.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token-file", type=Path)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("missing server command after --")

    first_answer_ms(command, args.port, args.token_file)  # warm-up, not counted
    samples = [first_answer_ms(command, args.port, args.token_file) for _ in range(args.runs)]
    print(
        f"STARTUP median_ms={statistics.median(samples):.2f} min_ms={min(samples):.2f} "
        f"max_ms={max(samples):.2f} runs={len(samples)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
