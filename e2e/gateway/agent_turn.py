"""An agent turn on the REAL OpenClaw gateway reaching `clawmcp node`'s plugin tool: a scripted
model (scripted_model.py, a stdlib OpenAI Chat Completions server on 127.0.0.1, no real model)
is the gateway's model provider; the agent of `agent:main:main` gets a user message, the model
answers with a tool call to our node's plugin tool `device_info`, the gateway invokes
`mcp.tools.call.v1 {server: clawmcp, tool: device.info}` on our node, the model gets the result
and answers with a final text. One PASS/FAIL row per check; nothing is skipped; every process is
stopped by its PID; every wait is bounded.

The provider is configured on the running gateway by rewriting its openclaw.json (hot reload,
no restart; how node_pairing sets gateway.remote): models.providers.scripted = {baseUrl, api
"openai-completions", apiKey, models [scripted-1]}, agents.defaults.model.primary
"scripted/scripted-1", logging.level "debug" (the file log then names every tool the agent runs),
and first tools.toolSearch false (direct tool schemas), later unset again (the default Tool
Search surface, where node tools hide behind tool_search/tool_call).

Checks, in order (a check whose prerequisite failed fails with the reason):
  node-joined      ours connects, its surface is approved (node.pair.approve), node.list shows
                   its plugin tool device_info {pluginId node-mcp, command mcp.tools.call.v1,
                   mcp {server clawmcp, tool device.info}}, and a direct node.invoke of it answers
                   our device.info (deviceName = this host's name): the reference for later
  model-up         the config is hot-reloaded ("config hot reload applied (... models ...)" in the
                   gateway log); models.list lists scripted/scripted-1 available; agents.list
                   gives agent main the primary model scripted/scripted-1
  agent-tools      chat.send to agent:main:main starts a run; the model's first request of that
                   turn (stream true) lists our plugin tool in `tools` under the name device_info,
                   with our published parameters schema and our description (+ the node's name)
  agent-calls-plugin-tool  the model's tool call makes the gateway invoke our node exactly once
                   (our `clawmcp node status` gateway.invokes +1), the gateway's file log has
                   "embedded run tool start/end: runId=<run> tool=device_info" and no
                   "device_info failed", and the model's second request carries the tool result
                   (role tool, our call id) with our device.info fields, equal to the reference
  agent-turn-done  agent.wait: ok, terminalReply = the scripted final text, successfulToolNames
                   [device_info]; chat.history: the assistant's toolCall device_info, the
                   toolResult (isError false) with our deviceName, the final text from
                   provider scripted / model scripted-1
  search-finds-tool  tools.toolSearch unset again (the default): the first request has no
                   device_info but tool_search/tool_call; tool_search "device_info" returns our
                   tool as mcp:clawmcp:device_info (source mcp, serverName clawmcp, toolName
                   device.info, the node's name in the description)
  search-calls-tool  tool_call {id: mcp:clawmcp:device_info} invokes our node exactly once, the
                   model gets our device.info back through it, the run ends ok with the final
                   text in chat.history (successfulToolNames tool_search, device_info, tool_call)
  a2ui-action-reaches-agent  canvas.a2ui.push (through `clawmcp call` on our MCP port; the canvas is
                   on in settings.json, the gateway package's own A2UI renderer copied to our
                   node's ~/.local/share/clawmcp/a2ui/) shows a button whose action carries a fresh
                   marker; canvas.eval clicks it in the renderer; the gateway runs an agent turn
                   whose user message is exactly upstream's line (CANVAS_A2UI action=Get_Weather
                   session=main surface=main component=btnWeather host=<this host> instance=<our
                   node id> default=update_canvas ctx={"city":"<marker>"}), and the page shows the
                   action sent
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import scripted_model  # noqa: E402  (next to this file)
from harness import SEEDED_SESSION, Gateway  # noqa: E402

OURS = "clawmcp-e2e-agent-node"
WAIT_S = 60
TURN_TIMEOUT_MS = 60000
PROVIDER, MODEL = "scripted", scripted_model.MODEL_ID
TOOL = "device_info"  # the plugin tool's name as we publish it (node.pluginTools.update)
SEARCH_ID = f"mcp:clawmcp:{TOOL}"  # how Tool Search names a node MCP tool
ANSI = re.compile(r"\x1b\[[0-9;]*m")
ALLOW_ALL = '{"version":1,"defaults":{"security":"full","ask":"off","askFallback":"deny"},"agents":{}}'


from checks import Failed, expect, report, run_check, suite_args, wait_for  # noqa: E402  (the script's own directory)


def objects_with(text: str, key: str, depth: int = 0) -> list[dict[str, Any]]:
    """Every JSON object holding `key` found in text: JSON values decoded wherever a bracket
    starts one, walked recursively, strings inside them searched again (the gateway nests our
    CallToolResult text inside its own JSON envelopes)."""
    found: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if key in node:
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str) and depth < 3 and key in node:
            found.extend(objects_with(node, key, depth + 1))

    index = 0
    while index < len(text):
        if text[index] in "[{":
            try:
                value, end = decoder.raw_decode(text, index)
            except json.JSONDecodeError:
                index += 1
                continue
            walk(value)
            index = end
        else:
            index += 1
    return found


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in scripted_model.current_turn(body.get("messages") or []) if m.get("role") == "tool"]


class Suite:
    def __init__(self, args: argparse.Namespace):
        self.gateway = Gateway.from_env_file(Path(args.gateway_env))
        self.bin = args.clawmcp_bin
        self.artifacts = Path(args.artifacts)
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self.rows: list[tuple[str, bool, str]] = []
        self.done: set[str] = set()
        self.config_path = self.gateway.root / "state" / "openclaw.json"
        config = json.loads(self.config_path.read_text())
        self.file_log = Path(config.get("logging", {}).get("file") or self.gateway.root / "logs" / "openclaw.log")
        self.model = scripted_model.ScriptedModel(self.artifacts / "model-requests.jsonl", TOOL)
        self.ours: subprocess.Popen | None = None
        self.data = self.artifacts / "ours-data"
        self.ours_id = ""
        self.descriptor: dict[str, Any] = {}
        self.reference: dict[str, Any] = {}
        self.host = socket.gethostname()
        # The direct-schema turn, handed from check to check.
        self.marker = ""
        self.run_id = ""
        self.invokes_before = 0
        self.search_marker = ""
        self.search_run = ""
        self.search_invokes_before = 0
        self.port = 0

    # -- plumbing ------------------------------------------------------------------------------
    def check(self, name: str, body: Callable[[], str | None], needs: tuple[str, ...] = ()) -> None:
        run_check(self.rows, self.done, name, body, needs, timed=True)

    def node_entry(self) -> dict[str, Any] | None:
        for node in self.gateway.rpc("node.list", {}).get("nodes", []):
            if node.get("displayName") == OURS:
                return node
        return None

    def status(self) -> dict[str, Any]:
        done = subprocess.run([self.bin, "node", "status", "--json", "--data-dir", str(self.data)], capture_output=True,
                              text=True, timeout=30)
        return json.loads(done.stdout)

    def invokes(self) -> int:
        return int((self.status().get("gateway") or {}).get("invokes") or 0)

    def settled_invokes(self) -> int:
        """The invocation counter once it has stopped moving (the status file is written at most
        every 0.5 s, coalesced): two equal reads 1 s apart."""
        def stable() -> int | None:
            first = self.invokes()
            time.sleep(1.0)
            second = self.invokes()
            return second + 1 if first == second else None  # +1: 0 invocations is a valid answer

        return wait_for("our invocation counter to settle", stable, timeout_s=20, every_s=0) - 1

    def gateway_log(self) -> str:
        return ANSI.sub("", self.gateway.log.read_text("utf-8", "replace"))

    def file_log_messages(self) -> list[str]:
        """The gateway's file log (JSON lines) as message texts."""
        messages = []
        try:
            lines = self.file_log.read_text("utf-8", "replace").splitlines()
        except OSError:
            return messages
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            parts = [record[key] for key in sorted(k for k in record if k.isdigit()) if isinstance(record[key], str)]
            messages.append(" ".join(parts))
        return messages

    def reconfigure(self, change: Callable[[dict[str, Any]], None], keys: tuple[str, ...]) -> str:
        """Rewrite the gateway's config and wait for the hot reload that names every one of keys."""
        try:
            line = self.gateway.reconfigure(change, keys)
        except RuntimeError as err:
            raise Failed(str(err)) from None
        return line.split("[reload] ", 1)[-1]

    def send_turn(self, label: str) -> tuple[str, str]:
        """chat.send a user message carrying the script's trigger and a fresh marker: (marker, runId)."""
        marker = f"{label}-{uuid.uuid4().hex[:8]}"
        text = f"{scripted_model.TRIGGER} {marker} What machine is the node {OURS}? Use its {TOOL} tool."
        started = self.gateway.rpc("chat.send", {"sessionKey": SEEDED_SESSION, "message": text,
                                                 "idempotencyKey": f"agent-turn-{marker}"})
        expect(started.get("status") == "started" and started.get("runId"), f"chat.send: {started}")
        return marker, started["runId"]

    def wait_run(self, run_id: str) -> dict[str, Any]:
        waited = self.gateway.rpc("agent.wait", {"runId": run_id, "timeoutMs": TURN_TIMEOUT_MS},
                                  timeout_s=TURN_TIMEOUT_MS // 1000 + 30)
        expect(waited.get("status") == "ok", f"agent.wait {run_id}: {json.dumps(waited)[:800]}")
        return waited

    def history_of_run(self, run_id: str) -> list[dict[str, Any]]:
        history = self.gateway.rpc("chat.history", {"sessionKey": SEEDED_SESSION})
        return [m for m in history.get("messages", []) if (m.get("__openclaw") or {}).get("runId") == run_id]

    def device_fields(self, text: str) -> dict[str, Any]:
        """Our device.info object inside a tool result text (the first with our deviceName)."""
        for found in objects_with(text, "deviceName"):
            if found.get("deviceName") == self.reference.get("deviceName"):
                return found
        raise Failed(f"no device.info object with deviceName {self.reference.get('deviceName')!r} in: {text[:600]}")

    # -- processes -----------------------------------------------------------------------------
    def start_ours(self) -> None:
        self.data.mkdir(mode=0o700, parents=True, exist_ok=True)
        policy = self.data / "exec-approvals.json"
        policy.write_text(ALLOW_ALL)
        policy.chmod(0o600)
        settings = self.data / "settings.json"
        settings.write_text('{"NodeCanvasEnabled": true}')
        settings.chmod(0o600)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.port = port
        home = self.artifacts / "ours-home"
        home.mkdir(exist_ok=True)
        # The A2UI renderer the gateway's own package ships, where a user copies it.
        renderer = home / ".local" / "share" / "clawmcp" / "a2ui"
        renderer.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(self.gateway.openclaw_pkg) / "dist" / "canvas-host" / "a2ui" / "a2ui.bundle.js",
                        renderer / "a2ui.bundle.js")
        log = open(self.artifacts / "clawmcp-node.log", "w")  # noqa: SIM115 - lives as long as the node
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "RUST_LOG": "info"}
        self.ours = subprocess.Popen(
            [self.bin, "node", "--port", str(port), "--data-dir", str(self.data), "--gateway-url", self.gateway.url,
             "--gateway-token-file", str(self.gateway.token_file), "--name", OURS],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)

    def stop(self) -> list[str]:
        problems = []
        if self.ours is not None and self.ours.poll() is None:
            self.ours.send_signal(signal.SIGTERM)
            try:
                self.ours.wait(timeout=20)
            except subprocess.TimeoutExpired:
                problems.append(f"clawmcp node (pid {self.ours.pid}) ignored SIGTERM for 20 s; killed")
                self.ours.kill()
                self.ours.wait(timeout=10)
        if self.ours is not None and self.ours.returncode not in (0, None):
            problems.append(f"clawmcp node exited with status {self.ours.returncode}")
        self.model.stop()
        return problems

    # -- checks --------------------------------------------------------------------------------
    def node_joined(self) -> str:
        entry = wait_for("our node connected in node.list",
                         lambda: (e := self.node_entry()) and e.get("connected") and e.get("approvalState") != "unapproved" and e)
        self.ours_id = entry["nodeId"]
        if entry.get("approvalState") != "approved":
            request = entry.get("pendingRequestId")
            expect(request, f"our node is {entry.get('approvalState')} without a pending request: {entry}")
            self.gateway.rpc("node.pair.approve", {"requestId": request})
        # Our plugin tools are published after the approval (the gateway refuses them before).
        entry = wait_for("our plugin tool in node.list",
                         lambda: (e := self.node_entry()) and e.get("approvalState") == "approved"
                         and any(t.get("name") == TOOL for t in e.get("nodePluginTools") or []) and e)
        self.descriptor = next(t for t in entry["nodePluginTools"] if t.get("name") == TOOL)
        want = {"pluginId": "node-mcp", "command": "mcp.tools.call.v1", "mcp": {"server": "clawmcp", "tool": "device.info"}}
        got = {key: self.descriptor.get(key) for key in want}
        expect(got == want, f"our {TOOL} descriptor: {json.dumps(self.descriptor)[:600]}")
        expect("mcp.tools.call.v1" in (entry.get("commands") or []), f"approved commands {entry.get('commands')}")
        answer = self.gateway.rpc("node.invoke", {"nodeId": self.ours_id, "command": "mcp.tools.call.v1",
                                                  "params": {"server": "clawmcp", "tool": "device.info", "arguments": {}},
                                                  "idempotencyKey": str(uuid.uuid4()), "timeoutMs": 15000})
        payload = answer.get("payload") or {}
        expect(payload.get("isError") is not True, f"device.info through node.invoke: {json.dumps(payload)[:600]}")
        self.reference = payload.get("structuredContent") or json.loads(payload["content"][0]["text"])
        expect(self.reference.get("deviceName") == self.host,
               f"device.info deviceName {self.reference.get('deviceName')!r}, this host is {self.host!r}")
        published = sorted(t.get("name") for t in entry.get("nodePluginTools") or [])
        return (f"node {self.ours_id[:12]}… approved; plugin tools {published}; device.info through node.invoke: "
                f"deviceName {self.reference['deviceName']!r}, {len(self.reference)} fields")

    def model_up(self) -> str:
        def configure(config: dict[str, Any]) -> None:
            config["models"] = {"mode": "merge", "providers": {PROVIDER: {
                "baseUrl": self.model.base_url, "apiKey": "scripted-no-key", "api": "openai-completions",
                "models": [{"id": MODEL, "name": "Scripted (clawmcp e2e)", "reasoning": False, "input": ["text"],
                            "contextWindow": 128000, "maxTokens": 4096}]}}}
            config.setdefault("agents", {}).setdefault("defaults", {})["model"] = {"primary": f"{PROVIDER}/{MODEL}"}
            config.setdefault("tools", {})["toolSearch"] = False
            config.setdefault("logging", {})["level"] = "debug"

        reload_line = self.reconfigure(configure, ("models", "agents.defaults.model"))
        listed = self.gateway.rpc("models.list", {}).get("models", [])
        ours = [m for m in listed if m.get("provider") == PROVIDER and m.get("id") == MODEL]
        expect(ours and ours[0].get("available") is True, f"models.list: {json.dumps(listed)[:600]}")
        agents = self.gateway.rpc("agents.list", {}).get("agents", [])
        main = next((a for a in agents if a.get("id") == "main"), {})
        expect((main.get("model") or {}).get("primary") == f"{PROVIDER}/{MODEL}", f"agents.list main: {json.dumps(main)[:600]}")
        return f"{reload_line}; models.list {PROVIDER}/{MODEL} available; agent main -> {PROVIDER}/{MODEL} at {self.model.base_url}"

    def agent_tools(self) -> str:
        self.invokes_before = self.settled_invokes()
        self.marker, self.run_id = self.send_turn("direct")
        first = wait_for("the model's first request of the turn", lambda: self.model.turn_requests(self.marker), 30)[0]
        body = first["body"]
        expect(body.get("stream") is True, f"stream {body.get('stream')!r}")
        tools = {t["function"]["name"]: t["function"] for t in body.get("tools") or [] if t.get("function")}
        expect(TOOL in tools, f"{TOOL} is not among the {len(tools)} tools of the first request: {sorted(tools)}")
        seen = tools[TOOL]
        expect(seen.get("parameters") == self.descriptor.get("parameters"),
               f"schema {json.dumps(seen.get('parameters'))} vs published {json.dumps(self.descriptor.get('parameters'))}")
        ours = self.descriptor.get("description") or ""
        expect((seen.get("description") or "").startswith(ours),
               f"description {seen.get('description')!r} does not start with ours {ours!r}")
        suffix = seen["description"][len(ours):]
        others = sorted(name for name in tools if name in {t.get("name") for t in (self.node_entry() or {}).get("nodePluginTools") or []})
        return (f"run {self.run_id[:8]}…: {len(tools)} tools, ours {others}; {TOOL} parameters "
                f"{json.dumps(seen['parameters'])}, description = ours + {suffix!r}")

    def agent_calls_plugin_tool(self) -> str:
        requests = wait_for("the model's second request (with the tool result)",
                            lambda: (r := self.model.turn_requests(self.marker)) and len(r) >= 2 and r, 30)
        call = requests[0]["answer"]
        expect(call.get("kind") == "tool_call" and call.get("name") == TOOL, f"the script's first answer: {call}")
        results = [m for m in tool_messages(requests[1]["body"])
                   if scripted_model.normal_id(m.get("tool_call_id")) == scripted_model.normal_id(call["id"])]
        expect(results, f"no tool message for {call['id']} in the second request: "
                        f"{json.dumps(scripted_model.current_turn(requests[1]['body']['messages']))[:800]}")
        fields = self.device_fields(scripted_model.text_of(results[0].get("content")))
        expect(fields == self.reference, f"the tool result's device.info {fields} vs node.invoke's {self.reference}")
        self.wait_run(self.run_id)
        after = wait_for("our invocation counter to move", lambda: (n := self.settled_invokes()) > self.invokes_before and n, 20)
        expect(after == self.invokes_before + 1, f"our node answered {after - self.invokes_before} invocations in the turn, want 1")
        messages = self.file_log_messages()
        start = [m for m in messages if f"embedded run tool start: runId={self.run_id} tool={TOOL}" in m]
        end = [m for m in messages if f"embedded run tool end: runId={self.run_id} tool={TOOL}" in m]
        expect(start and end, f"the gateway file log has no tool start/end for run {self.run_id} tool {TOOL} "
                              f"({len(messages)} records in {self.file_log})")
        failed = [m for m in messages if f"{TOOL} failed" in m]
        expect(not failed, f"the gateway logged a failed {TOOL}: {failed[0][:400] if failed else ''}")
        return (f"invokes {self.invokes_before} -> {after}; gateway file log: {start[0].split('embedded run ', 1)[-1]}; "
                f"request 2 carries tool_call_id {results[0].get('tool_call_id')} with deviceName {fields['deviceName']!r} "
                f"and all {len(fields)} device.info fields")

    def agent_turn_done(self) -> str:
        waited = self.wait_run(self.run_id)
        reply = (waited.get("terminalReply") or {}).get("text")
        expect(reply == scripted_model.FINAL_TEXT, f"terminalReply {reply!r}")
        receipt = waited.get("terminalReceipt") or {}
        expect(receipt.get("successfulToolNames") == [TOOL], f"successfulToolNames {receipt.get('successfulToolNames')}")
        expect((receipt.get("effective") or {}).get("provider") == PROVIDER, f"effective {receipt.get('effective')}")
        rows = self.history_of_run(self.run_id)
        expect(len(rows) == 3, f"{len(rows)} transcript rows of run {self.run_id}, want 3: {json.dumps(rows)[:800]}")
        calls, result, final = rows
        expect(any(c.get("type") == "toolCall" and c.get("name") == TOOL for c in calls.get("content") or []),
               f"no toolCall {TOOL}: {json.dumps(calls)[:600]}")
        expect(result.get("role") == "toolResult" and result.get("toolName") == TOOL and result.get("isError") is False,
               f"tool result row: {json.dumps(result)[:600]}")
        self.device_fields(scripted_model.text_of(result.get("content")))
        text = scripted_model.text_of(final.get("content"))
        expect(final.get("role") == "assistant" and text == scripted_model.FINAL_TEXT
               and final.get("provider") == PROVIDER and final.get("model") == MODEL,
               f"final row: {json.dumps(final)[:600]}")
        return f"agent.wait ok, successfulToolNames {receipt['successfulToolNames']}; chat.history: toolCall, toolResult, {text!r}"

    def search_finds_tool(self) -> str:
        reload_line = self.reconfigure(lambda config: config.get("tools", {}).pop("toolSearch", None), ("tools",))
        self.search_invokes_before = self.settled_invokes()
        self.search_marker, self.search_run = self.send_turn("search")
        requests = wait_for("the model's request after tool_search",
                            lambda: (r := self.model.turn_requests(self.search_marker)) and len(r) >= 2 and r, 30)
        first, second = requests[0], requests[1]
        names = [t["function"]["name"] for t in first["body"].get("tools") or [] if t.get("function")]
        expect(TOOL not in names and "tool_search" in names and "tool_call" in names,
               f"the default surface's tools: {names}")
        expect(first["answer"].get("name") == "tool_search", f"the script's first answer: {first['answer']}")
        results = tool_messages(second["body"])
        expect(results, "no tool_search result in the second request")
        hits = [h for h in objects_with(scripted_model.text_of(results[-1].get("content")), "id") if h.get("id") == SEARCH_ID]
        expect(hits, f"tool_search did not return {SEARCH_ID}: {scripted_model.text_of(results[-1].get('content'))[:800]}")
        hit = hits[0]
        mcp = hit.get("mcp") or {}
        expect(hit.get("source") == "mcp" and hit.get("name") == TOOL and mcp.get("serverName") == "clawmcp"
               and mcp.get("toolName") == "device.info", f"the hit: {json.dumps(hit)[:600]}")
        expect(OURS in (hit.get("description") or ""), f"the hit's description does not name our node: {hit.get('description')!r}")
        return (f"{reload_line}; first request's tools {len(names)} without {TOOL}; tool_search -> "
                f"{json.dumps({k: hit.get(k) for k in ('id', 'source', 'name', 'mcp', 'input')})}")

    def search_calls_tool(self) -> str:
        requests = wait_for("the model's request after tool_call",
                            lambda: (r := self.model.turn_requests(self.search_marker)) and len(r) >= 3 and r, 30)
        call = requests[1]["answer"]
        expect(call.get("name") == "tool_call" and json.loads(call["arguments"]).get("id") == SEARCH_ID,
               f"the script's second answer: {call}")
        results = [m for m in tool_messages(requests[2]["body"])
                   if scripted_model.normal_id(m.get("tool_call_id")) == scripted_model.normal_id(call["id"])]
        expect(results, "no tool_call result in the third request")
        fields = self.device_fields(scripted_model.text_of(results[0].get("content")))
        expect(fields == self.reference, f"tool_call's device.info {fields} vs node.invoke's {self.reference}")
        waited = self.wait_run(self.search_run)
        expect((waited.get("terminalReply") or {}).get("text") == scripted_model.FINAL_TEXT, f"agent.wait: {waited}")
        tools = (waited.get("terminalReceipt") or {}).get("successfulToolNames") or []
        expect({"tool_search", "tool_call", TOOL} <= set(tools), f"successfulToolNames {tools}")
        after = wait_for("our invocation counter to move",
                         lambda: (n := self.settled_invokes()) > self.search_invokes_before and n, 20)
        expect(after == self.search_invokes_before + 1,
               f"our node answered {after - self.search_invokes_before} invocations in the turn, want 1")
        rows = self.history_of_run(self.search_run)
        expect(rows and scripted_model.text_of(rows[-1].get("content")) == scripted_model.FINAL_TEXT,
               f"the run's last transcript row: {json.dumps(rows[-1:])[:600]}")
        started = sorted({m.split(" tool=", 1)[1].split()[0] for m in self.file_log_messages()
                          if f"embedded run tool start: runId={self.search_run} " in m})
        return (f"invokes {self.search_invokes_before} -> {after}; deviceName {fields['deviceName']!r} back through "
                f"tool_call; successfulToolNames {tools}; gateway file log tool starts {started}")

    def call_ours(self, tool: str, params: dict[str, Any]) -> Any:
        """A tool of our node through `clawmcp call` on its MCP port: the printed answer, parsed."""
        done = subprocess.run([self.bin, "call", tool, "--params", json.dumps(params), "--port", str(self.port),
                               "--data-dir", str(self.data)], capture_output=True, text=True, timeout=90)
        expect(done.returncode == 0, f"clawmcp call {tool}: {(done.stdout + done.stderr)[-600:]}")
        return json.loads(done.stdout)

    def a2ui_action_reaches_agent(self) -> str:
        marker = f"a2ui-{uuid.uuid4().hex[:8]}"
        jsonl = "\n".join(json.dumps(message) for message in [
            {"surfaceUpdate": {"surfaceId": "main", "components": [
                {"id": "btnWeather", "component": {"Button": {"child": "label", "action": {
                    "name": "Get Weather", "context": [{"key": "city", "value": {"literalString": marker}}]}}}},
                {"id": "label", "component": {"Text": {"text": {"literalString": "Weather"}}}}]}},
            {"beginRendering": {"surfaceId": "main", "root": "btnWeather"}}])
        pushed = self.call_ours("canvas.a2ui.push", {"jsonl": jsonl})
        expect(pushed == {"pushed": True}, f"canvas.a2ui.push: {pushed}")
        click = ("(() => { const find = (root) => { for (const el of root.querySelectorAll('*')) { "
                 "if (el.tagName === 'BUTTON') return el; if (el.shadowRoot) { const found = find(el.shadowRoot); "
                 "if (found) return found; } } return null; }; const button = find(document); "
                 "if (!button) return false; button.click(); return true; })()")
        wait_for("the renderer's button, clicked", lambda: self.call_ours("canvas.eval", {"script": click}).get("result"), 30)
        first = wait_for("the agent turn the click started", lambda: self.model.turn_requests(marker), 60)[0]
        asked = scripted_model.asked_text(first["body"])
        host = re.sub(r"[^A-Za-z0-9_.:-]", "_", self.host.strip().replace(" ", "_")) or "-"
        want = (f"CANVAS_A2UI action=Get_Weather session=main surface=main component=btnWeather host={host} "
                f"instance={self.ours_id} default=update_canvas ctx={json.dumps({'city': marker}, separators=(',', ':'))}")
        expect(want in asked, f"the turn's user message {asked[:800]!r} does not carry {want!r}")
        pending = ("(() => { const a = document.querySelector('openclaw-a2ui-host')?.pendingAction; "
                   "return a ? a.phase : null; })()")
        phase = wait_for("the page to show the action sent",
                         lambda: (p := self.call_ours("canvas.eval", {"script": pending}).get("result")) in ("sent", "error") and p, 30)
        expect(phase == "sent", f"the page's pending action is {phase!r}")
        return f"the click became an agent turn asking {want!r}; the page shows it {phase}"

    def run(self) -> int:
        self.model.start()
        try:
            self.start_ours()
            self.check("node-joined", self.node_joined)
            self.check("model-up", self.model_up)
            self.check("agent-tools", self.agent_tools, ("node-joined", "model-up"))
            self.check("agent-calls-plugin-tool", self.agent_calls_plugin_tool, ("agent-tools",))
            self.check("agent-turn-done", self.agent_turn_done, ("agent-tools",))
            self.check("search-finds-tool", self.search_finds_tool, ("node-joined", "model-up"))
            self.check("search-calls-tool", self.search_calls_tool, ("search-finds-tool",))
            self.check("a2ui-action-reaches-agent", self.a2ui_action_reaches_agent, ("node-joined", "model-up"))
        finally:
            for problem in self.stop():
                self.rows.append(("stop", False, problem))
        return report(self.rows, "agent-turn", self.artifacts / "agent-turn.json")


def main() -> int:
    return Suite(suite_args(__doc__)).run()


if __name__ == "__main__":
    sys.exit(main())
