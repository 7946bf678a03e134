"""`clawmcp node` in gateway node mode against the REAL OpenClaw gateway, beside the REAL headless
node host (`openclaw node run`) on the same gateway: pairing, payload shapes, cancel, exec
approvals on the gateway path, rotation, restart. One PASS/FAIL row per check; nothing is skipped.

Checks, in order (each later one needs the earlier ones' state; a failed prerequisite fails them
with the reason):
  pending          ours appears in node.list and in `openclaw nodes status --json` (the real
                   CLI) as pending-approval, as node-host/linux/Linux, declaring
                   system.run/system.which; `clawmcp node status` says connected + pending
  approve          `openclaw nodes approve <requestId>` (the real CLI); status says approved
  status-lists     `openclaw nodes status --json` (the real CLI) lists ours with our commands
  same-which       node.invoke system.which on ours and on the real node host: the same payload
  same-run         node.invoke system.run [echo, hi] on both: the same keys ({exitCode, timedOut,
                   success, stdout, stderr, error}), value types, stdout
  cli-invoke       `openclaw nodes invoke --node <ours> --command system.which` (the real CLI)
  params-null      node.invoke without params (paramsJSON null): ours fails with the real node
                   host's codes (gateway code, nodeError.code, nodeCommandDispatched) and names
                   what is missing
  plugin-tool      ours published its plugin tools; node.invoke mcp.tools.call.v1 device.info
                   answers an MCP CallToolResult
  mcp-beside       on the same running node: a raw MCP tools/call over HTTP to our local endpoint
                   (initialize + tools/call with the bearer token) and `clawmcp call`, each
                   followed by a gateway invoke
  timeout-kills    a system.run of `sleep 300 # MARKER` with timeoutMs 2000 fails with
                   nodeError.code TIMEOUT and within 5 s no process with the marker is left

  Exec approvals on the gateway path. No model runs here, so the suite plays the gateway exec
  tool's part with operator RPCs, which runs the same gateway code an agent turn would: prepare
  -> exec.approvals.node.get -> exec.approval.request (twoPhase) on ONE operator connection (the
  gateway binds the approval to it) -> a second connection with caps exec-approvals (the
  operator's approval client; without one the request expires at once for lack of a route) sees
  exec.approval.requested and resolves -> system.run again with runId = the approval id,
  approved, approvalDecision, systemRunPlan. "Under on-miss" = {security allowlist, ask on-miss,
  askFallback deny}: our policy file is rewritten (ours re-reads it on every call), the real
  host's is set over exec.approvals.node.set; both are restored (ALLOW_ALL, the real host's own)
  after each check. The gateway's handling of a node's exec.denied event has no effect an
  operator can observe (no event, no system event, not in its default log): not checked.
  prepare-shape    system.run.prepare [echo, hi] on both: the gateway's parser accepts ours (its
                   rules, read from dist); ours' plan has argv, cwd, commandText, commandPreview,
                   agentId, sessionKey, policySnapshot {security, ask, askFallback,
                   autoAllowSkills, allowlistRules} and execPolicy {security, ask}, the same keys
                   and values as the real host's (both run a full/off policy here)
  approval-required under on-miss a plain system.run [echo, hi] fails on both within 10 s (no
                   local 120 s prompt) with nodeError.code SYSTEM_RUN_DENIED, "approval required"
  approve-reinvoke under on-miss the flow with allow-once runs it on both (stdout "hi\n", success);
                   afterwards a plain run on ours asks again
  allow-always     the flow with allow-always runs on ours; exec.approvals.node.get then shows an
                   allow-always entry for .../echo and a plain [echo, hi] runs without approval.
                   The real host runs and records too (its plain re-run is reported)
  policy-changed   prepare under on-miss, tighten to ask always, approve allow-once, re-invoke:
                   both refuse with SYSTEM_RUN_DENIED "... policy changed ..."
  ask-fallback     under {security full, ask always, askFallback F} nobody answers: the approval
                   times out (decision null) and the re-invoke carries approvalSource ask-fallback
                   (as the exec tool's then): F full runs on both, F deny is SYSTEM_RUN_DENIED on both
  approvals-remote-set  exec.approvals.node.set on ours: loosening (security full) is refused with
                   "cannot make security less restrictive" and changes nothing; a stale baseHash
                   is refused by both with the same nodeError.code, the loosening with that code
                   too (a refused update, not UNAVAILABLE); tightening
                   (security deny) is accepted, lands in the file, and system.run is denied (as
                   on the real host, which also takes the loosening: reported); ALLOW_ALL
                   written back, ours runs again
  mcp-self-approve an MCP client cannot approve its own command: under on-miss an HTTP MCP
                   tools/call system.run [touch MARKER] with approved true and approvalDecision
                   allow-once is refused within 10 s naming the field, and MARKER is not created

  doctor-up        `clawmcp doctor --json` pointed at the real gateway with its token: the
                   gateway finding is ok and names the gateway's OpenClaw version, node mode says
                   the running node is connected, pairing says approved
  doctor-refused   the same with a wrong token: the real gateway refuses the handshake, and the
                   gateway finding says so (warn, "refused") with the fix naming the token

  token-rotation   gateway.auth.token rewritten (hot reload, 4001): ours comes back with its
                   device token and is still approved and invocable
  restart          the gateway stopped and started again: ours comes back on its own; while it is
                   down, `clawmcp doctor --json` says the gateway is unreachable (warn, with a
                   fix to start it) and node mode is not ok
  sigterm          SIGTERM stops ours (exit 0 within 10 s), its MCP port closes, node.list shows it
                   disconnected, and `clawmcp node status --json` exits 3 with running false,
                   mcp.state off, gateway.state stopped
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
OURS = "clawmcp-e2e-node"
REAL = "real-node-host"
WAIT_S = 90
# A permissive policy: the suite is about the gateway path, not the policy (unit-tested).
ALLOW_ALL = '{"version":1,"defaults":{"security":"full","ask":"off","askFallback":"deny"},"agents":{}}'
# The approval checks: nothing is allowlisted, so every run needs a person (the operator, on the
# gateway path), and nobody answering means deny.
ON_MISS = {"version": 1, "defaults": {"security": "allowlist", "ask": "on-miss", "askFallback": "deny"}, "agents": {}}
# Stricter than ON_MISS: a plan prepared under ON_MISS no longer describes the policy.
ASK_ALWAYS = {"version": 1, "defaults": {"security": "allowlist", "ask": "always", "askFallback": "deny"}, "agents": {}}
# The exec tool sends the agent's id with every prepare and run; the default agent is main.
AGENT = "main"
# What the gateway's exec tool reads of a prepared plan (dist parsePreparedSystemRunPayload /
# normalizeSystemRunApprovalPlan) and the exact shape of its policy snapshot.
PLAN_KEYS = ("argv", "cwd", "commandText", "commandPreview", "agentId", "sessionKey")
SNAPSHOT_KEYS = {"security", "ask", "askFallback", "autoAllowSkills", "allowlistRules"}
SECURITIES = ("deny", "allowlist", "full")
ASKS = ("off", "on-miss", "always")


from checks import Failed, expect, report, run_check, suite_args  # noqa: E402  (the script's own directory)
from checks import wait_for as _wait_for  # noqa: E402


def wait_for(what: str, probe: Callable[[], Any], timeout_s: float = WAIT_S, every_s: float = 0.25) -> Any:
    """`checks.wait_for` with this suite's longer default bound."""
    return _wait_for(what, probe, timeout_s, every_s)


def gateway_error(text: str) -> dict[str, Any]:
    """The gateway's error object from a failed rpc's message ('... failed: {json}')."""
    start = text.find("{")
    expect(start >= 0, f"no error object in: {text[:400]}")
    try:
        return json.loads(text[start:])
    except json.JSONDecodeError as err:
        raise Failed(f"unparsable error object ({err}): {text[:400]}") from err


def error_codes(error: dict[str, Any]) -> dict[str, Any]:
    details = error.get("details") or {}
    return {"code": error.get("code"), "nodeError.code": (details.get("nodeError") or {}).get("code"),
            "nodeCommandDispatched": details.get("nodeCommandDispatched")}


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and int(entry) != os.getpid():
            found.append(int(entry))
    return found


def parsed_prepare(payload: Any) -> dict[str, Any]:
    """A system.run.prepare answer as the gateway's exec tool keeps it: {plan, execPolicy} with
    the plan normalized the way the tool sends it to exec.approval.request (whose systemRunPlan
    schema is closed). Failed names what would make the tool give up with "invalid
    system.run.prepare response" (its parser's rules, read from dist)."""
    expect(isinstance(payload, dict) and isinstance(payload.get("plan"), dict), f"no plan object in {payload}")
    plan = payload["plan"]
    argv = plan.get("argv")
    expect(isinstance(argv, list) and bool(argv) and all(isinstance(a, str) for a in argv), f"plan.argv {argv!r}")

    def text(key: str) -> str | None:
        value = plan.get(key)
        return value.strip() if isinstance(value, str) and value.strip() else None

    command_text = text("commandText") or text("rawCommand")
    expect(command_text is not None, f"plan has neither commandText nor rawCommand: {plan}")
    normalized: dict[str, Any] = {"argv": argv, "cwd": text("cwd"), "commandText": command_text,
                                  "commandPreview": text("commandPreview"), "agentId": text("agentId"),
                                  "sessionKey": text("sessionKey")}
    if "policySnapshot" in plan:  # present but malformed rejects the whole plan
        snapshot = plan["policySnapshot"]
        expect(isinstance(snapshot, dict) and snapshot.get("security") in SECURITIES and snapshot.get("ask") in ASKS
               and snapshot.get("askFallback") in SECURITIES and isinstance(snapshot.get("autoAllowSkills"), bool)
               and isinstance(snapshot.get("allowlistRules"), list), f"plan.policySnapshot the gateway rejects: {snapshot}")
        rules = []
        for rule in snapshot["allowlistRules"]:
            expect(isinstance(rule, dict) and isinstance(rule.get("pattern"), str)
                   and isinstance(rule.get("argPattern", ""), str) and rule.get("source", "allow-always") == "allow-always",
                   f"policySnapshot rule the gateway rejects: {rule}")
            rules.append({k: rule[k] for k in ("pattern", "argPattern", "source") if k in rule})
        normalized["policySnapshot"] = {key: snapshot[key] for key in SNAPSHOT_KEYS} | {"allowlistRules": rules}
    if "mutableFileOperand" in plan:  # optional, but null or malformed rejects the plan
        operand = plan["mutableFileOperand"]
        expect(isinstance(operand, dict) and isinstance(operand.get("argvIndex"), int) and operand.get("path")
               and operand.get("sha256"), f"plan.mutableFileOperand the gateway rejects: {operand!r}")
        normalized["mutableFileOperand"] = {k: operand[k] for k in ("argvIndex", "path", "sha256")}
    policy = payload.get("execPolicy")
    valid_policy = isinstance(policy, dict) and policy.get("security") in SECURITIES and policy.get("ask") in ASKS
    return {"plan": normalized, "execPolicy": policy if valid_policy else None}


def node_payload(frame: dict[str, Any], what: str) -> Any:
    """The node's answer inside a successful node.invoke response frame."""
    expect(frame.get("ok") is True, f"{what} failed: {json.dumps(frame.get('error'))[:600]}")
    return frame["payload"]["payload"]


def node_refusal(frame: dict[str, Any], what: str) -> dict[str, Any]:
    """The gateway error of a node.invoke that must have failed: {code, message, details}."""
    expect(frame.get("ok") is False, f"{what} was not refused: {json.dumps(frame.get('payload'))[:600]}")
    return frame["error"]


def node_error(error: dict[str, Any]) -> tuple[str | None, str]:
    node = (error.get("details") or {}).get("nodeError") or {}
    return node.get("code"), node.get("message") or ""


def allow_always_entries(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """Every allowlist entry with source allow-always in an exec.approvals.node.get file."""
    agents = (snapshot.get("file") or {}).get("agents") or {}
    return [entry for agent in agents.values() for entry in (agent or {}).get("allowlist") or []
            if isinstance(entry, dict) and entry.get("source") == "allow-always"]


class Suite:
    def __init__(self, args: argparse.Namespace):
        sys.path.insert(0, str(HERE))
        from harness import Gateway  # noqa: PLC0415  (shared harness, imported at run time)

        self.gateway_env = Path(args.gateway_env)
        self.gateway = Gateway.from_env_file(self.gateway_env)
        self.bin = args.clawmcp_bin
        self.artifacts = Path(args.artifacts)
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self.rows: list[tuple[str, bool, str]] = []
        self.done: set[str] = set()
        self.ours: subprocess.Popen | None = None
        self.real: subprocess.Popen | None = None
        self.data = self.artifacts / "ours-data"
        self.port = 0
        self.ours_id = ""
        self.real_id = ""
        # A real node host started by `start.sh --with-node` (node_mode.sh does that), else
        # start_real() starts one here (bench/node_gateway_bench.py).
        env = dict(line.split("=", 1) for line in self.gateway_env.read_text().splitlines() if "=" in line)
        self.external_real = bool(env.get("CLAWMCP_GW_NODE_HOST_ID"))
        self.real_name = env.get("CLAWMCP_GW_NODE_HOST_NAME", REAL)
        # The real node host's policy as it was before the approval checks changed it (it lives
        # in its SQLite state, so it is read and restored over exec.approvals.node.get/set).
        self.real_policy: dict[str, Any] | None = None

    # -- plumbing ------------------------------------------------------------------------------
    def check(self, name: str, body: Callable[[], str | None], needs: tuple[str, ...] = ()) -> None:
        run_check(self.rows, self.done, name, body, needs, timed=False)

    def token(self) -> str:
        return self.gateway.token_file.read_text().strip()

    def client_env(self) -> dict[str, str]:
        home = self.artifacts / "cli-home"
        (home / "state").mkdir(parents=True, exist_ok=True)
        config = home / "state" / "openclaw.json"
        if not config.exists():
            config.write_text(json.dumps({"logging": {"file": str(self.artifacts / "openclaw-cli.log")}}))
        return {
            "PATH": f"{Path(self.gateway.node).parent}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": str(home),
            "OPENCLAW_HOME": str(home),
            "OPENCLAW_STATE_DIR": str(home / "state"),
            "OPENCLAW_CONFIG_PATH": str(config),
            "OPENCLAW_OFFLINE": "1",
            "OPENCLAW_NO_AUTO_UPDATE": "1",
            "OPENCLAW_NO_RESPAWN": "1",
            "OPENCLAW_DISABLE_BONJOUR": "1",
        }

    def openclaw(self, *argv: str) -> Any:
        """The real openclaw CLI against the gateway, --json; returns the parsed output."""
        command = [self.gateway.node, self.gateway.openclaw_entry, *argv, "--url", self.gateway.url, "--token",
                   self.token(), "--json"]
        done = subprocess.run(command, env=self.client_env(), capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise Failed(f"openclaw {' '.join(argv)} exited {done.returncode}: {(done.stderr or done.stdout)[-1500:]}")
        text = done.stdout.strip()
        start = min([i for i in (text.find("{"), text.find("[")) if i >= 0], default=0)
        return json.loads(text[start:])

    def invoke(self, node_id: str, command: str, params: Any = None, timeout_ms: int = 15000) -> Any:
        body: dict[str, Any] = {"nodeId": node_id, "command": command, "idempotencyKey": str(uuid.uuid4()),
                                "timeoutMs": timeout_ms}
        if params is not None:
            body["params"] = params
        return self.gateway.rpc("node.invoke", body, timeout_s=max(30, timeout_ms // 1000 + 30))

    def invoke_error(self, node_id: str, command: str, params: Any = None, timeout_ms: int = 15000) -> str:
        try:
            answer = self.invoke(node_id, command, params, timeout_ms)
        except RuntimeError as err:
            return str(err)
        raise Failed(f"expected an error, got {json.dumps(answer)[:400]}")

    def node_entry(self, name: str) -> dict[str, Any] | None:
        for node in self.gateway.rpc("node.list", {}).get("nodes", []):
            if node.get("displayName") == name:
                return node
        return None

    def status(self) -> dict[str, Any]:
        done = subprocess.run([self.bin, "node", "status", "--json", "--data-dir", str(self.data)], capture_output=True,
                              text=True, timeout=30)
        return json.loads(done.stdout)

    def gateway_status(self) -> dict[str, Any]:
        return self.status().get("gateway", {})

    # -- exec approvals on the gateway path ----------------------------------------------------
    def write_policy(self, policy: dict[str, Any] | str) -> None:
        """Our policy file, replaced atomically: ours re-reads it on every call and must never
        see half a file."""
        text = policy if isinstance(policy, str) else json.dumps(policy)
        staged = self.data / "exec-approvals.json.e2e-tmp"
        staged.write_text(text)
        staged.chmod(0o600)
        os.replace(staged, self.data / "exec-approvals.json")

    @staticmethod
    def node_call(session: Any, node_id: str, command: str, params: dict[str, Any], timeout_ms: int = 15000) -> dict[str, Any]:
        """node.invoke on `session` (the connection an approval is bound to): the response frame."""
        return session.call("node.invoke", {"nodeId": node_id, "command": command, "params": params,
                                            "idempotencyKey": str(uuid.uuid4()), "timeoutMs": timeout_ms},
                            timeout_s=timeout_ms / 1000 + 30)

    @staticmethod
    def remote_policy(session: Any, node_id: str) -> dict[str, Any]:
        frame = session.call("exec.approvals.node.get", {"nodeId": node_id}, timeout_s=45)
        expect(frame.get("ok") is True, f"exec.approvals.node.get {node_id[:12]}…: {json.dumps(frame.get('error'))[:600]}")
        return frame["payload"]

    def set_remote_policy(self, session: Any, node_id: str, file: dict[str, Any]) -> dict[str, Any]:
        """exec.approvals.node.set with the current baseHash: the response frame (ok or not)."""
        base = self.remote_policy(session, node_id)["hash"]
        return session.call("exec.approvals.node.set", {"nodeId": node_id, "file": file, "baseHash": base}, timeout_s=45)

    def set_real_policy(self, session: Any, file: dict[str, Any]) -> None:
        if self.real_policy is None:
            self.real_policy = self.remote_policy(session, self.real_id)["file"]
        frame = self.set_remote_policy(session, self.real_id, file)
        expect(frame.get("ok") is True, f"the real node host refused its policy: {json.dumps(frame.get('error'))[:600]}")

    def restore_policies(self, session: Any) -> None:
        self.write_policy(ALLOW_ALL)
        if self.real_policy is not None:
            frame = self.set_remote_policy(session, self.real_id, self.real_policy)
            expect(frame.get("ok") is True, f"restoring the real node host's policy: {json.dumps(frame.get('error'))[:600]}")

    @contextlib.contextmanager
    def policies(self, ours: dict[str, Any] | None = None, real: dict[str, Any] | None = None):
        """An operator session with ours (file) and the real node host (exec.approvals.node.set)
        under the given policies; both are put back (ALLOW_ALL, the real host's own) however the
        body ends, so the later checks run as before. A failed restore fails the check."""
        session = self.gateway.session()
        problem: BaseException | None = None
        try:
            if ours is not None:
                self.write_policy(ours)
            if real is not None:
                self.set_real_policy(session, real)
            yield session
        except BaseException as err:
            problem = err
            raise
        finally:
            try:
                self.restore_policies(session)
            except Exception as err:
                if problem is None:
                    raise
                raise Failed(f"{problem}\nAND restoring the policies failed: {err}") from problem
            finally:
                session.close()

    def approval_flow(self, session: Any, approver: Any, node_id: str, decision: str | None,
                      argv: tuple[str, ...] = ("echo", "hi"), after_prepare: Callable[[], None] | None = None) -> dict[str, Any]:
        """The gateway exec tool's node path, played with operator RPCs (no model here):
        system.run.prepare -> exec.approvals.node.get -> exec.approval.request (twoPhase, on
        `session`) -> the operator's approval client (`approver`) sees exec.approval.requested and
        answers -> system.run again on `session` with runId = the approval id, approved and the
        decision (the gateway forwards them only for that record). decision None: nobody answers,
        the approval times out (1.5 s) and the re-invoke asks the node to apply its own askFallback
        (approvalSource ask-fallback), as the tool does then. Returns each step's answer."""
        prepared = node_payload(self.node_call(session, node_id, "system.run.prepare",
                                               {"command": list(argv), "agentId": AGENT}), "system.run.prepare")
        parsed = parsed_prepare(prepared)
        plan, policy = parsed["plan"], parsed["execPolicy"] or {}
        self.remote_policy(session, node_id)  # the tool reads the node's policy before asking
        if after_prepare is not None:
            after_prepare()
        request = session.send("exec.approval.request", {
            "systemRunPlan": plan, "host": "node", "nodeId": node_id, "command": plan["commandText"],
            "cwd": plan["cwd"], "agentId": AGENT, "security": policy.get("security"), "ask": policy.get("ask"),
            "timeoutMs": 60000 if decision else 1500, "twoPhase": True})
        accepted = session.response(request, 0, 30)
        expect(accepted.get("ok") is True and accepted["payload"].get("status") == "accepted",
               f"exec.approval.request: {json.dumps(accepted)[:600]}")
        approval_id = accepted["payload"]["id"]
        requested = approver.event(lambda f: f["event"] == "exec.approval.requested" and f["payload"].get("id") == approval_id,
                                   30, f"exec.approval.requested {approval_id} at the approval client")
        expect(requested["payload"]["request"].get("nodeId") == node_id, f"requested for another node: {requested}")
        if decision is not None:
            resolved = approver.call("exec.approval.resolve", {"id": approval_id, "decision": decision}, timeout_s=30)
            expect(resolved.get("ok") is True, f"exec.approval.resolve {decision}: {json.dumps(resolved.get('error'))[:600]}")
        final = session.response(request, 1, 30)
        expect(final.get("ok") is True and "decision" in final["payload"] and final["payload"]["decision"] == decision,
               f"the request's final answer (want decision {decision}): {json.dumps(final)[:600]}")
        authority = ({"approved": True, "approvalDecision": decision} if decision is not None
                     else {"approvalSource": "ask-fallback"})
        run = self.node_call(session, node_id, "system.run", {
            "command": plan["argv"], "rawCommand": plan["commandText"], **({"cwd": plan["cwd"]} if plan["cwd"] else {}),
            "agentId": AGENT, "systemRunPlan": plan, "runId": approval_id, **authority})
        return {"plan": plan, "approval_id": approval_id, "route": accepted["payload"].get("deliveryRoute"), "run": run}

    # -- processes -----------------------------------------------------------------------------
    def start_ours(self) -> None:
        self.data.mkdir(mode=0o700, parents=True, exist_ok=True)
        policy = self.data / "exec-approvals.json"
        policy.write_text(ALLOW_ALL)
        policy.chmod(0o600)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        log = open(self.artifacts / "clawmcp-node.log", "w")  # noqa: SIM115 - lives as long as the node
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.artifacts / "ours-home"),
               "RUST_LOG": "info"}
        (self.artifacts / "ours-home").mkdir(exist_ok=True)
        self.ours = subprocess.Popen(
            [self.bin, "node", "--port", str(self.port), "--data-dir", str(self.data), "--gateway-url", self.gateway.url,
             "--gateway-token-file", str(self.gateway.token_file), "--name", OURS],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)

    def start_real(self) -> None:
        home = self.artifacts / "real-home"
        state = self.artifacts / "real-state"
        home.mkdir(exist_ok=True)
        state.mkdir(exist_ok=True)
        (state / "openclaw.json").write_text(json.dumps({"logging": {"file": str(self.artifacts / "real-node-file.log")}}))
        port = self.gateway.url.rsplit(":", 1)[1]
        env = self.client_env() | {"HOME": str(home), "OPENCLAW_HOME": str(home), "OPENCLAW_STATE_DIR": str(state),
                                   "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
                                   "OPENCLAW_GATEWAY_TOKEN": self.token()}
        log = open(self.artifacts / "real-node.log", "w")  # noqa: SIM115
        self.real = subprocess.Popen(
            [self.gateway.node, self.gateway.openclaw_entry, "node", "run", "--host", "127.0.0.1", "--port", port,
             "--display-name", REAL],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)

    def stop(self) -> list[str]:
        problems = []
        for name, process in (("clawmcp node", self.ours), ("openclaw node run", self.real)):
            if process is None or process.poll() is not None:
                continue
            if process is self.real:
                os.killpg(process.pid, signal.SIGTERM)
            else:
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                problems.append(f"{name} (pid {process.pid}) ignored SIGTERM for 20 s")
                if process is self.real:
                    os.killpg(process.pid, signal.SIGKILL)
                else:
                    process.kill()
                process.wait(timeout=10)
        return problems

    # -- checks --------------------------------------------------------------------------------
    def pending(self) -> str:
        # The paired device can be listed a moment before its node connection registers.
        entry = wait_for("our node connected in node.list",
                         lambda: (e := self.node_entry(OURS)) and e.get("connected") and e.get("approvalState") != "unapproved" and e)
        self.ours_id = entry["nodeId"]
        expect(entry.get("clientId") == "node-host", f"clientId {entry.get('clientId')}")
        expect(entry.get("platform") == "linux" and entry.get("deviceFamily") == "Linux", f"platform {entry}")
        expect(entry.get("approvalState") == "pending-approval", f"approvalState {entry.get('approvalState')}")
        declared = entry.get("pendingDeclaredCommands") or []
        expect("system.run" in declared and "system.which" in declared, f"pendingDeclaredCommands {declared}")
        status = wait_for("our status to say pending", lambda: (s := self.gateway_status()).get("pairing") == "pending" and s)
        expect(status.get("state") == "connected", f"status {status}")
        expect(status.get("nodeId") == self.ours_id, f"status nodeId {status.get('nodeId')} vs node.list {self.ours_id}")
        whole = self.status()
        expect(whole.get("running") is True and whole.get("pid") == self.ours.pid, f"status running/pid {whole}")
        mcp = whole.get("mcp") or {}
        expect(mcp.get("state") == "listening" and mcp.get("endpoint") == f"http://127.0.0.1:{self.port}/", f"status mcp {mcp}")
        expect("openclaw nodes approve" in (status.get("hint") or ""), f"hint {status.get('hint')}")
        listed = self.openclaw("nodes", "status")
        cli = next((n for n in listed.get("nodes", []) if n.get("nodeId") == self.ours_id), None)
        expect(cli is not None, f"ours is not in `openclaw nodes status --json`: {json.dumps(listed)[:600]}")
        for key, want in (("approvalState", "pending-approval"), ("clientId", "node-host"), ("platform", "linux"),
                          ("deviceFamily", "Linux")):
            expect(cli.get(key) == want, f"`openclaw nodes status --json` {key}: {cli.get(key)!r}, want {want!r}")
        cli_declared = cli.get("pendingDeclaredCommands") or []
        expect("system.run" in cli_declared and "system.which" in cli_declared,
               f"`openclaw nodes status --json` pendingDeclaredCommands {cli_declared}")
        return f"node {self.ours_id[:12]}… declared {len(declared)} admitted commands (node.list and the real CLI)"

    def approve(self) -> str:
        pending = self.openclaw("nodes", "pending")
        request = next((r for r in pending if r.get("nodeId") == self.ours_id), None)
        expect(request is not None, f"our node is not in `openclaw nodes pending`: {json.dumps(pending)[:600]}")
        status = self.gateway_status()
        expect(status.get("requestId") == request["requestId"], f"our status names {status.get('requestId')}")
        expect(f"openclaw nodes approve {request['requestId']}" in (status.get("hint") or ""), f"hint {status}")
        self.openclaw("nodes", "approve", request["requestId"])
        wait_for("approvalState approved", lambda: (self.node_entry(OURS) or {}).get("approvalState") == "approved")
        wait_for("our status to say approved", lambda: self.gateway_status().get("pairing") == "approved")
        return f"request {request['requestId'][:8]}… approved with the real CLI"

    def approve_real(self) -> str:
        entry = wait_for("the real node host connected in node.list",
                         lambda: (e := self.node_entry(self.real_name)) and e.get("connected") and e.get("approvalState") != "unapproved" and e)
        self.real_id = entry["nodeId"]
        if entry.get("approvalState") != "approved":
            request = entry.get("pendingRequestId")
            expect(bool(request), f"the real node host has no pending request: {entry}")
            self.gateway.rpc("node.pair.approve", {"requestId": request})
            wait_for("the real node approved", lambda: (self.node_entry(self.real_name) or {}).get("approvalState") == "approved")
        if self.external_real:
            expect(entry.get("approvalState") == "approved", f"start.sh --with-node left it {entry.get('approvalState')}")
            return f"real node {self.real_id[:12]}… (start.sh --with-node, approved there)"
        return f"real node {self.real_id[:12]}…"

    def status_lists(self) -> str:
        # node.host.stats refused while the surface was pending is resent on a backoff: poll for
        # it (bounded) instead of racing the real CLI against the resend.
        started = time.monotonic()
        wait_for("hostStats (node.host.stats) for ours in node.list",
                 lambda: (self.node_entry(OURS) or {}).get("hostStats"), timeout_s=20)
        stats_after = time.monotonic() - started
        listed = self.openclaw("nodes", "status")
        entry = next((n for n in listed.get("nodes", []) if n.get("nodeId") == self.ours_id), None)
        expect(entry is not None, "ours is not in `openclaw nodes status --json`")
        for command in ("system.run", "system.which", "mcp.tools.call.v1"):
            expect(command in entry.get("commands", []), f"{command} not in {entry.get('commands')}")
        expect(bool(entry.get("hostStats")), f"no hostStats (node.host.stats) in {entry}")
        return (f"{len(entry['commands'])} commands, hostStats cpuCount {entry['hostStats'].get('cpuCount')} "
                f"(in node.list {stats_after:.1f} s after approval was seen)")

    def same_which(self) -> str:
        ours = self.invoke(self.ours_id, "system.which", {"bins": ["sh", "no-such-binary-xyz"]})
        real = self.invoke(self.real_id, "system.which", {"bins": ["sh", "no-such-binary-xyz"]})
        expect(ours.get("payload") == real.get("payload"), f"ours {ours.get('payload')} vs real {real.get('payload')}")
        return json.dumps(ours["payload"])

    def same_run(self) -> str:
        ours = self.invoke(self.ours_id, "system.run", {"command": ["echo", "hi"]})["payload"]
        real = self.invoke(self.real_id, "system.run", {"command": ["echo", "hi"]})["payload"]
        shape = lambda payload: {k: type(v).__name__ for k, v in payload.items()}  # noqa: E731
        expect(shape(ours) == shape(real), f"ours {shape(ours)} vs real {shape(real)}")
        keys = {"exitCode", "timedOut", "success", "stdout", "stderr", "error"}
        expect(set(ours) == keys, f"ours has keys {sorted(ours)}, want {sorted(keys)}")
        expect(ours["stdout"] == real["stdout"] == "hi\n", f"stdout {ours['stdout']!r} vs {real['stdout']!r}")
        expect(ours["exitCode"] == real["exitCode"] == 0 and ours["success"] is True, f"{ours}")
        return json.dumps(ours)

    def cli_invoke(self) -> str:
        answer = self.openclaw("nodes", "invoke", "--node", OURS, "--command", "system.which", "--params",
                               '{"bins":["sh"]}')
        expect(answer.get("ok") is True and "sh" in (answer.get("payload") or {}).get("bins", {}), f"{answer}")
        return json.dumps(answer.get("payload"))

    def params_null(self) -> str:
        ours = gateway_error(self.invoke_error(self.ours_id, "system.which"))
        real = gateway_error(self.invoke_error(self.real_id, "system.which"))
        expect(error_codes(ours) == error_codes(real), f"ours {error_codes(ours)} vs real {error_codes(real)}")
        expect(error_codes(ours)["nodeError.code"] == "INVALID_REQUEST", f"{ours}")
        expect("bins" in ours.get("message", ""), f"ours does not say what is missing: {ours.get('message')}")
        return f"{error_codes(ours)}; ours {ours.get('message')!r}, real {real.get('message')!r}"

    def plugin_tool(self) -> str:
        entry = self.node_entry(OURS) or {}
        published = [tool.get("name") for tool in entry.get("nodePluginTools") or []]
        expect("device_info" in published, f"nodePluginTools {published}")
        expect("system_run" not in published, "system.run must stay behind the exec tool's approval flow")
        answer = self.invoke(self.ours_id, "mcp.tools.call.v1", {"server": "clawmcp", "tool": "device.info", "arguments": {}})
        payload = answer["payload"]
        expect(payload.get("content", [{}])[0].get("type") == "text", f"{payload}")
        info = json.loads(payload["content"][0]["text"])
        expect(bool(info), f"device.info answered nothing: {payload}")
        return f"{len(published)} plugin tools; device.info keys {sorted(info)[:5]}"

    def mcp_post(self, message: dict[str, Any], session: str | None, timeout_s: float = 30) -> tuple[Any, str | None]:
        """One JSON-RPC message to our local MCP endpoint (Streamable HTTP): (answer or None, session id)."""
        headers = {"Authorization": f"Bearer {(self.data / 'mcp-token.txt').read_text().strip()}",
                   "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if session:
            headers["Mcp-Session-Id"] = session
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/", data=json.dumps(message).encode(),
                                         headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - loopback only
            session = response.headers.get("Mcp-Session-Id") or session
            body = response.read().decode()
            if "id" not in message:
                return None, session
            if "text/event-stream" in (response.headers.get("Content-Type") or ""):
                for line in body.splitlines():
                    if line.startswith("data:") and (event := json.loads(line[5:])).get("id") == message["id"]:
                        return event, session
                raise Failed(f"no answer to {message['method']} in the event stream: {body[:400]}")
            return json.loads(body), session

    def mcp_beside(self) -> str:
        init, session = self.mcp_post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "node-mode-e2e", "version": "1"}}},
            None)
        expect("result" in init, f"initialize: {init}")
        self.mcp_post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        called, _ = self.mcp_post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "system.which", "arguments": {"bins": ["sh"]}}}, session)
        result = called.get("result") or {}
        expect(result.get("isError") is not True and "/sh" in json.dumps(result), f"tools/call: {called}")
        after_raw = self.invoke(self.ours_id, "system.which", {"bins": ["sh"]})
        expect("sh" in after_raw["payload"]["bins"], f"gateway invoke after the MCP call: {after_raw}")
        done = subprocess.run([self.bin, "call", "system.which", "--params", '{"bins":["sh"]}', "--port", str(self.port),
                               "--data-dir", str(self.data)], capture_output=True, text=True, timeout=60)
        expect(done.returncode == 0, f"clawmcp call exited {done.returncode}: {done.stderr[-600:]}")
        expect("/sh" in done.stdout, f"clawmcp call printed {done.stdout[:300]}")
        after_call = self.invoke(self.ours_id, "system.which", {"bins": ["sh"]})
        expect("sh" in after_call["payload"]["bins"], f"gateway invoke after clawmcp call: {after_call}")
        return f"MCP tools/call over HTTP and `clawmcp call`, each beside a gateway invoke (pid {self.ours.pid})"

    def timeout_kills(self) -> str:
        import threading  # noqa: PLC0415
        import procutil  # noqa: PLC0415  (this directory is on sys.path)

        marker = f"clawmcp-e2e-timeout-{uuid.uuid4().hex[:8]}"
        script = f"sleep 300 # {marker}"
        outcome: dict[str, Any] = {}

        def call() -> None:
            try:
                outcome["error"] = self.invoke_error(self.ours_id, "system.run",
                                                     {"command": ["sh", "-c", script],
                                                      "timeoutMs": 600000}, timeout_ms=2000)
            except Exception as err:  # noqa: BLE001 - reported below
                outcome["raised"] = err
            outcome["at"] = time.monotonic()

        started = time.monotonic()
        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        # While it runs: the shell with the marker and its children (sleep has no marker), with
        # their start times, so "gone" cannot be satisfied by a run that never started or by an
        # orphaned child.
        # (The marker is also in gateway_rpc.mjs's argv: only the `sh -c` counts.)
        seen: dict[int, str] = {}
        shells: set[int] = set()
        while caller.is_alive():
            for pid in processes_with(marker):
                try:
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                # ours execs the resolved shell (/usr/bin/dash), so match the arguments, not argv[0]
                if argv[1:3] != [b"-c", script.encode()]:
                    continue
                shells.add(pid)
                for member in procutil.tree(pid):
                    seen.setdefault(member, procutil.start_time(member))
            time.sleep(0.05)
        caller.join()
        if "raised" in outcome:
            raise outcome["raised"]
        failed_after = outcome["at"] - started
        codes = error_codes(gateway_error(outcome["error"]))
        expect(codes["nodeError.code"] == "TIMEOUT", f"not a TIMEOUT: {outcome['error']}")
        expect(failed_after < 10, f"the invoke took {failed_after:.1f} s to fail (timeoutMs 2000)")
        expect(shells and len(seen) > len(shells), f"the run never showed up as sh + sleep: {seen}")
        alive = lambda: [pid for pid, st in seen.items() if st and procutil.start_time(pid) == st  # noqa: E731
                         and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
        try:
            gone = wait_for("no process of the timed-out run", lambda: not alive() and time.monotonic(), timeout_s=5,
                            every_s=0.05)
        except Failed as err:
            raise Failed(f"{err}; still running: {alive()}") from None
        return (f"TIMEOUT after {failed_after:.1f} s; its {len(seen)} processes (sh + sleep) gone "
                f"{gone - outcome['at']:.1f} s later")

    def prepare_shape(self) -> str:
        with self.gateway.session() as session:
            answers = {name: node_payload(self.node_call(session, node, "system.run.prepare", {"command": ["echo", "hi"]}),
                                          f"{name} system.run.prepare")
                       for name, node in (("ours", self.ours_id), ("real", self.real_id))}
        parsed = {name: parsed_prepare(answer) for name, answer in answers.items()}
        ours, real = answers["ours"], answers["real"]
        for key in (*PLAN_KEYS, "policySnapshot"):
            expect(key in ours["plan"], f"ours' plan lacks {key}: {sorted(ours['plan'])} (real: {sorted(real['plan'])})")
        expect(set(ours["plan"]["policySnapshot"]) == set(real["plan"]["policySnapshot"]) == SNAPSHOT_KEYS,
               f"policySnapshot keys: ours {sorted(ours['plan']['policySnapshot'])}, real {sorted(real['plan']['policySnapshot'])}")
        expect(parsed["ours"]["execPolicy"] is not None and set(ours["execPolicy"]) == set(real["execPolicy"]) == {"security", "ask"},
               f"execPolicy: ours {ours.get('execPolicy')}, real {real.get('execPolicy')}")
        # Both run under a full/off policy here (ours ALLOW_ALL, the real host its default).
        expect(parsed["ours"]["plan"]["policySnapshot"] == parsed["real"]["plan"]["policySnapshot"],
               f"policySnapshot: ours {ours['plan']['policySnapshot']}, real {real['plan']['policySnapshot']}")
        expect(ours["execPolicy"] == real["execPolicy"], f"execPolicy: ours {ours['execPolicy']}, real {real['execPolicy']}")
        plan = parsed["ours"]["plan"]
        expect(plan["argv"][1:] == ["hi"] and plan["argv"][0].endswith("echo") and "echo" in plan["commandText"],
               f"ours' plan {plan}")
        extra = lambda a, b: sorted(set(answers[a]) - set(answers[b])) + [f"plan.{k}" for k in sorted(set(answers[a]["plan"]) - set(answers[b]["plan"]))]  # noqa: E731
        return (f"ours argv {plan['argv']} commandText {plan['commandText']!r}, snapshot = real's; keys only ours has "
                f"{extra('ours', 'real')}, only real has {extra('real', 'ours')}")

    def approval_required(self) -> str:
        seen = {}
        with self.policies(ours=ON_MISS, real=ON_MISS) as session:
            for name, node in (("ours", self.ours_id), ("real", self.real_id)):
                started = time.monotonic()
                frame = self.node_call(session, node, "system.run", {"command": ["echo", "hi"]})
                took = time.monotonic() - started
                code, message = node_error(node_refusal(frame, f"{name} system.run under on-miss"))
                expect(code == "SYSTEM_RUN_DENIED" and "approval required" in message.lower(),
                       f"{name}: nodeError {code} {message!r} after {took:.1f} s, want SYSTEM_RUN_DENIED ... approval required")
                expect(took < 10, f"{name} took {took:.1f} s to refuse (a local prompt would wait 120 s)")
                seen[name] = f"{message!r} in {took:.2f} s"
        # The gateway's exec.denied handling has no operator-visible effect (no event, no system
        # event, not in its default log), so it is not checked here.
        return f"ours {seen['ours']}; real {seen['real']}"

    def approve_reinvoke(self) -> str:
        seen = {}
        with self.policies(ours=ON_MISS, real=ON_MISS) as session, \
                self.gateway.session(caps=("exec-approvals",)) as approver:
            for name, node in (("ours", self.ours_id), ("real", self.real_id)):
                flow = self.approval_flow(session, approver, node, "allow-once")
                payload = node_payload(flow["run"], f"{name}: system.run approved allow-once ({flow['approval_id']})")
                expect(payload.get("stdout") == "hi\n" and payload.get("success") is True and payload.get("exitCode") == 0,
                       f"{name} approved run: {payload}")
                seen[name] = f"stdout {payload['stdout']!r} (route {flow['route']})"
            # allow-once records nothing: the next plain run asks again.
            again = self.node_call(session, self.ours_id, "system.run", {"command": ["echo", "hi"]})
            code, message = node_error(node_refusal(again, "ours' plain system.run after allow-once"))
            expect(code == "SYSTEM_RUN_DENIED" and "approval required" in message.lower(), f"after allow-once: {code} {message!r}")
        return f"ours {seen['ours']}; real {seen['real']}; ours asks again afterwards"

    def allow_always(self) -> str:
        with self.policies(ours=ON_MISS, real=ON_MISS) as session, \
                self.gateway.session(caps=("exec-approvals",)) as approver:
            flow = self.approval_flow(session, approver, self.ours_id, "allow-always")
            payload = node_payload(flow["run"], "ours: system.run approved allow-always")
            expect(payload.get("stdout") == "hi\n" and payload.get("success") is True, f"ours' approved run: {payload}")
            entries = allow_always_entries(self.remote_policy(session, self.ours_id))
            echo = [e for e in entries if str(e.get("pattern", "")).endswith("/echo")]
            expect(bool(echo), f"no allow-always entry for echo in ours' exec.approvals.node.get: {entries}")
            plain = node_payload(self.node_call(session, self.ours_id, "system.run", {"command": ["echo", "hi"]}),
                                 "ours' plain system.run after allow-always")
            expect(plain.get("stdout") == "hi\n", f"ours' plain run after allow-always: {plain}")
            # The real host, same flow: it runs and records; its entry binds cwd and the resolved
            # argv, so a plain [echo, hi] still asks there (reported, not required of ours).
            real_flow = self.approval_flow(session, approver, self.real_id, "allow-always")
            real_payload = node_payload(real_flow["run"], "real: system.run approved allow-always")
            expect(real_payload.get("stdout") == "hi\n", f"real approved run: {real_payload}")
            real_entries = allow_always_entries(self.remote_policy(session, self.real_id))
            expect(any(str(e.get("pattern", "")).endswith("/echo") for e in real_entries), f"real entries {real_entries}")
            real_plain = self.node_call(session, self.real_id, "system.run", {"command": ["echo", "hi"]})
            real_again = node_error(real_plain["error"])[1] if not real_plain["ok"] else "ran"
        return (f"ours recorded {json.dumps({k: echo[0].get(k) for k in ('pattern', 'source')})} and then ran plain "
                f"[echo, hi]; real recorded {[e.get('pattern') for e in real_entries]}, plain [echo, hi] there: {real_again!r}")

    def policy_changed(self) -> str:
        seen = {}
        with self.policies(ours=ON_MISS, real=ON_MISS) as session, \
                self.gateway.session(caps=("exec-approvals",)) as approver:
            tighten = {"ours": lambda: self.write_policy(ASK_ALWAYS), "real": lambda: self.set_real_policy(session, ASK_ALWAYS)}
            for name, node in (("ours", self.ours_id), ("real", self.real_id)):
                flow = self.approval_flow(session, approver, node, "allow-once", after_prepare=tighten[name])
                code, message = node_error(node_refusal(flow["run"], f"{name}: approved after the policy was tightened"))
                expect(code == "SYSTEM_RUN_DENIED" and "policy changed" in message.lower(),
                       f"{name}: nodeError {code} {message!r}, want SYSTEM_RUN_DENIED ... policy changed")
                seen[name] = message
        return f"ours {seen['ours']!r}; real {seen['real']!r}"

    def ask_fallback(self) -> str:
        seen = {}
        for fallback, runs in (("full", True), ("deny", False)):
            policy = {"version": 1, "defaults": {"security": "full", "ask": "always", "askFallback": fallback}, "agents": {}}
            with self.policies(ours=policy, real=policy) as session, \
                    self.gateway.session(caps=("exec-approvals",)) as approver:
                for name, node in (("ours", self.ours_id), ("real", self.real_id)):
                    flow = self.approval_flow(session, approver, node, None)
                    what = f"{name}: askFallback {fallback} after the approval timed out"
                    if runs:
                        payload = node_payload(flow["run"], what)
                        expect(payload.get("stdout") == "hi\n" and payload.get("success") is True, f"{what}: {payload}")
                        seen[f"{name} {fallback}"] = "ran"
                    else:
                        code, message = node_error(node_refusal(flow["run"], what))
                        expect(code == "SYSTEM_RUN_DENIED", f"{what}: nodeError {code} {message!r}, want SYSTEM_RUN_DENIED")
                        seen[f"{name} {fallback}"] = message
        return "; ".join(f"{k}: {v!r}" if v != "ran" else f"{k}: ran" for k, v in seen.items())

    def approvals_remote_set(self) -> str:
        with self.policies(ours=ON_MISS, real=ON_MISS) as session:
            before = self.remote_policy(session, self.ours_id)
            expect({"path", "exists", "hash", "file"} <= set(before) and before["file"].get("defaults", {}).get("security") == "allowlist",
                   f"ours' exec.approvals.node.get: {json.dumps(before)[:600]}")
            looser = json.loads(json.dumps(before["file"]))
            looser["defaults"]["security"] = "full"
            refused = self.set_remote_policy(session, self.ours_id, looser)
            expect(refused.get("ok") is False and "cannot make security less restrictive" in json.dumps(refused.get("error")),
                   f"loosening to security full: {json.dumps(refused)[:600]}")
            unchanged = self.remote_policy(session, self.ours_id)
            expect(unchanged["hash"] == before["hash"], f"the refused set changed the policy: {unchanged}")
            stricter = json.loads(json.dumps(before["file"]))
            stricter["defaults"]["security"] = "deny"
            accepted = self.set_remote_policy(session, self.ours_id, stricter)
            expect(accepted.get("ok") is True, f"tightening to security deny: {json.dumps(accepted.get('error'))[:600]}")
            on_disk = json.loads((self.data / "exec-approvals.json").read_text())
            expect(on_disk.get("defaults", {}).get("security") == "deny", f"the policy file after the set: {on_disk}")
            code, message = node_error(node_refusal(self.node_call(session, self.ours_id, "system.run", {"command": ["echo", "hi"]}),
                                                    "ours' system.run under security deny"))
            expect(code == "SYSTEM_RUN_DENIED", f"ours under deny: {code} {message!r}")
            # The real host, same requests: it takes the loosening too (reported), then deny.
            real_loose = self.set_remote_policy(session, self.real_id, {**ON_MISS, "defaults": {**ON_MISS["defaults"], "security": "full"}})
            real_loose_said = "accepted" if real_loose.get("ok") else (real_loose.get("error") or {}).get("message")
            self.set_real_policy(session, {**ON_MISS, "defaults": {**ON_MISS["defaults"], "security": "deny"}})
            real_code, real_message = node_error(node_refusal(
                self.node_call(session, self.real_id, "system.run", {"command": ["echo", "hi"]}), "real system.run under security deny"))
            expect(real_code == code, f"under deny: ours {code} {message!r}, real {real_code} {real_message!r}")
            refusal = (refused.get("error") or {}).get("message", "")
            # Last, so a failure here means everything above held. A refused update is the
            # caller's mistake, not a transient failure: the real host answers a stale baseHash
            # with its code for a refused update; ours must use that code there and for the
            # loosening it refuses.
            stale = {name: node_error(node_refusal(session.call("exec.approvals.node.set", {
                "nodeId": node, "file": ON_MISS, "baseHash": "0" * 64}, timeout_s=45), f"{name}: a set with a stale baseHash"))
                for name, node in (("ours", self.ours_id), ("real", self.real_id))}
            expect(stale["ours"][0] == stale["real"][0],
                   f"loosen refused, deny accepted and enforced, but a stale baseHash: ours nodeError {stale['ours']}, "
                   f"real {stale['real']}")
            loosen_code = node_error(refused["error"])[0]
            expect(loosen_code == stale["real"][0],
                   f"the refused loosening: nodeError.code {loosen_code}, want {stale['real'][0]} (the real host's code for a refused update)")
        with self.gateway.session() as session:  # ALLOW_ALL is back: ours runs again
            restored = node_payload(self.node_call(session, self.ours_id, "system.run", {"command": ["echo", "hi"]}),
                                    "ours' system.run after ALLOW_ALL was written back")
            expect(restored.get("stdout") == "hi\n", f"after the restore: {restored}")
        return (f"loosen refused {refusal!r}; deny accepted, then {message!r} (real: loosen {real_loose_said}, "
                f"deny then {real_message!r}); ALLOW_ALL written back runs again")

    def mcp_self_approve(self) -> str:
        marker = self.artifacts / f"self-approved-{uuid.uuid4().hex[:8]}"
        with self.policies(ours=ON_MISS):
            init, session = self.mcp_post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "node-mode-e2e", "version": "1"}}},
                None)
            expect("result" in init, f"initialize: {init}")
            self.mcp_post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
            started = time.monotonic()
            try:
                called, _ = self.mcp_post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                    "name": "system.run", "arguments": {"command": ["touch", str(marker)], "approved": True,
                                                        "approvalDecision": "allow-once"}}}, session, timeout_s=15)
            except (TimeoutError, urllib.error.URLError) as err:
                raise Failed(f"no answer within 15 s ({err}): the self-approved call waits (for a local prompt?) "
                             f"instead of being refused; {marker} exists: {marker.exists()}") from None
            took = time.monotonic() - started
        result = called.get("result") or {}
        text = json.dumps(called.get("error") or result.get("content"))
        expect("error" in called or result.get("isError") is True, f"a self-approved tools/call was not refused: {called}")
        expect(not marker.exists(), f"the self-approved command ran: {marker} exists")
        expect("approved" in text, f"the refusal does not name the approval field: {text[:400]}")
        expect(took < 10, f"the refusal took {took:.1f} s (a local prompt would wait 120 s)")
        return f"refused in {took:.2f} s, not run: {text[:160]}"

    def token_rotation(self) -> str:
        config_path = self.gateway.root / "state" / "openclaw.json"
        config = json.loads(config_path.read_text())
        rotated = uuid.uuid4().hex + uuid.uuid4().hex
        config["gateway"]["auth"]["token"] = rotated
        config_path.write_text(json.dumps(config, indent=2))
        # Ours was started with the harness token file and keeps sending the stale token: only
        # its saved device token can get it back in. The operator side (this suite's RPCs and
        # the real CLI) gets the new token once ours has been dropped.
        wait_for("ours to drop (4001) and come back", lambda: self.gateway_status().get("state") != "connected", 30, 0.05)
        self.gateway.token_file.write_text(rotated)
        wait_for("ours connected again", lambda: self.gateway_status().get("state") == "connected")
        entry = wait_for("ours approved again", lambda: (e := self.node_entry(OURS)) and e.get("connected") and e)
        expect(entry.get("approvalState") == "approved", f"re-pairing was needed: {entry.get('approvalState')}")
        answer = self.invoke(self.ours_id, "system.which", {"bins": ["sh"]})
        expect("sh" in answer["payload"]["bins"], f"{answer}")
        log = (self.artifacts / "clawmcp-node.log").read_text(errors="replace")
        expect("retrying with this device's token" in log, "no device-token retry in our log")
        saved = [f for f in self.data.iterdir() if f.name.startswith("device-auth")]
        expect(bool(saved), f"no persisted device token in {self.data}: {sorted(f.name for f in self.data.iterdir())}")
        modes = {f.name: oct(f.stat().st_mode & 0o777) for f in saved}
        expect(all(m == "0o600" for m in modes.values()), f"device token file modes {modes}")
        return "back in with the device token, still approved"

    def doctor(self, token_file: Path) -> tuple[int, dict[str, dict[str, Any]]]:
        """`clawmcp doctor --json` for our node's data dir and the gateway with `token_file`: its
        exit code and its findings by `what` (the gateway ones are named with the URL)."""
        done = subprocess.run([self.bin, "doctor", "--json", "--data-dir", str(self.data), "--port", str(self.port),
                               "--gateway-url", self.gateway.url, "--gateway-token-file", str(token_file)],
                              capture_output=True, text=True, timeout=60,
                              env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.artifacts / "ours-home")})
        try:
            document = json.loads(done.stdout)
        except json.JSONDecodeError:
            raise Failed(f"doctor --json exited {done.returncode} without JSON: {(done.stderr or done.stdout)[-800:]}") from None
        return done.returncode, {finding["what"]: finding for finding in document["findings"]}

    @staticmethod
    def finding(findings: dict[str, dict[str, Any]], prefix: str) -> dict[str, Any]:
        found = [finding for what, finding in findings.items() if what.startswith(prefix)]
        expect(len(found) == 1, f"one finding starting {prefix!r}, got {json.dumps(list(findings))[:800]}")
        return found[0]

    def doctor_up(self) -> str:
        code, findings = self.doctor(self.gateway.token_file)
        gateway = self.finding(findings, "gateway for serve/tools at ")
        expect(gateway["level"] == "ok" and "OpenClaw 20" in gateway["why"], f"gateway finding: {json.dumps(gateway)}")
        node_mode = self.finding(findings, f"gateway node mode: {self.gateway.url}")
        expect(node_mode["level"] == "ok" and "is connected" in node_mode["why"], f"node mode finding: {json.dumps(node_mode)}")
        pairing = self.finding(findings, "device pairing:")
        expect(pairing["what"] == "device pairing: approved", f"pairing finding: {json.dumps(pairing)}")
        failed = [what for what, finding in findings.items() if finding["level"] == "fail"]
        expect(code == (1 if failed else 0), f"doctor exited {code} with failed findings {failed}")
        return f"{gateway['why']}; {node_mode['why']}; exit {code}"

    def doctor_refused(self) -> str:
        wrong = self.artifacts / "wrong-gateway-token"
        wrong.write_text(uuid.uuid4().hex + uuid.uuid4().hex + "\n")
        wrong.chmod(0o600)
        _, findings = self.doctor(wrong)
        gateway = self.finding(findings, "gateway for serve/tools at ")
        expect(gateway["level"] == "warn" and "refused" in gateway["why"], f"gateway finding: {json.dumps(gateway)}")
        expect("token" in gateway.get("fix", ""), f"the fix names the token: {json.dumps(gateway)}")
        return gateway["why"][:200]

    def restart(self) -> str:
        root = self.gateway.root
        subprocess.run(["bash", str(HERE / "stop.sh"), str(root)], check=True, timeout=60, capture_output=True)
        wait_for("ours to notice", lambda: self.gateway_status().get("state") == "connecting", 30)
        _, findings = self.doctor(self.gateway.token_file)
        gateway = self.finding(findings, "gateway for serve/tools at ")
        expect(gateway["level"] == "warn" and "unreachable" in gateway["why"] and "start the gateway" in gateway.get("fix", ""),
               f"gateway finding while it is down: {json.dumps(gateway)}")
        node_mode = self.finding(findings, f"gateway node mode: {self.gateway.url}")
        expect(node_mode["level"] != "ok", f"node mode finding while the gateway is down: {json.dumps(node_mode)}")
        with_node = ["--with-node"] if self.external_real else []
        done = subprocess.run(["bash", str(HERE / "start.sh"), "--root", str(root), "--restart", *with_node], capture_output=True,
                              text=True, timeout=240)
        expect(done.returncode == 0, f"the gateway did not restart: {done.stderr[-800:]}")
        from harness import Gateway  # noqa: PLC0415

        self.gateway = Gateway.from_env_file(self.gateway_env)
        wait_for("ours connected again", lambda: self.gateway_status().get("state") == "connected", 120)
        answer = wait_for("an invoke after the restart", lambda: self.invoke(self.ours_id, "system.which", {"bins": ["sh"]}))
        expect("sh" in answer["payload"]["bins"], f"{answer}")
        return f"reconnected on its own; doctor while it was down: {gateway['why'][:120]} / {node_mode['why'][:120]}"

    def sigterm(self) -> str:
        assert self.ours is not None
        self.ours.send_signal(signal.SIGTERM)
        try:
            code = self.ours.wait(timeout=10)
        except subprocess.TimeoutExpired:
            raise Failed("ours ignored SIGTERM for 10 s") from None
        expect(code == 0, f"ours exited {code} on SIGTERM")
        with socket.socket() as probe:
            expect(probe.connect_ex(("127.0.0.1", self.port)) != 0, f"127.0.0.1:{self.port} still accepts")
        wait_for("node.list to show ours disconnected", lambda: (self.node_entry(OURS) or {}).get("connected") is False, 30)
        done = subprocess.run([self.bin, "node", "status", "--json", "--data-dir", str(self.data)], capture_output=True,
                              text=True, timeout=30)
        expect(done.returncode == 3, f"`clawmcp node status` exited {done.returncode} for a stopped node (want 3)")
        status = json.loads(done.stdout)
        gateway = status.get("gateway") or {}
        shown = {"running": status.get("running"), "mcp.state": (status.get("mcp") or {}).get("state"),
                 "gateway.state": gateway.get("state"), "hint": gateway.get("hint")}
        expect(shown["running"] is False and shown["mcp.state"] == "off" and shown["gateway.state"] == "stopped",
               f"a stopped node's status: {json.dumps(shown)} (want running false, mcp.state off, gateway.state stopped)")
        return f"exit 0 in time, port closed, node.list disconnected, status {json.dumps(shown)}"

    def run(self) -> int:
        try:
            self.start_ours()
            if not self.external_real:
                self.start_real()
            self.check("pending", self.pending)
            self.check("approve", self.approve, ("pending",))
            self.check("approve-real", self.approve_real)
            self.check("status-lists", self.status_lists, ("approve",))
            self.check("same-which", self.same_which, ("approve", "approve-real"))
            self.check("same-run", self.same_run, ("approve", "approve-real"))
            self.check("cli-invoke", self.cli_invoke, ("approve",))
            self.check("params-null", self.params_null, ("approve", "approve-real"))
            self.check("plugin-tool", self.plugin_tool, ("approve",))
            self.check("mcp-beside", self.mcp_beside, ("pending",))
            self.check("timeout-kills", self.timeout_kills, ("approve",))
            self.check("prepare-shape", self.prepare_shape, ("approve", "approve-real"))
            self.check("approval-required", self.approval_required, ("approve", "approve-real"))
            self.check("approve-reinvoke", self.approve_reinvoke, ("approve", "approve-real"))
            self.check("allow-always", self.allow_always, ("approve", "approve-real"))
            self.check("policy-changed", self.policy_changed, ("approve", "approve-real"))
            self.check("ask-fallback", self.ask_fallback, ("approve", "approve-real"))
            self.check("approvals-remote-set", self.approvals_remote_set, ("approve", "approve-real"))
            self.check("mcp-self-approve", self.mcp_self_approve, ("pending",))
            self.check("doctor-up", self.doctor_up, ("approve",))
            self.check("doctor-refused", self.doctor_refused, ("pending",))
            self.check("token-rotation", self.token_rotation, ("approve",))
            self.check("restart", self.restart, ("approve",))
            self.check("sigterm", self.sigterm, ("pending",))
        finally:
            for problem in self.stop():
                self.rows.append(("stop", False, problem))
        return report(self.rows, "node-mode", self.artifacts / "node-mode.json")


def main() -> int:
    return Suite(suite_args(__doc__)).run()


if __name__ == "__main__":
    sys.exit(main())
