"""A scripted model provider for the gateway's agent turns: a stdlib HTTP server on 127.0.0.1 that
speaks the OpenAI Chat Completions API (`POST .../chat/completions`, streamed as SSE when the
request says `stream: true`, plain JSON otherwise; `GET .../models`), which the gateway uses for a
custom provider with `api: "openai-completions"`.

It plays one fixed script, decided from each request alone (stateless: a retry of the same
request gets the same answer). "The turn" is everything after the last real user message: the
gateway appends a user message of internal context (INTERNAL_MARK) to every request, also after a
tool result, so the last message is never the tool result; tool call ids come back rewritten to
[A-Za-z0-9] (normal_id).
  - the user message lacks TRIGGER                       -> IDLE_TEXT (a background run, a title)
  - the turn holds a result of the target tool, called
    directly or through tool_call                        -> FINAL_TEXT
  - MAX_CALLS_PER_TURN tool calls in the turn already    -> a give-up text (no endless loop)
  - the request offers the target (exact name, else a
    name ending in it)                                   -> one tool call to it with `arguments`
  - the turn holds a tool_search result naming it        -> tool_call {id: <its id>, args}
  - the request offers tool_search (the gateway's
    default Tool Search surface)                         -> tool_search {query: <target>}
  - else                                                 -> a text naming the offered tools
Every request (path, headers without credentials, body) and its answer is recorded in memory and,
one JSON object a line, in the log file.

Standalone: python3 scripted_model.py --log FILE [--port N] [--tool device_info] prints
`SCRIPTED_MODEL_URL=http://127.0.0.1:PORT/v1` and serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL_ID = "scripted-1"
FINAL_TEXT = "SCRIPTED-FINAL: the node answered device_info"
SECRET_HEADERS = {"authorization", "x-api-key", "api-key", "cookie"}
# Only a user message carrying TRIGGER starts the script; any other request the gateway makes
# with this model (a background review run, a title) gets IDLE_TEXT and no tool call.
TRIGGER = "[clawmcp-e2e-agent-turn]"
IDLE_TEXT = "SCRIPTED-IDLE: no trigger in this request"
INTERNAL_MARK = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"
# More tool calls than the script ever makes in one turn: answer with text and end the turn
# (an agent loop that never sees the result it wants must not run until its timeout).
MAX_CALLS_PER_TURN = 4


def tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        function = (tool or {}).get("function") or {}
        if isinstance(function.get("name"), str):
            names.append(function["name"])
    return names


def pick_tool(body: dict[str, Any], target: str) -> str | None:
    names = tool_names(body)
    if target in names:
        return target
    return next((name for name in names if name.endswith(target)), None)


def is_internal(message: dict[str, Any]) -> bool:
    """The gateway appends a user message of runtime context (active exec sessions, subagents)
    after the conversation, also after a tool result; it is not the user's turn."""
    return message.get("role") == "user" and text_of(message.get("content")).lstrip().startswith(INTERNAL_MARK)


def current_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages after the last real user message (the assistant's tool calls and the results)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user" and not is_internal(messages[index]):
            return messages[index + 1:]
    return messages


def asked_text(body: dict[str, Any]) -> str:
    """The text of the real user message that opened the current turn ("" when none)."""
    messages = body.get("messages") or []
    turn = current_turn(messages)
    return text_of(messages[-len(turn) - 1].get("content")) if len(turn) < len(messages) else ""


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def normal_id(call_id: Any) -> str:
    """The gateway rewrites tool call ids to [A-Za-z0-9] (call_scripted_1 -> callscripted1)."""
    return "".join(ch for ch in str(call_id or "") if ch.isalnum())


def tool_call_target(arguments: dict[str, Any]) -> str | None:
    target = arguments.get("id") or arguments.get("name")
    return target if isinstance(target, str) else None


def names_target(ident: str | None, target: str) -> bool:
    """A catalog id names target when it is target or ends in ":target" (mcp:clawmcp:device_info)."""
    return isinstance(ident, str) and (ident == target or ident.endswith(":" + target))


def search_hit(result_text: str, target: str) -> str | None:
    """The id of the tool_search candidate named target (or whose id ends in it), from the
    result text: a JSON array of candidates ({id: "mcp:clawmcp:device_info", name:
    "device_info", source: "mcp", ...}), or an object with results[].candidates."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            name, ident = node.get("name"), node.get("id")
            if isinstance(ident, str) and (name == target or names_target(ident, target)):
                found.append(ident)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    # The gateway wraps the JSON in an untrusted-content notice and markers: decode the first
    # JSON value that starts at a bracket and parses.
    decoder = json.JSONDecoder()
    for index, char in enumerate(result_text):
        if char in "[{":
            try:
                value, _ = decoder.raw_decode(result_text, index)
            except json.JSONDecodeError:
                continue
            walk(value)
            break
    return found[0] if found else None


class ScriptedModel:
    def __init__(self, log_path: Path, target_tool: str = "device_info", arguments: dict[str, Any] | None = None,
                 port: int = 0):
        self.log_path = log_path
        self.target_tool = target_tool
        self.arguments = arguments or {}
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.calls = 0
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet: everything goes to the JSONL log
                pass

            def do_GET(self) -> None:  # noqa: N802
                model.record(self, None, {"kind": "get"})
                if self.path.rstrip("/").endswith("/models"):
                    self.send_json(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model",
                                                                     "owned_by": "clawmcp-e2e"}]})
                else:
                    self.send_json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    model.record(self, None, {"kind": "bad-json", "raw": raw[:2000].decode("utf-8", "replace")})
                    self.send_json(400, {"error": {"message": "bad json"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    model.record(self, body, {"kind": "unknown-route"})
                    self.send_json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                answer = model.answer(body)
                model.record(self, body, answer)
                if body.get("stream"):
                    self.send_stream(body, answer)
                else:
                    self.send_json(200, model.completion(body, answer))

            def send_json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def send_stream(self, body: dict[str, Any], answer: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for chunk in model.chunks(body, answer):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # -- the script ----------------------------------------------------------------------------
    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The next step of the script for this request alone (see the module doc)."""
        turn = current_turn(body.get("messages") or [])
        if TRIGGER not in asked_text(body):
            return {"kind": "text", "text": IDLE_TEXT}
        calls = {}  # normalized call id -> (tool name, parsed arguments) of this turn's tool calls
        for message in turn:
            for call in message.get("tool_calls") or [] if message.get("role") == "assistant" else []:
                function = call.get("function") or {}
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except json.JSONDecodeError:
                    arguments = {}
                calls[normal_id(call.get("id"))] = (function.get("name"), arguments)
        results = [(calls.get(normal_id(m.get("tool_call_id")), (None, {})), text_of(m.get("content")))
                   for m in turn if m.get("role") == "tool"]
        target = self.target_tool
        for (name, arguments), text in results:
            if name == target or (name == "tool_call" and names_target(tool_call_target(arguments), target)):
                return {"kind": "final", "text": FINAL_TEXT, "after": name}
        if len(calls) >= MAX_CALLS_PER_TURN:
            return {"kind": "text", "text": f"SCRIPTED-GIVEUP: {len(calls)} tool calls without a {target} result"}
        direct = pick_tool(body, target)
        if direct:
            return self.tool_call(direct, self.arguments)
        offered = tool_names(body)
        searched = [text for (name, _), text in results if name == "tool_search"]
        if searched and "tool_call" in offered:
            found = search_hit(searched[-1], target)
            if found:
                return self.tool_call("tool_call", {"id": found, "args": self.arguments})
            return {"kind": "text", "text": f"SCRIPTED: tool_search found no {target}: {searched[-1][:400]}"}
        if "tool_search" in offered and not searched:
            return self.tool_call("tool_search", {"query": target})
        return {"kind": "text", "text": f"SCRIPTED: no {target} tool among {offered}"}

    def tool_call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.calls += 1
            call_id = f"call_scripted_{self.calls}"
        return {"kind": "tool_call", "name": name, "id": call_id, "arguments": json.dumps(arguments)}

    def completion(self, body: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if answer["kind"] == "tool_call":
            message["tool_calls"] = [{"id": answer["id"], "type": "function",
                                      "function": {"name": answer["name"], "arguments": answer["arguments"]}}]
            finish = "tool_calls"
        else:
            message["content"] = answer["text"]
        return {"id": f"chatcmpl-scripted-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model") or MODEL_ID,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    def chunks(self, body: dict[str, Any], answer: dict[str, Any]) -> list[dict[str, Any]]:
        base = {"id": f"chatcmpl-scripted-{len(self.requests)}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": body.get("model") or MODEL_ID}
        out = [base | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
        if answer["kind"] == "tool_call":
            out.append(base | {"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": answer["id"], "type": "function",
                 "function": {"name": answer["name"], "arguments": answer["arguments"]}}]}, "finish_reason": None}]})
            finish = "tool_calls"
        else:
            out.append(base | {"choices": [{"index": 0, "delta": {"content": answer["text"]}, "finish_reason": None}]})
            finish = "stop"
        out.append(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            out.append(base | {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
        return out

    # -- bookkeeping ---------------------------------------------------------------------------
    def record(self, handler: BaseHTTPRequestHandler, body: Any, answer: dict[str, Any]) -> None:
        headers = {k.lower(): ("<redacted>" if k.lower() in SECRET_HEADERS else v) for k, v in handler.headers.items()}
        entry = {"ts": time.time(), "method": handler.command, "path": handler.path, "headers": headers,
                 "has_authorization": "authorization" in headers, "body": body, "answer": answer}
        with self.lock:
            self.requests.append(entry)
            with self.log_path.open("a") as log:
                log.write(json.dumps(entry) + "\n")

    def completions(self) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if r["method"] == "POST" and isinstance(r["body"], dict)
                    and r["path"].rstrip("/").endswith("/chat/completions")]

    def turn_requests(self, marker: str) -> list[dict[str, Any]]:
        """The chat completion requests of the turn whose user message contains marker, in order."""
        return [r for r in self.completions() if marker in asked_text(r["body"])]

    def start(self) -> ScriptedModel:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tool", default="device_info")
    args = parser.parse_args()
    model = ScriptedModel(Path(args.log), args.tool, port=args.port).start()
    print(f"SCRIPTED_MODEL_URL={model.base_url}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    model.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
