"""A minimal MCP client for stdio servers, for the serve compatibility suite and bench/serve.sh.

Why not the Python `mcp` SDK: the suite compares two servers byte for byte (tools/list must be
exactly equal), needs the raw `notifications/claude/channel*` frames the SDK would swallow,
and times spawn -> first answer; a thin newline-delimited JSON-RPC client shows all of that
and needs nothing beyond the standard library.

`StdioServer` spawns one server process, reads its stdout on a thread (responses are matched
by id; everything with a `method` is kept as a notification with its arrival time), copies
stderr into a bounded log file, and optionally writes a transcript (">>> " client->server,
"<<< " server->client). Requests can be started on several servers before waiting for any,
which is how the suite drives two bridges in lockstep. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from procutil import start_time, tree, tree_rss_kb

MAX_LINE_BYTES = 64 << 20  # one JSON-RPC message; events_poll with 200 large events is ~1 MB
MAX_STDERR_BYTES = 4 << 20
PROTOCOL_VERSION = "2025-06-18"
INITIALIZE_PARAMS = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "clawmcp-e2e", "version": "1"}}


class ServerGone(Exception):
    """The server exited or closed stdout before answering."""


@dataclass
class Reply:
    """One JSON-RPC response. `latency` is seconds from sending the request to reading the answer."""

    message: dict[str, Any]
    latency: float
    received_at: float

    @property
    def result(self) -> Any:
        return self.message.get("result")

    @property
    def error(self) -> Any:
        return self.message.get("error")


@dataclass
class Notification:
    message: dict[str, Any]
    received_at: float

    @property
    def method(self) -> str:
        return self.message.get("method", "")

    @property
    def params(self) -> Any:
        return self.message.get("params")


@dataclass
class StdioServer:
    name: str
    argv: list[str]
    env: dict[str, str]
    transcript: Path | None = None
    stderr_log: Path | None = None
    cwd: str | None = None
    spawned_at: float = 0.0
    notifications: list[Notification] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Condition()
        self._replies: dict[int, Reply] = {}
        self._sent_at: dict[int, float] = {}
        self._next_id = 0
        self._eof = False
        self._protocol_errors: list[str] = []
        self._transcript = open(self.transcript, "w", encoding="utf-8") if self.transcript else None
        self._stderr_file = open(self.stderr_log, "wb") if self.stderr_log else None
        self.spawned_at = time.perf_counter()
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.env,
            cwd=self.cwd,
        )
        self.pid_start = start_time(self.proc.pid)
        self._log(f"# spawned pid {self.proc.pid}: {' '.join(self.argv)}")
        threading.Thread(target=self._read_stdout, name=f"{self.name}-stdout", daemon=True).start()
        threading.Thread(target=self._read_stderr, name=f"{self.name}-stderr", daemon=True).start()

    # -- plumbing ------------------------------------------------------------------------------
    def _log(self, line: str) -> None:
        if self._transcript:
            with self._lock:
                self._transcript.write(line + "\n")
                self._transcript.flush()

    def _read_stdout(self) -> None:
        assert self.proc.stdout
        while True:
            raw = self.proc.stdout.readline(MAX_LINE_BYTES)
            now = time.perf_counter()
            if not raw:
                break
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self._log("<<< " + line)
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                with self._lock:
                    self._protocol_errors.append(f"stdout line is not JSON: {line[:200]!r}")
                continue
            with self._lock:
                if isinstance(message, dict) and "method" in message:
                    self.notifications.append(Notification(message, now))
                elif isinstance(message, dict) and isinstance(message.get("id"), int):
                    request_id = message["id"]
                    sent = self._sent_at.get(request_id, now)
                    self._replies[request_id] = Reply(message, now - sent, now)
                else:
                    self._protocol_errors.append(f"unexpected message: {line[:200]!r}")
                self._lock.notify_all()
        with self._lock:
            self._eof = True
            self._lock.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr
        written = 0
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            if self._stderr_file and written < MAX_STDERR_BYTES:
                self._stderr_file.write(chunk[: MAX_STDERR_BYTES - written])
                self._stderr_file.flush()
                written += len(chunk)

    def _write(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, separators=(",", ":"))
        self._log(">>> " + line)
        assert self.proc.stdin
        try:
            self.proc.stdin.write((line + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError) as err:
            raise ServerGone(f"{self.name}: stdin closed ({err})") from err

    # -- API -------------------------------------------------------------------------------------
    @property
    def protocol_errors(self) -> list[str]:
        with self._lock:
            return list(self._protocol_errors)

    def start(self, method: str, params: Any = None) -> int:
        """Send a request without waiting; returns its id for `wait`."""
        with self._lock:
            self._next_id += 1
            request_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        with self._lock:
            self._sent_at[request_id] = time.perf_counter()
        self._write(message)
        return request_id

    def wait(self, request_id: int, timeout: float) -> Reply:
        deadline = time.perf_counter() + timeout
        with self._lock:
            while request_id not in self._replies:
                remaining = deadline - time.perf_counter()
                if self._eof:
                    raise ServerGone(f"{self.name} closed stdout (exit {self.proc.poll()}) before answering #{request_id}")
                if remaining <= 0:
                    raise TimeoutError(f"{self.name}: no answer to #{request_id} within {timeout:.0f}s")
                self._lock.wait(min(remaining, 0.5))
            return self._replies.pop(request_id)

    def request(self, method: str, params: Any = None, timeout: float = 30.0) -> Reply:
        return self.wait(self.start(method, params), timeout)

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    def initialize(self, timeout: float = 60.0) -> Reply:
        reply = self.request("initialize", INITIALIZE_PARAMS, timeout)
        if reply.error is None:
            self.notify("notifications/initialized")
        return reply

    def call_tool(self, name: str, arguments: dict[str, Any], timeout: float = 30.0) -> Reply:
        return self.request("tools/call", {"name": name, "arguments": arguments}, timeout)

    def notifications_since(self, index: int, method: str) -> list[Notification]:
        with self._lock:
            return [n for n in self.notifications[index:] if n.method == method]

    def notification_count(self) -> int:
        with self._lock:
            return len(self.notifications)

    def wait_notification(self, method: str, predicate, since: int, timeout: float) -> Notification | None:
        """The first notification after index `since` with this method that satisfies predicate."""
        deadline = time.perf_counter() + timeout
        with self._lock:
            while True:
                for note in self.notifications[since:]:
                    if note.method == method and predicate(note.params):
                        return note
                remaining = deadline - time.perf_counter()
                if remaining <= 0 or self._eof:
                    return None
                self._lock.wait(min(remaining, 0.5))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_kb(self) -> tuple[int, int]:
        """(VmRSS summed over the server's process tree in kB, process count)."""
        return tree_rss_kb(self.proc.pid)

    def exit_report(self, lines: int = 5) -> str:
        """Why it is gone: exit code (waiting briefly for it) and the tail of its stderr."""
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        time.sleep(0.1)  # let the stderr thread copy the last bytes
        state = "still running" if code is None else f"exit code {code}"
        return f"{state}; stderr: {self.stderr_tail(lines) or '(empty)'}"

    def stderr_tail(self, lines: int = 15) -> str:
        if not self.stderr_log or not self.stderr_log.exists():
            return ""
        text = self.stderr_log.read_text("utf-8", "replace").splitlines()
        return "\n".join(text[-lines:])

    def close(self, grace: float = 10.0) -> int | None:
        """Close stdin (the MCP way to say goodbye) and wait; then SIGTERM, then SIGKILL.

        Signals go only to this server's own process tree, snapshotted now, and only to
        processes whose start time still matches. Returns the exit code it had after stdin
        closed, or None if it had to be signalled.
        """
        descendants = [(p, start_time(p)) for p in tree(self.proc.pid)[1:]]
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        code: int | None
        try:
            code = self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            code = None
            self._log(f"# no exit within {grace:.0f}s of stdin close; SIGTERM")
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid, started in descendants:
            if start_time(pid) == started:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self._log(f"# exit code {code if code is not None else 'n/a (signalled)'}")
        with self._lock:
            transcript, self._transcript = self._transcript, None
        if transcript:
            transcript.close()
        return code
