#!/usr/bin/env python3
"""`clawmcp serve` vs the real `openclaw mcp serve`, side by side against one real gateway.

Both bridges run as stdio children with the same flags (`--url ws://127.0.0.1:PORT
--token-file F --claude-channel-mode off|on`) and are driven in LOCKSTEP: every request goes
to both before either answer is awaited, and each gateway event is triggered once while both
are connected. So both see the same transcript, the same live events in the same order, and
the same cursors, and their answers can be compared value by value instead of only by shape.

Per mode (off, then on) the suite runs initialize, tools/list, ping and every tool
(conversations_list, conversation_get, messages_read, attachments_fetch, events_poll,
events_wait, messages_send, permissions_list_open, permissions_respond, plus their error
paths), triggers live events through the gateway (chat.inject = assistant note, chat.send =
user message), checks that they arrive through events_wait (a long-poll that is already
waiting when the event is triggered), events_poll and, in Claude mode, as
`notifications/claude/channel`; in Claude mode also the permission relay
(`.../permission_request` in, owner's "yes <id>" -> `.../permission` out).

Every row checks two things:
  1. expectations on each bridge's answer (the seeded conversation is listed, the live event
     carries the injected text, ...), so the harness is validated against the real bridge;
  2. the two answers are equal: same keys and JSON types recursively, and equal values,
     except the keys in EXEMPT_VALUE_KEYS (compared by type only); tools/list entries must
     be exactly equal (names, descriptions, inputSchema, execution) except that the
     candidate may add `annotations` (behaviour hints, which upstream leaves out; see
     CANDIDATE_EXTRA_KEYS). Text results of the form "<summary>\\n\\n<json>" are compared
     as JSON.
A row passes only if every bridge meets the expectations and the answers are equal.

Usage: serve_compat.py --gateway-env ROOT/gateway.env [--candidate clawmcp|openclaw|none]
                       [--clawmcp-bin PATH] [--modes off,on] [--artifacts DIR]
  --candidate clawmcp   compare against `clawmcp serve` (default; needs --clawmcp-bin)
  --candidate openclaw  compare the real bridge with a second real bridge (harness self-check:
                        everything must pass, which proves the comparison is not too strict)
  --candidate none      run the real bridge alone (expectations only)
Prints a PASS/FAIL table and the reasons; exits 1 if any row fails, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import SEEDED_ROUTE, SEEDED_SESSION, Gateway, bridge_argv, bridge_env  # noqa: E402
from mcp_stdio import INITIALIZE_PARAMS, PROTOCOL_VERSION, Reply, ServerGone, StdioServer  # noqa: E402

TOOL_NAMES = [
    "conversations_list",
    "conversation_get",
    "messages_read",
    "attachments_fetch",
    "events_poll",
    "events_wait",
    "messages_send",
    "permissions_list_open",
    "permissions_respond",
]
# Keys whose scalar values may legitimately differ between two correct bridges; their JSON
# type must still match. Lockstep driving makes everything else (message ids, cursors,
# timestamps, which both read from the same gateway) equal, so this stays short:
EXEMPT_VALUE_KEYS = frozenset(
    {
        "version",  # initialize serverInfo.version: each implementation reports its own
        "name",  # initialize serverInfo.name: idem (tool names are checked in tools/list, exactly)
    }
)
# ...and only where they are volatile, not anywhere in a result:
EXEMPT_PATHS = ("$.result.serverInfo.",)
# Keys only the candidate may add, and only in these objects: clawmcp annotates each tool with
# behaviour hints (readOnlyHint, ...), which the real bridge does not send. Everything else in
# a tools/list entry must still match exactly, and the reference never gets this allowance.
CANDIDATE_EXTRA_KEYS = {"annotations": re.compile(r"^\$\.result\.tools\[\d+\]$")}
PERMISSION_ID_ALPHABET = "abcdefghijkmnopqrstuvwxyz"  # the bridge's 5-letter ids exclude "l"
INITIALIZE_TIMEOUT = 120.0  # openclaw needs 1-8 s, more when the machine is loaded
CALL_TIMEOUT = 30.0
LIVE_WAIT_MS = 15000


# -- comparison -------------------------------------------------------------------------------


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def split_text_json(text: str) -> tuple[str, Any] | None:
    """'<summary>\\n\\n<JSON.stringify(x, null, 2)>' -> (summary, x); None if not that shape."""
    head, sep, tail = text.partition("\n\n")
    if not sep:
        return None
    try:
        return head, json.loads(tail)
    except ValueError:
        return None


def is_exempt(path: str, key: str) -> bool:
    return key in EXEMPT_VALUE_KEYS and any(path.startswith(prefix) for prefix in EXEMPT_PATHS)


def is_allowed_extra(path: str, key: str) -> bool:
    where = CANDIDATE_EXTRA_KEYS.get(key)
    return where is not None and where.match(path) is not None


def structural_diff(ref: Any, cand: Any, path: str = "$", key: str = "") -> list[str]:
    """Differences between the reference and the candidate answer, as 'path: what' lines."""
    if json_type(ref) != json_type(cand):
        return [f"{path}: type {json_type(ref)} vs {json_type(cand)} ({_short(ref)} vs {_short(cand)})"]
    if isinstance(ref, dict):
        diffs = [f"{path}: key {k!r} missing" for k in ref if k not in cand]
        diffs += [f"{path}: extra key {k!r}" for k in cand if k not in ref and not is_allowed_extra(path, k)]
        for k in ref:
            if k in cand:
                diffs += structural_diff(ref[k], cand[k], f"{path}.{k}", k)
        return diffs
    if isinstance(ref, list):
        if len(ref) != len(cand):
            return [f"{path}: {len(ref)} items vs {len(cand)}"]
        diffs: list[str] = []
        for i, (r, c) in enumerate(zip(ref, cand)):
            diffs += structural_diff(r, c, f"{path}[{i}]", key)
        return diffs
    if ref == cand or is_exempt(path, key):
        return []
    if isinstance(ref, str) and key == "text":
        ref_parts, cand_parts = split_text_json(ref), split_text_json(cand)
        if ref_parts and cand_parts:
            diffs = [] if ref_parts[0] == cand_parts[0] else [f"{path}: summary {ref_parts[0]!r} vs {cand_parts[0]!r}"]
            diffs += structural_diff(ref_parts[1], cand_parts[1], f"{path}<json>")
            if not diffs:
                # Same data, different bytes: only the layout can differ (indentation, escaping).
                diffs = [f"{path}: same JSON, different text layout"]
            return diffs
    return [f"{path}: {_short(ref)} vs {_short(cand)}"]


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- answers ----------------------------------------------------------------------------------


class Unexpected(Exception):
    """An answer that does not meet the row's expectation."""


def result_of(reply: Reply) -> dict[str, Any]:
    if reply.error is not None:
        raise Unexpected(f"JSON-RPC error {_short(reply.error)}")
    if not isinstance(reply.result, dict):
        raise Unexpected(f"no result object: {_short(reply.message)}")
    return reply.result


def tool_ok(reply: Reply) -> tuple[str, dict[str, Any]]:
    """(text, structuredContent) of a successful tool result."""
    result = result_of(reply)
    if result.get("isError"):
        raise Unexpected(f"tool error: {_short(result.get('content'))}")
    content = result.get("content")
    if not (isinstance(content, list) and content and content[0].get("type") == "text"):
        raise Unexpected(f"no text content: {_short(result)}")
    structured = result.get("structuredContent")
    if not isinstance(structured, dict):
        raise Unexpected(f"no structuredContent: {_short(result)}")
    return content[0]["text"], structured


def tool_error_text(reply: Reply) -> str:
    result = result_of(reply)
    if result.get("isError") is not True:
        raise Unexpected(f"expected isError, got {_short(result)}")
    content = result.get("content") or [{}]
    return content[0].get("text", "")


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Unexpected(message)


# -- the lockstep runner ---------------------------------------------------------------------------


@dataclass
class Row:
    mode: str
    label: str
    status: dict[str, str]  # bridge label -> "ok" or why not
    diffs: list[str] | None  # None: not compared (fewer than two answers)

    @property
    def passed(self) -> bool:
        return all(s == "ok" for s in self.status.values()) and not self.diffs


@dataclass
class Bridge:
    label: str
    server: StdioServer | None
    gone: str = ""  # why it can no longer be driven
    state: dict[str, Any] = field(default_factory=dict)


Expect = Callable[[Bridge, Reply], None]


class Pass:
    """One mode: spawns the bridges, runs the steps, records rows, shuts them down."""

    def __init__(self, gateway: Gateway, mode: str, kinds: list[tuple[str, str]], clawmcp_bin: str | None, artifacts: Path):
        self.gateway, self.mode, self.rows = gateway, mode, []
        self.tag = f"{mode}-{secrets.token_hex(3)}"
        self.bridges: list[Bridge] = []
        for label, kind in kinds:
            home = artifacts / f"{mode}-{label}"
            try:
                server = StdioServer(
                    name=label,
                    argv=bridge_argv(kind, gateway, mode, clawmcp_bin),
                    env=bridge_env(home),
                    transcript=home / "transcript.log",
                    stderr_log=home / "stderr.log",
                    cwd=str(home),
                )
                self.bridges.append(Bridge(label, server))
            except OSError as err:
                self.bridges.append(Bridge(label, None, gone=f"cannot spawn: {err}"))

    def live(self) -> list[Bridge]:
        return [b for b in self.bridges if not b.gone]

    def record(self, label: str, status: dict[str, str], replies: dict[str, Reply]) -> None:
        diffs = None
        if len(self.bridges) == 2 and all(b.label in replies for b in self.bridges):
            ref, cand = (replies[b.label].message for b in self.bridges)
            diffs = structural_diff(ref, cand)
        self.rows.append(Row(self.mode, label, status, diffs))

    def step(
        self,
        label: str,
        method: str,
        params: Callable[[Bridge], Any],
        expect: Expect,
        timeout: float = CALL_TIMEOUT,
        while_waiting: Callable[[], None] | None = None,
    ) -> dict[str, Reply]:
        """Send one request to every live bridge, optionally act while they are pending, then
        collect and judge the answers."""
        status = {b.label: f"not run: {b.gone}" for b in self.bridges if b.gone}
        pending: dict[str, tuple[Bridge, int]] = {}
        for b in self.live():
            try:
                pending[b.label] = (b, b.server.start(method, params(b)))
            except ServerGone as err:
                b.gone = status[b.label] = f"{err}; {b.server.exit_report()}"
        if while_waiting:
            try:
                while_waiting()
            except Exception as err:  # a failed trigger fails the row for everyone
                for name in pending:
                    status[name] = f"trigger failed: {err}"
        replies: dict[str, Reply] = {}
        for name, (b, request_id) in pending.items():
            try:
                replies[name] = b.server.wait(request_id, timeout)
            except ServerGone as err:
                b.gone = status[name] = f"{err}; {b.server.exit_report()}"
                continue
            except TimeoutError as err:
                status[name] = str(err)
                continue
            if name in status:
                continue
            try:
                expect(b, replies[name])
                status[name] = "ok"
            except Unexpected as err:
                status[name] = str(err)
            except (KeyError, TypeError, IndexError, AttributeError) as err:
                status[name] = f"unexpected shape ({type(err).__name__}: {err})"
        self.record(label, status, replies)
        return replies

    def tool(self, label: str, name: str, args: Callable[[Bridge], dict] | dict, expect: Expect, **kw) -> dict[str, Reply]:
        args_for = args if callable(args) else (lambda _b, a=args: a)
        return self.step(label, "tools/call", lambda b: {"name": name, "arguments": args_for(b)}, expect, **kw)

    def observe(self, label: str, judge: Callable[[Bridge], Any]) -> None:
        """A row about what the bridges did on their own (notifications); judge returns the value
        to compare across bridges, or raises Unexpected."""
        status = {b.label: f"not run: {b.gone}" for b in self.bridges if b.gone}
        values: dict[str, Any] = {}
        for b in self.live():
            try:
                values[b.label] = judge(b)
                status[b.label] = "ok"
            except (Unexpected, ServerGone, TimeoutError) as err:
                status[b.label] = str(err)
            except (KeyError, TypeError, IndexError, AttributeError) as err:
                status[b.label] = f"unexpected shape ({type(err).__name__}: {err})"
        diffs = None
        if len(self.bridges) == 2 and len(values) == 2:
            diffs = structural_diff(*(values[b.label] for b in self.bridges))
        self.rows.append(Row(self.mode, label, status, diffs))

    def settle(self, seconds: float = 10.0) -> None:
        """Wait until every bridge's queue stops growing and all agree on the newest cursor, so
        the next compared answer cannot differ just because an event landed in between."""
        deadline = time.monotonic() + seconds
        previous: dict[str, Any] = {}
        while time.monotonic() < deadline:
            current: dict[str, Any] = {}
            for b in self.live():
                try:
                    _, sc = tool_ok(b.server.call_tool("events_poll", {"after_cursor": b.state.get("cursor", 0), "limit": 200}))
                    current[b.label] = sc.get("next_cursor")
                except (Unexpected, ServerGone, TimeoutError):
                    return
            if current == previous and len(set(map(json.dumps, current.values()))) <= 1:
                return
            previous = current
            time.sleep(0.3)

    def close(self) -> None:
        status: dict[str, str] = {}
        for b in self.bridges:
            if b.server is None:
                status[b.label] = f"not run: {b.gone}"
                continue
            code = b.server.close(grace=10.0)
            status[b.label] = "ok" if code == 0 else f"exit code {code} after stdin close (want 0)"
        self.rows.append(Row(self.mode, "exit 0 on stdin close", status, None))

    # -- the scenario ----------------------------------------------------------------------------
    def run(self) -> None:
        mode, tag = self.mode, self.tag
        claude = mode != "off"

        def expect_initialize(b: Bridge, reply: Reply) -> None:
            b.state["init_seconds"] = reply.received_at - b.server.spawned_at
            result = result_of(reply)
            check(result.get("protocolVersion") == PROTOCOL_VERSION, f"protocolVersion {result.get('protocolVersion')!r}")
            caps = result.get("capabilities", {})
            check("tools" in caps, f"no tools capability: {_short(caps)}")
            experimental = caps.get("experimental") or {}
            has_channel = "claude/channel" in experimental and "claude/channel/permission" in experimental
            check(has_channel == claude, f"experimental {_short(experimental)} with --claude-channel-mode {mode}")

        replies = self.step("initialize", "initialize", lambda _b: INITIALIZE_PARAMS, expect_initialize, timeout=INITIALIZE_TIMEOUT)
        for b in self.live():
            if b.label in replies and replies[b.label].error is None:
                b.server.notify("notifications/initialized")
            else:
                b.gone = b.gone or "initialize failed"

        def expect_tools(_b: Bridge, reply: Reply) -> None:
            names = [t.get("name") for t in result_of(reply).get("tools", [])]
            check(names == TOOL_NAMES, f"tools {names}")

        self.step("tools/list", "tools/list", lambda _b: {}, expect_tools)
        self.step("ping", "ping", lambda _b: None, lambda _b, r: check(result_of(r) == {}, f"ping {_short(r.message)}"))

        def expect_conversations(_b: Bridge, reply: Reply) -> None:
            text, sc = tool_ok(reply)
            rows = [c for c in sc["conversations"] if c.get("sessionKey") == SEEDED_SESSION]
            check(len(rows) == 1, f"seeded conversation not listed: {_short(sc)}")
            check({k: rows[0].get(k) for k in SEEDED_ROUTE} == SEEDED_ROUTE, f"route {_short(rows[0])}")
            check(text.startswith(f"conversations: {len(sc['conversations'])}\n\n"), f"text {text[:40]!r}")

        self.tool("conversations_list", "conversations_list", {}, expect_conversations)
        self.tool(
            "conversations_list {channel: IMESSAGE, limit: 5}",
            "conversations_list",
            {"channel": "IMESSAGE", "limit": 5},
            expect_conversations,
        )

        def expect_conversation(_b: Bridge, reply: Reply) -> None:
            text, sc = tool_ok(reply)
            check(text == f"conversation {SEEDED_SESSION}", f"text {text!r}")
            check(sc["conversation"]["sessionKey"] == SEEDED_SESSION, f"conversation {_short(sc)}")

        self.tool("conversation_get", "conversation_get", {"session_key": SEEDED_SESSION}, expect_conversation)
        missing = "agent:main:does-not-exist"
        self.tool(
            "conversation_get (unknown key)",
            "conversation_get",
            {"session_key": missing},
            lambda _b, r: check(tool_error_text(r) == f"conversation not found: {missing}", f"text {tool_error_text(r)!r}"),
        )

        def expect_messages(_b: Bridge, reply: Reply) -> None:
            text, sc = tool_ok(reply)
            ids = [m.get("__openclaw", {}).get("id") for m in sc["messages"]]
            check("msg-attachment" in ids, f"seeded attachment message missing: ids {ids}")
            check(text.startswith(f"messages: {len(sc['messages'])}\n\n"), f"text {text[:40]!r}")

        self.tool("messages_read", "messages_read", {"session_key": SEEDED_SESSION, "limit": 20}, expect_messages)

        def expect_attachment(_b: Bridge, reply: Reply) -> None:
            text, sc = tool_ok(reply)
            check(text == "attachments: 1", f"text {text!r}")
            attachment = sc["attachments"][0]
            check(attachment["type"] == "openclaw_media", f"attachment {_short(attachment)}")
            check(attachment["media"]["url"] == "media://inbound/seeded-image.png", f"media {_short(attachment)}")
            check(sc["message"]["__openclaw"]["id"] == "msg-attachment", "wrong message")

        self.tool(
            "attachments_fetch",
            "attachments_fetch",
            {"session_key": SEEDED_SESSION, "message_id": "msg-attachment"},
            expect_attachment,
        )
        self.tool(
            "attachments_fetch (unknown message)",
            "attachments_fetch",
            {"session_key": SEEDED_SESSION, "message_id": "msg-nope"},
            lambda _b, r: check(tool_error_text(r) == "message not found: msg-nope", f"text {tool_error_text(r)!r}"),
        )

        def expect_invalid_arguments(tool: str) -> Expect:
            prefix = f"MCP error -32602: Input validation error: Invalid arguments for tool {tool}: "
            return lambda _b, r: check(tool_error_text(r).startswith(prefix), f"text {tool_error_text(r)!r}")

        self.tool(
            "messages_read (limit 0, below the minimum)",
            "messages_read",
            {"session_key": SEEDED_SESSION, "limit": 0},
            expect_invalid_arguments("messages_read"),
        )
        self.tool("messages_read (no session_key)", "messages_read", {}, expect_invalid_arguments("messages_read"))
        self.step(
            "unknown JSON-RPC method",
            "no/such/method",
            lambda _b: {},
            lambda _b, r: check((r.error or {}).get("code") == -32601, f"{_short(r.message)}"),
        )

        def expect_poll_baseline(b: Bridge, reply: Reply) -> None:
            text, sc = tool_ok(reply)
            check(isinstance(sc["events"], list) and isinstance(sc["next_cursor"], int), f"shape {_short(sc)}")
            check(text == f"events: {len(sc['events'])}", f"text {text!r}")
            b.state["cursor"] = sc["next_cursor"]

        self.settle()
        self.tool("events_poll (before live events)", "events_poll", {}, expect_poll_baseline)
        notes_before = {b.label: b.server.notification_count() for b in self.live()}

        # Live event 1: an assistant note, injected while both bridges are already long-polling.
        note_text = f"compat live note {tag}"
        injected: dict[str, str] = {}

        def trigger_inject() -> None:
            time.sleep(0.5)  # let the waits register first: this exercises the wake-up path
            injected["id"] = self.gateway.inject(note_text)

        def expect_live_note(b: Bridge, reply: Reply) -> None:
            text, sc = tool_ok(reply)
            event = sc["event"]
            check(event is not None, f"no event: {_short(sc)}")
            check(event["type"] == "message" and event["role"] == "assistant", f"event {_short(event)}")
            check(event["text"] == note_text, f"text {event.get('text')!r}")
            check(event["messageId"] == injected.get("id"), f"messageId {event.get('messageId')} vs {injected.get('id')}")
            check(event["sessionKey"] == SEEDED_SESSION, f"sessionKey {event.get('sessionKey')}")
            check(text == f"event {event['cursor']}", f"text {text!r}")
            b.state["note_cursor"] = event["cursor"]

        self.tool(
            "events_wait (woken by chat.inject)",
            "events_wait",
            lambda b: {"session_key": SEEDED_SESSION, "after_cursor": b.state.get("cursor", 0), "timeout_ms": LIVE_WAIT_MS},
            expect_live_note,
            timeout=LIVE_WAIT_MS / 1000 + 15,
            while_waiting=trigger_inject,
        )
        self.settle()
        self.tool(
            "events_wait (already queued)",
            "events_wait",
            lambda b: {"session_key": SEEDED_SESSION, "after_cursor": b.state.get("cursor", 0), "timeout_ms": 1000},
            expect_live_note,
        )

        def expect_poll_note(b: Bridge, reply: Reply) -> None:
            text, sc = tool_ok(reply)
            ours = [e for e in sc["events"] if e.get("messageId") == injected.get("id")]
            check(len(ours) == 1, f"injected event not in {text!r}: {_short(sc)}")
            check(ours[0]["cursor"] == b.state.get("note_cursor"), "cursor differs from events_wait's")
            check(sc["next_cursor"] == sc["events"][-1]["cursor"], f"next_cursor {sc['next_cursor']}")

        self.tool(
            "events_poll (live event)",
            "events_poll",
            lambda b: {"session_key": SEEDED_SESSION, "after_cursor": b.state.get("cursor", 0), "limit": 10},
            expect_poll_note,
        )
        self.tool(
            "events_poll (other session filter)",
            "events_poll",
            lambda b: {"session_key": "agent:main:other", "after_cursor": b.state.get("cursor", 0)},
            lambda _b, r: check(tool_ok(r)[1]["events"] == [], f"events {_short(r.result)}"),
        )

        def expect_timeout(_b: Bridge, reply: Reply) -> None:
            text, sc = tool_ok(reply)
            check(text == "timeout" and sc["event"] is None, f"{text!r} {_short(sc)}")

        self.tool(
            "events_wait (timeout)",
            "events_wait",
            lambda b: {"session_key": SEEDED_SESSION, "after_cursor": b.state.get("note_cursor", 0), "timeout_ms": 1000},
            expect_timeout,
        )

        # Live event 2: a user message (chat.send); in Claude mode it is also pushed.
        user_text = f"compat user message {tag}"
        sent: dict[str, Any] = {}

        def trigger_send() -> None:
            time.sleep(0.5)
            sent.update(self.gateway.send_user_message(user_text, f"compat-{tag}-user"))

        def expect_user_event(b: Bridge, reply: Reply) -> None:
            _, sc = tool_ok(reply)
            event = sc["event"]
            check(event is not None, f"no event: {_short(sc)}")
            check(event["type"] == "message" and event["role"] == "user", f"event {_short(event)}")
            check(event["text"] == user_text, f"text {event.get('text')!r}")
            b.state["user_event"] = event

        self.tool(
            "events_wait (woken by chat.send)",
            "events_wait",
            lambda b: {"session_key": SEEDED_SESSION, "after_cursor": b.state.get("note_cursor", 0), "timeout_ms": LIVE_WAIT_MS},
            expect_user_event,
            timeout=LIVE_WAIT_MS / 1000 + 80,
            while_waiting=trigger_send,
        )

        def judge_channel_notes(b: Bridge) -> Any:
            wanted = 1 if claude else 0
            if claude:
                b.server.wait_notification(
                    "notifications/claude/channel", lambda p: p.get("content") == user_text, notes_before[b.label], 10.0
                )
            else:
                time.sleep(1.0)  # give a wrongly sent notification the time to show up
            notes = b.server.notifications_since(notes_before[b.label], "notifications/claude/channel")
            check(len(notes) == wanted, f"{len(notes)} claude/channel notifications, want {wanted}: {_short([n.params for n in notes])}")
            if not claude:
                return []
            params = notes[0].params
            event = b.state.get("user_event") or {}
            want_meta = {
                "session_key": SEEDED_SESSION,
                "channel": SEEDED_ROUTE["channel"],
                "to": SEEDED_ROUTE["to"],
                "account_id": SEEDED_ROUTE["accountId"],
                "thread_id": SEEDED_ROUTE["threadId"],
                "message_id": event.get("messageId"),
            }
            check(params.get("content") == user_text, f"content {params.get('content')!r}")
            check(params.get("meta") == want_meta, f"meta {_short(params.get('meta'))}")
            return [n.message for n in notes]

        self.observe(
            "notifications/claude/channel (user msg only)" if claude else "no claude/channel notifications (mode off)",
            judge_channel_notes,
        )
        if claude:
            self.permission_relay()

        self.tool(
            "messages_send (no channel plugin)",
            "messages_send",
            {"session_key": SEEDED_SESSION, "text": f"compat reply {tag}"},
            lambda _b, r: check(tool_error_text(r) == "unsupported channel: imessage", f"text {tool_error_text(r)!r}"),
        )

        def expect_no_approvals(_b: Bridge, reply: Reply) -> None:
            text, sc = tool_ok(reply)
            check(text == "approvals: 0" and sc == {"approvals": []}, f"{text!r} {_short(sc)}")

        self.tool("permissions_list_open", "permissions_list_open", {}, expect_no_approvals)
        for kind in ("exec", "plugin"):
            self.tool(
                f"permissions_respond ({kind}, unknown id)",
                "permissions_respond",
                {"kind": kind, "id": f"compat-missing-{tag}", "decision": "deny"},
                lambda _b, r: check("unknown or expired approval id" in tool_error_text(r), f"text {tool_error_text(r)!r}"),
            )

        def expect_unknown_tool(_b: Bridge, reply: Reply) -> None:
            if reply.error is not None:
                return  # a JSON-RPC error is acceptable here; the comparison decides
            check("no_such_tool" in tool_error_text(reply), f"{_short(reply.result)}")

        self.tool("tools/call unknown tool", "no_such_tool", {}, expect_unknown_tool)
        self.close()

    def permission_relay(self) -> None:
        """Claude permission relay: a permission_request notification becomes a queued event;
        the owner's "yes <id>" in the conversation becomes .../permission and is swallowed."""
        request_id = "".join(secrets.choice(PERMISSION_ID_ALPHABET) for _ in range(5))
        request = {"request_id": request_id, "tool_name": "Bash", "description": "compat check", "input_preview": "echo hi"}
        for b in self.live():
            b.state["before_permission"] = b.server.notification_count()
            try:
                b.server.notify("notifications/claude/channel/permission_request", request)
            except ServerGone as err:
                b.gone = str(err)

        def expect_request_event(b: Bridge, reply: Reply) -> None:
            _, sc = tool_ok(reply)
            event = sc["event"]
            want = {"type": "claude_permission_request", "requestId": request_id, "toolName": "Bash"}
            check(event is not None and {k: event.get(k) for k in want} == want, f"event {_short(event)}")
            check(event.get("description") == "compat check" and event.get("inputPreview") == "echo hi", _short(event))
            b.state["permission_cursor"] = event["cursor"]

        self.tool(
            "permission_request -> events_wait",
            "events_wait",
            lambda b: {"after_cursor": (b.state.get("user_event") or {}).get("cursor", 0), "timeout_ms": 5000},
            expect_request_event,
        )
        reply_text = f"yes {request_id}"
        self.gateway.send_user_message(reply_text, f"compat-{self.tag}-permission")

        def judge_permission(b: Bridge) -> Any:
            since = b.state["before_permission"]
            note = b.server.wait_notification(
                "notifications/claude/channel/permission", lambda p: p.get("request_id") == request_id, since, 10.0
            )
            check(note is not None, "no notifications/claude/channel/permission")
            check(note.params == {"request_id": request_id, "behavior": "allow"}, f"params {_short(note.params)}")
            forwarded = [n for n in b.server.notifications_since(since, "notifications/claude/channel")]
            check(not forwarded, f"the reply was also forwarded: {_short([n.params for n in forwarded])}")
            _, sc = tool_ok(b.server.call_tool("events_poll", {"after_cursor": b.state.get("permission_cursor", 0)}))
            queued = [e for e in sc["events"] if e.get("text") == reply_text]
            check(not queued, f"the reply was also queued: {_short(queued)}")
            return note.message

        self.observe("owner 'yes <id>' -> claude/channel/permission", judge_permission)


# -- main ---------------------------------------------------------------------------------------


def print_table(rows: list[Row], labels: list[str], out=sys.stdout) -> None:
    width = max(len(r.label) for r in rows) + 2
    header = f"{'mode':<5} {'step':<{width}}" + "".join(f"{lbl:<12}" for lbl in labels) + f"{'same':<6}verdict"
    print(header, file=out)
    print("-" * len(header), file=out)
    for r in rows:
        cells = "".join(f"{('ok' if r.status.get(lbl) == 'ok' else 'FAIL'):<12}" for lbl in labels)
        same = "-" if r.diffs is None else ("yes" if not r.diffs else "NO")
        print(f"{r.mode:<5} {r.label:<{width}}{cells}{same:<6}{'PASS' if r.passed else 'FAIL'}", file=out)


def print_failures(rows: list[Row], out=sys.stdout) -> None:
    not_run = 0
    for r in rows:
        if r.passed:
            continue
        if all(s == "ok" or s.startswith("not run:") for s in r.status.values()) and not r.diffs:
            not_run += 1  # the reason was printed with the step that made the bridge unusable
            continue
        print(f"\n[{r.mode}] {r.label}", file=out)
        for label, status in r.status.items():
            if status != "ok":
                print(f"  {label}: {status}", file=out)
        for diff in (r.diffs or [])[:12]:
            print(f"  diff {diff}", file=out)
        if r.diffs and len(r.diffs) > 12:
            print(f"  ... {len(r.diffs) - 12} more differences", file=out)
    if not_run:
        print(f"\n{not_run} more failed rows were not run because a bridge was already unusable (see above)", file=out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gateway-env", required=True, type=Path)
    ap.add_argument("--candidate", choices=["clawmcp", "openclaw", "none"], default="clawmcp")
    ap.add_argument("--clawmcp-bin")
    ap.add_argument("--modes", default="off,on")
    ap.add_argument("--artifacts", type=Path, required=True)
    a = ap.parse_args()
    modes = [m for m in a.modes.split(",") if m]
    if any(m not in ("off", "on", "auto") for m in modes):
        ap.error("--modes takes off, on, auto")
    if a.candidate == "clawmcp" and not a.clawmcp_bin:
        ap.error("--candidate clawmcp needs --clawmcp-bin")
    gateway = Gateway.from_env_file(a.gateway_env)
    kinds = [("openclaw", "openclaw")]
    if a.candidate == "clawmcp":
        kinds.append(("clawmcp", "clawmcp"))
    elif a.candidate == "openclaw":
        kinds.append(("openclaw#2", "openclaw"))
    labels = [label for label, _ in kinds]

    rows: list[Row] = []
    timings: list[str] = []
    for mode in modes:
        print(f"[serve-compat] mode {mode}: {' vs '.join(labels)}", file=sys.stderr)
        run = Pass(gateway, mode, kinds, a.clawmcp_bin, a.artifacts)
        try:
            run.run()
        except (RuntimeError, ServerGone, TimeoutError, OSError) as err:
            # A failed trigger or a vanished bridge outside a step: the rest of this mode is moot.
            run.rows.append(Row(mode, "suite ran to the end", {"harness": f"{type(err).__name__}: {err}"}, None))
        finally:
            for b in run.bridges:
                if b.server and b.server.alive():
                    b.server.close(grace=2.0)
        rows += run.rows
        for b in run.bridges:
            if "init_seconds" in b.state:
                timings.append(f"{mode}/{b.label}: spawn->initialize {b.state['init_seconds']:.3f}s")
            if b.server and b.server.protocol_errors:
                rows.append(Row(mode, "stdout is clean JSON-RPC", {b.label: "; ".join(b.server.protocol_errors[:3])}, None))
        if not gateway.alive():
            print(f"[serve-compat] the gateway died; log tail:\n{gateway.log_tail()}", file=sys.stderr)
            rows.append(Row(mode, "gateway alive", {"gateway": "exited"}, None))
            break

    print()
    print_table(rows, labels)
    print_failures(rows)
    failed = [r for r in rows if not r.passed]
    print(f"\n{len(rows) - len(failed)} passed, {len(failed)} failed ({', '.join(timings)})")
    report = [
        {"mode": r.mode, "step": r.label, "status": r.status, "diffs": r.diffs, "passed": r.passed} for r in rows
    ]
    (a.artifacts / "serve-compat.json").write_text(json.dumps(report, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
