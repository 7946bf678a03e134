#!/usr/bin/env python3
"""Time from `tts.speak` to its first audio sample, side by side with espeak-ng run by hand.

A script that reports numbers, not a test. Everything runs in one session on a private
PulseAudio server (a unix socket in a temp dir, a null sink kept running by a silent stream),
and every trial of every method is interleaved with the others, so machine load hits them alike:

  espeak-ng          `espeak-ng -v en-us TEXT`: espeak-ng plays itself (pcaudiolib -> PulseAudio)
  espeak-ng+paplay   `espeak-ng -w F TEXT && paplay F`: the node's pipeline typed by hand
  tts.speak (call)   `clawmcp call tts.speak`: a client process, loopback HTTP, the node, its
                     pactl check, espeak-ng and paplay under the process reaper
  tts.speak (http)   the same tools/call POSTed by this script to the running node (no client
                     process)

The first sample is observed on the sink's monitor: `parecord --raw --latency-msec=10` streams it
to this script, which stamps each chunk as it arrives; a trial's latency is the arrival of the
first chunk louder than 2% of full scale minus the moment the method was started. The monitor's
own latency (~10-20 ms) is in every method alike.

Usage: bench/tts.py [--runs N] [--write-results]
Needs espeak-ng, pulseaudio, pulseaudio-utils (Debian) and a built clawmcp (CLAWMCP_BENCH_BIN, or
$CARGO_TARGET_DIR/{release,debug}/clawmcp). Every process it starts is stopped by PID.
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORDS = ["apple", "river", "purple", "seven", "window", "tiger", "garden", "copper", "winter", "pencil"]
RATE = 22050
LOUD = int(0.02 * 32768)


def binary():
    if os.environ.get("CLAWMCP_BENCH_BIN"):
        return os.environ["CLAWMCP_BENCH_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    for profile in ("release", "debug"):
        path = os.path.join(target, profile, "clawmcp")
        if os.path.exists(path):
            return path
    sys.exit("no clawmcp binary: cargo build --release -p clawmcp, or set CLAWMCP_BENCH_BIN")


class Monitor:
    """parecord of the null sink's monitor, stamping each chunk as it arrives."""

    def __init__(self, env):
        self.process = subprocess.Popen(
            ["parecord", "--raw", "--format=s16le", f"--rate={RATE}", "--channels=1", "--latency-msec=10",
             "--device=nullsink.monitor"],
            stdout=subprocess.PIPE, env=env)
        self.lock = threading.Lock()
        self.loud_at = []  # monotonic arrival times of chunks louder than LOUD
        self.last_loud = 0.0
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        while True:
            chunk = self.process.stdout.read1(4096) if hasattr(self.process.stdout, "read1") else self.process.stdout.read(4096)
            if not chunk:
                return
            now = time.monotonic()
            count = len(chunk) // 2
            samples = struct.unpack(f"<{count}h", chunk[: count * 2])
            if samples and max(abs(s) for s in samples) > LOUD:
                with self.lock:
                    self.loud_at.append(now)
                    self.last_loud = now

    def first_loud_after(self, t0, deadline):
        while time.monotonic() < deadline:
            with self.lock:
                hits = [t for t in self.loud_at if t >= t0]
            if hits:
                return hits[0]
            time.sleep(0.002)
        return None

    def wait_quiet(self, quiet=0.3):
        while True:
            with self.lock:
                since = time.monotonic() - self.last_loud
            if since >= quiet:
                return
            time.sleep(0.02)

    def stop(self):
        self.process.terminate()
        self.process.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--write-results", action="store_true")
    options = parser.parse_args()
    for program in ("espeak-ng", "pulseaudio", "parecord", "paplay", "pacat"):
        if not shutil.which(program):
            sys.exit(f"{program} is missing: apt install espeak-ng pulseaudio pulseaudio-utils")
    clawmcp = binary()
    work = tempfile.mkdtemp(prefix="clawmcp-bench-tts-")
    socket_path = os.path.join(work, "native")
    env = dict(os.environ, HOME=work, XDG_RUNTIME_DIR=work, PULSE_SERVER=f"unix:{socket_path}")
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    started = []

    def start(argv, **kwargs):
        process = subprocess.Popen(argv, env=env, **kwargs)
        started.append(process)
        return process

    try:
        start(["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--system=false", "--use-pid-file=no",
               "-L", f"module-native-protocol-unix socket={socket_path}", "-L", "module-null-sink sink_name=nullsink"],
              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(500):
            if subprocess.run(["pactl", "info"], env=env, capture_output=True).returncode == 0:
                break
            time.sleep(0.02)
        # A silent stream keeps the null sink running, so its monitor streams in real time.
        start(["pacat", "--raw", "--playback", "--format=s16le", f"--rate={RATE}", "--channels=1", "/dev/zero"])
        data = os.path.join(work, "data")
        port = free_port()
        node = start([clawmcp, "node", "--port", str(port), "--data-dir", data, "-q"], stderr=subprocess.DEVNULL)
        token_file = os.path.join(data, "mcp-token.txt")
        for _ in range(500):
            if os.path.exists(token_file) and os.path.getsize(token_file) > 0:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    pass
            time.sleep(0.02)
        token = open(token_file).read().strip()
        monitor = Monitor(env)
        time.sleep(0.5)

        def http_speak(text):
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": "tts.speak", "arguments": {"text": text}}}).encode()
            request = urllib.request.Request(f"http://127.0.0.1:{port}/", data=body, method="POST", headers={
                "Authorization": f"Bearer {token}", "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream"})
            answer = urllib.request.urlopen(request, timeout=60).read()
            if b'"isError":true' in answer or b'"error"' in answer:
                sys.exit(f"tts.speak failed: {answer[:300]!r}")

        wav = os.path.join(work, "hand.wav")
        methods = {
            "espeak-ng": lambda text: subprocess.run(["espeak-ng", "-v", "en-us", text], env=env, check=True),
            "espeak-ng+paplay": lambda text: (
                subprocess.run(["espeak-ng", "-v", "en-us", "-w", wav, text], env=env, check=True),
                subprocess.run(["paplay", wav], env=env, check=True)),
            "tts.speak (call)": lambda text: subprocess.run(
                [clawmcp, "call", "tts.speak", "--port", str(port), "--data-dir", data, "--params",
                 json.dumps({"text": text})], env=env, check=True, stdout=subprocess.DEVNULL),
            "tts.speak (http)": http_speak,
        }
        latencies = {name: [] for name in methods}
        for run in range(options.runs):
            order = list(methods)
            random.shuffle(order)
            for name in order:
                text = " ".join(random.choice(WORDS) for _ in range(3))
                monitor.wait_quiet()
                t0 = time.monotonic()
                methods[name](text)
                first = monitor.first_loud_after(t0, t0 + 10)
                if first is None:
                    sys.exit(f"{name}: no sound reached the sink")
                latencies[name].append((first - t0) * 1000)
        monitor.stop()
    finally:
        for process in reversed(started):
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(work, ignore_errors=True)

    base = statistics.median(latencies["espeak-ng"])
    rows = []
    for name, values in latencies.items():
        median = statistics.median(values)
        rows.append(f"| {name} | {median:.1f} | {min(values):.1f} | {max(values):.1f} | {median / base:.2f}x |")
    load = os.getloadavg()
    table = "\n".join(["| method | median ms | min ms | max ms | median vs espeak-ng |", "| --- | --- | --- | --- | --- |", *rows])
    print(table)
    if options.write_results:
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        # What was measured, in the binary's own words (a path says nothing of its profile).
        version = subprocess.run([clawmcp, "--version"], capture_output=True, text=True).stdout.strip()
        profile = "debug" if "/debug/" in clawmcp else "release"
        text = f"""# tts.speak: time to the first audio sample

Command: `bench/tts.py --runs {options.runs} --write-results` ({stamp}); {version}, {profile} build.

From starting the method to the first sample louder than 2% of full scale arriving on a private
PulseAudio null sink's monitor (parecord, 10 ms latency, the same for every method), three
words of speech each, {options.runs} runs per method, all interleaved in random order in one
session. Load average at the end: {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f} (2 shared cores).

{table}

- espeak-ng: the engine playing itself, streaming as it synthesises.
- espeak-ng+paplay: the node's pipeline by hand (synthesise the whole WAV, then play the file).
- tts.speak (call): `clawmcp call` (a client process) -> loopback HTTP -> the node -> pactl's
  server/mute check, espeak-ng and paplay, each a child under the process reaper.
- tts.speak (http): the same call POSTed straight to the node.
"""
        with open(os.path.join(HERE, "TTS_RESULTS.md"), "w") as out:
            out.write(text)


if __name__ == "__main__":
    main()
