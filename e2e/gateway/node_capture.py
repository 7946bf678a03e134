"""Screen and camera capture of `clawmcp node` through the REAL OpenClaw gateway, driven with the
real CLI: `openclaw nodes invoke --node <id> --command <cmd> --params '<json>' --json`, the
dedicated `openclaw nodes screen record` and `openclaw nodes camera list|snap|clip`. One PASS/FAIL
row per check; nothing is skipped; every process (Xvfb, our node) is stopped by its PID (the
gateway by node_capture.sh); every wait is bounded. Python 3.11 stdlib only (JPEG and MP4 frames
are decoded by the ffmpeg binary).

Setup: a private `Xvfb -displayfd` 640x480x24 whose root is painted a random colour with
xsetroot; the CLI's private config names the gateway as gateway.remote {url, token} (0600), so
the token is never on a command line; our node starts with NodeCameraEnabled true and
NodeScreenEnabled false (set with `clawmcp settings --data-dir D set`) and DISPLAY of that Xvfb.

Checks, in order (a check whose prerequisite failed fails with the reason):
  gateway-allow    gateway.nodes.commands.allow [camera.list, camera.snap, camera.clip,
                   screen.record] written into the running gateway's config, applied by hot
                   reload ("config hot reload applied (gateway.nodes.commands)"), before our node
                   connects: the gateway filters a node's declared commands at connect. (camera.list
                   is a Linux default only through the linux-node plugin, and the harness runs
                   plugins.enabled false; screen.snapshot needs no entry: it is a desktop host
                   command, admitted once an operator approves a surface that declares it.)
  declared-off     screen switch off: our node's pending surface (node.list) has camera.list,
                   camera.snap, camera.clip and neither screen.snapshot nor screen.record; our
                   `clawmcp node status` lists screen.* as unavailable naming NodeScreenEnabled;
                   `openclaw nodes approve <requestId>`; `openclaw nodes status --json` then shows
                   the camera commands and no screen command
  disabled-refusal screen switch off: `openclaw nodes invoke ... screen.snapshot` fails at the CLI
                   with the refusal text; who refused is recorded (the gateway, for an undeclared
                   command, or our node, "disabled by user setting"), with node.invoke's error codes
  declared-on      `clawmcp settings set NodeScreenEnabled true` on the running node: it reconnects
                   on its own ("the command surface changed" in its log) and the gateway holds the
                   widened surface (pending-reapproval, screen.snapshot and screen.record among the
                   pendingDeclaredCommands); `openclaw nodes approve`; node.list and `openclaw
                   nodes status --json` then list all five capture commands
  snapshot-via-cli `openclaw nodes invoke ... screen.snapshot`: the payload has exactly upstream's
                   keys {format, width, height, base64, screenIndex, capturedAtMs}; png: 640x480,
                   every decoded pixel the root colour; jpeg (quality 90): every pixel within
                   JPEG_TOLERANCE of it; maxWidth 320: a 320x240 png of the same colour;
                   capturedAtMs within the call
  record-via-cli   `openclaw nodes invoke ... screen.record {durationMs 1000, fps 10}`: upstream's
                   keys {format mp4, base64, durationMs, fps, screenIndex, hasAudio}, an ftyp box,
                   ffprobe h264 640x480 about 1 s, its first frame the root colour (but for the
                   pointer x11grab draws at the centre), payloadJSON under
                   the gateway's 25 MiB frame limit (server-constants MAX_PAYLOAD_BYTES); `openclaw
                   nodes screen record --no-audio --out F --json` writes an mp4 ffprobe reads, and
                   so does its default (includeAudio true, what the agent tool sends too): answered
                   video only (hasAudio false), not refused
  camera-list      `openclaw nodes invoke ... camera.list`: payload {devices: [], cameras: []} (no
                   camera here; the node hosts' shape and the Windows node's);
                   `openclaw nodes camera list --json` answers [] (it reads payload.devices)
  camera-snap-no-device  `openclaw nodes camera snap` (also with the CLI's `--quality 0.5`, the 0..1
                   scale the agent tool sends too) and `camera clip --no-audio`: exit 1 with
                   UNAVAILABLE "no camera found ..." at the CLI; `nodes invoke camera.snap {}` the same
  disabled-after-on `clawmcp settings set NodeScreenEnabled false` again: our node reconnects with
                   the narrower surface (node.list without screen.*, still approved), and `openclaw
                   nodes invoke ... screen.snapshot` is refused; who refused is recorded
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import select
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
from checks import Failed, expect, report, run_check, suite_args, wait_for  # noqa: E402  (the script's own directory)
from harness import Gateway  # noqa: E402

sys.path.insert(0, str(HERE.parent / "lib"))
from png_rows import png_rgb_pixels  # noqa: E402  (stdlib only, shared with e2e/lib/node_checks.py)

OURS = "clawmcp-e2e-capture-node"
WIDTH, HEIGHT = 640, 480
CAMERA = ("camera.list", "camera.snap", "camera.clip")
SCREEN = ("screen.snapshot", "screen.record")
# What the gateway must be told to admit (gateway.nodes.commands.allow); see the header.
ALLOW = ["camera.list", "camera.snap", "camera.clip", "screen.record"]
SNAPSHOT_KEYS = {"format", "width", "height", "base64", "screenIndex", "capturedAtMs"}
RECORD_KEYS = {"format", "base64", "durationMs", "fps", "screenIndex", "hasAudio"}
# The gateway's WebSocket frame limit (dist server-constants: MAX_PAYLOAD_BYTES = 26214400).
FRAME_LIMIT = 25 * 1024 * 1024
# Largest per-channel difference allowed after a lossy round trip of a flat colour.
JPEG_TOLERANCE = 6
VIDEO_TOLERANCE = 10
# Half the side of the square around the screen centre where Xvfb's pointer may be drawn.
POINTER_BOX = 32
WAIT_S = 60


def ffmpeg_rgb(data: bytes, what: str, first_frame: bool = False) -> bytes:
    """The pixels of an image (or a video's first frame) as rgb24, decoded by ffmpeg."""
    done = subprocess.run(["ffmpeg", "-v", "error", "-i", "pipe:0", *(["-frames:v", "1"] if first_frame else []),
                           "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"], input=data, capture_output=True, timeout=60)
    expect(done.returncode == 0, f"ffmpeg could not decode the {what}: {done.stderr.decode(errors='replace')[-400:]}")
    return done.stdout


def worst_difference(pixels: bytes, rgb: tuple[int, int, int]) -> int:
    """The largest per-channel distance of any pixel from rgb."""
    worst = 0
    for channel in range(3):
        values = pixels[channel::3]
        worst = max(worst, abs(max(values) - rgb[channel]), abs(min(values) - rgb[channel]))
    return worst


def ffprobe(path: Path) -> dict[str, Any]:
    done = subprocess.run(["ffprobe", "-v", "error", "-show_entries",
                           "format=duration,format_name:stream=codec_name,width,height,nb_frames,avg_frame_rate",
                           "-of", "json", str(path)], capture_output=True, text=True, timeout=60)
    expect(done.returncode == 0, f"ffprobe {path}: {done.stderr[-400:]}")
    return json.loads(done.stdout)


def trimmed(value: Any) -> Any:
    """A JSON value with every long base64/payloadJSON string cut to its head and length."""
    if isinstance(value, dict):
        return {k: (f"{v[:24]}...({len(v)} chars)" if k in ("base64", "payloadJSON") and isinstance(v, str) and len(v) > 60
                    else trimmed(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [trimmed(v) for v in value]
    return value


class Cli:
    """One answer of the real CLI: exit status, its --json output parsed (or None), stderr."""

    def __init__(self, argv: list[str], rc: int, stdout: str, stderr: str):
        self.argv, self.rc, self.stdout, self.stderr = argv, rc, stdout, stderr
        text = stdout.strip()
        starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
        try:
            self.json: Any = json.loads(text[min(starts):]) if starts else None
        except json.JSONDecodeError:
            self.json = None

    def error_message(self) -> str:
        """The failure text the CLI printed ({ok: false, error: {message}} with --json)."""
        if isinstance(self.json, dict) and isinstance(self.json.get("error"), dict):
            return str(self.json["error"].get("message") or "")
        return (self.stderr or self.stdout).strip()

    def __str__(self) -> str:
        return f"`openclaw {' '.join(self.argv)}` exited {self.rc}: {json.dumps(trimmed(self.json))[:800] if self.json is not None else ''} {self.stderr[-600:]}"


def refused_by(message: str) -> str:
    """Who refused a screen.snapshot, from the text that reached the CLI."""
    if "disabled by user setting" in message:
        return "our node (disabled by user setting)"
    if "not in the allowlist" in message or "not declared" in message or "did not declare" in message:
        return "the gateway (undeclared)"
    raise Failed(f"neither the gateway's undeclared-command refusal nor ours: {message!r}")


class Suite:
    def __init__(self, args: argparse.Namespace):
        self.gateway = Gateway.from_env_file(Path(args.gateway_env))
        self.bin = args.clawmcp_bin
        self.artifacts = Path(args.artifacts)
        self.artifacts.mkdir(parents=True, exist_ok=True)
        (self.artifacts / "cli").mkdir(exist_ok=True)
        self.rows: list[tuple[str, bool, str]] = []
        self.done: set[str] = set()
        self.data = self.artifacts / "ours-data"
        self.cli_home = self.artifacts / "cli-home"
        self.ours: subprocess.Popen | None = None
        self.xvfb: subprocess.Popen | None = None
        self.display = ""
        self.rgb = (secrets.randbelow(256), secrets.randbelow(256), secrets.randbelow(256))
        self.colour = "#%02x%02x%02x" % self.rgb
        self.ours_id = ""
        self.calls = 0

    # -- plumbing ------------------------------------------------------------------------------
    def check(self, name: str, body: Callable[[], str | None], needs: tuple[str, ...] = ()) -> None:
        run_check(self.rows, self.done, name, body, needs, timed=True)

    def cli_env(self) -> dict[str, str]:
        """The CLI's private environment; its config names the gateway (gateway.remote), so
        neither --url nor the token is on its command line."""
        state = self.cli_home / "state"
        config = state / "openclaw.json"
        if not config.exists():
            state.mkdir(parents=True, mode=0o700)
            config.write_text(json.dumps({
                "logging": {"file": str(self.artifacts / "openclaw-cli.log")},
                "gateway": {"mode": "remote", "remote": {"url": self.gateway.url,
                                                         "token": self.gateway.token_file.read_text().strip()}}}))
            config.chmod(0o600)
        return {
            "PATH": f"{Path(self.gateway.node).parent}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": str(self.cli_home),
            "OPENCLAW_HOME": str(self.cli_home),
            "OPENCLAW_STATE_DIR": str(state),
            "OPENCLAW_CONFIG_PATH": str(config),
            "OPENCLAW_OFFLINE": "1",
            "OPENCLAW_NO_AUTO_UPDATE": "1",
            "OPENCLAW_NO_RESPAWN": "1",
            "OPENCLAW_DISABLE_BONJOUR": "1",
        }

    def openclaw(self, *argv: str, timeout_s: int = 120) -> Cli:
        """The real openclaw CLI (--json); every answer is kept, base64 trimmed, in run/cli/."""
        command = [*argv, "--json"]
        try:
            done = subprocess.run([self.gateway.node, self.gateway.openclaw_entry, *command], env=self.cli_env(),
                                  capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise Failed(f"`openclaw {' '.join(command)}` did not finish within {timeout_s} s") from None
        answer = Cli(command, done.returncode, done.stdout, done.stderr)
        self.calls += 1
        name = "-".join(a for a in argv[:3] if not a.startswith("-"))
        (self.artifacts / "cli" / f"{self.calls:02d}-{name}.json").write_text(json.dumps(
            {"argv": command, "rc": done.returncode, "json": trimmed(answer.json), "stderr": done.stderr[-2000:]}, indent=2))
        return answer

    def cli_ok(self, *argv: str, timeout_s: int = 120) -> Any:
        answer = self.openclaw(*argv, timeout_s=timeout_s)
        expect(answer.rc == 0 and answer.json is not None, str(answer))
        return answer.json

    def invoke(self, command: str, params: dict[str, Any], invoke_timeout_ms: int = 15000) -> Cli:
        return self.openclaw("nodes", "invoke", "--node", self.ours_id, "--command", command, "--params",
                             json.dumps(params), "--invoke-timeout", str(invoke_timeout_ms))

    def node_payload(self, command: str, params: dict[str, Any], invoke_timeout_ms: int = 15000) -> tuple[dict[str, Any], dict[str, Any]]:
        """`openclaw nodes invoke` that must succeed: (the node's payload, the whole answer)."""
        answer = self.invoke(command, params, invoke_timeout_ms)
        expect(answer.rc == 0 and isinstance(answer.json, dict) and answer.json.get("ok") is True, str(answer))
        payload = answer.json.get("payload")
        expect(isinstance(payload, dict), f"{command}: payload {trimmed(payload)}")
        return payload, answer.json

    def node_entry(self) -> dict[str, Any] | None:
        for node in self.gateway.rpc("node.list", {}).get("nodes", []):
            if node.get("displayName") == OURS:
                return node
        return None

    def status(self) -> dict[str, Any]:
        done = subprocess.run([self.bin, "node", "status", "--json", "--data-dir", str(self.data)], capture_output=True,
                              text=True, timeout=30)
        return json.loads(done.stdout)

    def setting(self, key: str, value: str) -> None:
        done = subprocess.run([self.bin, "settings", "--data-dir", str(self.data), "set", key, value], capture_output=True,
                              text=True, timeout=30)
        expect(done.returncode == 0, f"clawmcp settings set {key} {value}: {done.stderr[-400:]}")

    def node_log(self) -> str:
        return (self.artifacts / "clawmcp-node.log").read_text(errors="replace")

    def approve_pending(self, what: str) -> str:
        """The pending request of ours in `openclaw nodes pending`, approved with the real CLI."""
        pending = self.cli_ok("nodes", "pending")
        request = next((r for r in pending if r.get("nodeId") == self.ours_id), None)
        expect(request is not None, f"{what}: ours is not in `openclaw nodes pending`: {json.dumps(pending)[:600]}")
        self.cli_ok("nodes", "approve", request["requestId"])
        return request["requestId"]

    def cli_status_commands(self) -> list[str]:
        listed = self.cli_ok("nodes", "status")
        entry = next((n for n in listed.get("nodes", []) if n.get("nodeId") == self.ours_id), None)
        expect(entry is not None, f"ours is not in `openclaw nodes status --json`: {json.dumps(listed)[:600]}")
        return entry.get("commands") or []

    def refusal(self) -> tuple[str, str, dict[str, Any]]:
        """screen.snapshot through the CLI, which must fail: (who refused, the CLI's text, the
        gateway's error codes for the same call as a node.invoke RPC)."""
        answer = self.invoke("screen.snapshot", {"format": "png"})
        expect(answer.rc != 0, f"screen.snapshot was not refused: {answer}")
        message = answer.error_message()
        try:
            self.gateway.rpc("node.invoke", {"nodeId": self.ours_id, "command": "screen.snapshot", "params": {},
                                             "idempotencyKey": str(uuid.uuid4()), "timeoutMs": 15000})
            raise Failed("node.invoke screen.snapshot was not refused")
        except RuntimeError as err:
            text = str(err)
            error = json.loads(text[text.find("{"):]) if "{" in text else {"message": text}
        details = error.get("details") or {}
        codes = {"code": error.get("code"), "message": error.get("message"),
                 "nodeError": details.get("nodeError"), "nodeCommandDispatched": details.get("nodeCommandDispatched")}
        return refused_by(message), message, codes

    # -- processes -----------------------------------------------------------------------------
    def start_xvfb(self) -> None:
        log = open(self.artifacts / "xvfb.log", "w")  # noqa: SIM115 - lives as long as Xvfb
        self.xvfb = subprocess.Popen(["Xvfb", "-displayfd", "1", "-screen", "0", f"{WIDTH}x{HEIGHT}x24", "-nolisten", "tcp",
                                      "-noreset"], stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
        assert self.xvfb.stdout is not None
        ready, _, _ = select.select([self.xvfb.stdout], [], [], 30)
        number = self.xvfb.stdout.readline().decode().strip() if ready else ""
        if not number.isdigit():
            raise Failed(f"Xvfb gave no display number within 30 s: {(self.artifacts / 'xvfb.log').read_text()[-400:]}")
        self.display = f":{number}"
        done = subprocess.run(["xsetroot", "-display", self.display, "-solid", self.colour], capture_output=True, text=True,
                              timeout=30)
        if done.returncode != 0:
            raise Failed(f"xsetroot {self.colour} on {self.display}: {done.stderr}")

    def start_ours(self) -> None:
        self.data.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.setting("NodeCameraEnabled", "true")
        self.setting("NodeScreenEnabled", "false")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        home = self.artifacts / "ours-home"
        home.mkdir(exist_ok=True)
        log = open(self.artifacts / "clawmcp-node.log", "w")  # noqa: SIM115 - lives as long as the node
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "RUST_LOG": "info",
               "DISPLAY": self.display}
        self.ours = subprocess.Popen(
            [self.bin, "node", "--port", str(port), "--data-dir", str(self.data), "--gateway-url", self.gateway.url,
             "--gateway-token-file", str(self.gateway.token_file), "--name", OURS],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)

    def stop(self) -> list[str]:
        problems = []
        for name, process in (("clawmcp node", self.ours), ("Xvfb", self.xvfb)):
            if process is None or process.poll() is not None:
                continue
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                problems.append(f"{name} (pid {process.pid}) ignored SIGTERM for 20 s; killed")
                process.kill()
                process.wait(timeout=10)
        if self.ours is not None and self.ours.returncode not in (0, None):
            problems.append(f"clawmcp node exited with status {self.ours.returncode}")
        return problems

    # -- checks --------------------------------------------------------------------------------
    def gateway_allow(self) -> str:
        try:
            line = self.gateway.allow_node_commands(ALLOW)
        except RuntimeError as error:
            raise Failed(str(error)) from None
        return f"{line.split('[reload] ', 1)[-1]}: allow {ALLOW}"

    def declared_off(self) -> str:
        entry = wait_for("our node connected and pending in node.list",
                         lambda: (e := self.node_entry()) and e.get("connected") and e.get("pendingRequestId") and e, WAIT_S)
        self.ours_id = entry["nodeId"]
        pending = entry.get("pendingDeclaredCommands") or []
        expect(all(c in pending for c in CAMERA), f"pendingDeclaredCommands lacks camera commands: {pending}")
        expect(not any(c in pending for c in SCREEN), f"screen commands declared while NodeScreenEnabled is off: {pending}")
        status = self.status()
        ours_declared = (status.get("gateway") or {}).get("commands") or []
        expect(not any(c in ours_declared for c in SCREEN), f"our status declares {ours_declared}")
        unavailable = {u.get("command"): u.get("reason") for u in status.get("tools", {}).get("unavailable") or []}
        expect(all("NodeScreenEnabled" in (unavailable.get(c) or "") for c in SCREEN),
               f"our status does not say why screen.* is off: {unavailable}")
        request = self.approve_pending("screen off")
        wait_for("our surface approved", lambda: (e := self.node_entry()) and e.get("approvalState") == "approved"
                 and all(c in (e.get("commands") or []) for c in CAMERA), 30)
        cli = self.cli_status_commands()
        expect(all(c in cli for c in CAMERA) and not any(c in cli for c in SCREEN), f"`openclaw nodes status` commands {cli}")
        return (f"node {self.ours_id[:12]}…: declared {sorted(pending)} (no screen.*; ours says "
                f"{unavailable['screen.snapshot']!r}); request {request[:8]}… approved with the CLI; `nodes status` {len(cli)} commands")

    def disabled_refusal(self) -> str:
        who, message, codes = self.refusal()
        return f"refused by {who}: CLI said {message!r}; node.invoke error {json.dumps(codes)}"

    def declared_on(self) -> str:
        rejoins_before = self.node_log().count("the command surface changed")
        started = time.monotonic()
        self.setting("NodeScreenEnabled", "true")
        entry = wait_for("the gateway to hold our widened surface",
                         lambda: (e := self.node_entry()) and e.get("connected")
                         and all(c in (e.get("pendingDeclaredCommands") or []) for c in SCREEN) and e, 30)
        took = time.monotonic() - started
        expect(self.node_log().count("the command surface changed") > rejoins_before,
               "our node's log has no reconnect for the changed surface")
        state = entry.get("approvalState")
        expect(state == "pending-reapproval", f"approvalState {state!r} with the widened surface pending")
        # Until the operator approves, the approved surface stays what it was.
        expect(not any(c in (entry.get("commands") or []) for c in SCREEN), f"screen admitted before approval: {entry.get('commands')}")
        request = self.approve_pending("screen on")
        final = wait_for("all five capture commands admitted",
                         lambda: (e := self.node_entry()) and e.get("approvalState") == "approved"
                         and all(c in (e.get("commands") or []) for c in CAMERA + SCREEN) and e, 30)
        cli = self.cli_status_commands()
        expect(all(c in cli for c in CAMERA + SCREEN), f"`openclaw nodes status` commands {cli}")
        return (f"our node reconnected and the gateway held {sorted(set(entry['pendingDeclaredCommands']) - set(entry.get('commands') or []))} "
                f"as {state} {took:.1f} s after the setting; request {request[:8]}… approved; node.list caps {final.get('caps')}")

    def snapshot_via_cli(self) -> str:
        shown = []
        for params, size in (({"format": "png", "includePointer": False}, (WIDTH, HEIGHT)),
                             ({"format": "jpeg", "quality": 90, "includePointer": False}, (WIDTH, HEIGHT)),
                             ({"format": "png", "maxWidth": 320, "includePointer": False}, (320, 240))):
            before = int(time.time() * 1000)
            payload, _ = self.node_payload("screen.snapshot", params)
            after = int(time.time() * 1000)
            what = f"screen.snapshot {json.dumps(params)}"
            expect(set(payload) == SNAPSHOT_KEYS, f"{what}: keys {sorted(payload)}, want {sorted(SNAPSHOT_KEYS)}")
            expect(payload["format"] == params["format"] and (payload["width"], payload["height"]) == size
                   and payload["screenIndex"] == 0, f"{what}: {trimmed(payload)}")
            expect(before - 1000 <= payload["capturedAtMs"] <= after, f"{what}: capturedAtMs {payload['capturedAtMs']} not in [{before}, {after}]")
            data = base64.b64decode(payload["base64"], validate=True)
            if params["format"] == "png":
                width, height, rows = png_rgb_pixels(data)
                expect((width, height) == size, f"{what}: decoded {width}x{height}")
                worst = worst_difference(b"".join(rows), self.rgb)
                expect(worst == 0, f"{what}: a pixel differs from the root {self.colour} by {worst}")
            else:
                expect(data[:3] == b"\xff\xd8\xff", f"{what}: not a JPEG: {data[:4]!r}")
                pixels = ffmpeg_rgb(data, "jpeg")
                expect(len(pixels) == size[0] * size[1] * 3, f"{what}: {len(pixels)} decoded bytes")
                worst = worst_difference(pixels, self.rgb)
                expect(worst <= JPEG_TOLERANCE, f"{what}: a pixel differs from the root {self.colour} by {worst} (> {JPEG_TOLERANCE})")
            shown.append(f"{params['format']}{' maxWidth 320' if 'maxWidth' in params else ''} {size[0]}x{size[1]} "
                         f"{len(data)} B worst {worst}")
        return f"root {self.colour}: " + "; ".join(shown)

    def record_via_cli(self) -> str:
        payload, whole = self.node_payload("screen.record", {"durationMs": 1000, "fps": 10}, 30000)
        expect(set(payload) == RECORD_KEYS, f"screen.record keys {sorted(payload)}, want {sorted(RECORD_KEYS)}")
        expect(payload["format"] == "mp4" and payload["durationMs"] == 1000 and payload["fps"] == 10
               and payload["screenIndex"] == 0 and payload["hasAudio"] is False, f"screen.record {trimmed(payload)}")
        data = base64.b64decode(payload["base64"], validate=True)
        expect(len(data) > 0 and data[4:8] == b"ftyp", f"no ftyp box: {data[:12]!r}")
        frame = len(whole.get("payloadJSON") or json.dumps(payload))
        expect(frame < FRAME_LIMIT, f"payloadJSON is {frame} B, over the gateway's {FRAME_LIMIT} B frame limit")
        clip = self.artifacts / "record-invoke.mp4"
        clip.write_bytes(data)
        probe = ffprobe(clip)
        stream = (probe.get("streams") or [{}])[0]
        duration = float((probe.get("format") or {}).get("duration") or 0)
        expect(stream.get("codec_name") == "h264" and (stream.get("width"), stream.get("height")) == (WIDTH, HEIGHT)
               and 0.8 <= duration <= 1.3, f"ffprobe {probe}")
        # x11grab draws the pointer (screen.record has no includePointer): Xvfb puts it at the
        # centre, so every pixel outside POINTER_BOX around it must be the root colour.
        pixels = ffmpeg_rgb(data, "mp4", first_frame=True)
        expect(len(pixels) == WIDTH * HEIGHT * 3, f"the clip's first frame has {len(pixels)} bytes")
        off = [(i // 3 % WIDTH, i // 3 // WIDTH) for i in range(0, len(pixels), 3)
               if max(abs(pixels[i + c] - self.rgb[c]) for c in range(3)) > VIDEO_TOLERANCE]
        stray = [(x, y) for x, y in off if abs(x - WIDTH // 2) > POINTER_BOX or abs(y - HEIGHT // 2) > POINTER_BOX]
        expect(not stray, f"the clip's first frame: {len(stray)} pixels away from the pointer differ from the root "
                          f"{self.colour} by more than {VIDEO_TOLERANCE}, e.g. {stray[:5]}")
        out = self.artifacts / "record-cli.mp4"
        written = self.cli_ok("nodes", "screen", "record", "--node", self.ours_id, "--duration", "1000", "--no-audio",
                              "--out", str(out))
        file = written.get("file") or {}
        expect(file.get("path") == str(out) and out.stat().st_size > 0 and out.read_bytes()[4:8] == b"ftyp",
               f"`nodes screen record --no-audio`: {written}")
        cli_probe = ffprobe(out)
        # The CLI's (and the agent tool's) default asks for audio: answered, video only.
        default_out = self.artifacts / "record-default.mp4"
        default = self.cli_ok("nodes", "screen", "record", "--node", self.ours_id, "--duration", "1000",
                              "--out", str(default_out))
        expect(default_out.stat().st_size > 0 and default_out.read_bytes()[4:8] == b"ftyp"
               and (default.get("file") or {}).get("hasAudio") in (False, None),
               f"`nodes screen record` (includeAudio true): {default}")
        said = f"wrote {default_out.stat().st_size} B, {json.dumps(default.get('file') or default)[:160]}"
        return (f"invoke: {len(data)} B mp4, ffprobe h264 {stream.get('width')}x{stream.get('height')} {duration:.2f} s "
                f"{stream.get('nb_frames')} frames, first frame the root colour but {len(off)} pointer pixels, payloadJSON {frame} B; `nodes screen "
                f"record --no-audio` wrote {out.stat().st_size} B ({(cli_probe.get('format') or {}).get('duration')} s) "
                f"{json.dumps(file)}; without --no-audio (includeAudio true): {said}")

    def camera_list(self) -> str:
        payload, _ = self.node_payload("camera.list", {})
        # Both upstream shapes: `devices` (the node hosts', what the CLI reads), `cameras` (Windows').
        expect(payload == {"devices": [], "cameras": []}, f"camera.list payload {payload}")
        cli = self.cli_ok("nodes", "camera", "list", "--node", self.ours_id)
        expect(cli == [], f"`nodes camera list --json`: {cli}")
        return f"invoke payload {json.dumps(payload)}; `nodes camera list --json` {json.dumps(cli)}"

    def camera_snap_no_device(self) -> str:
        seen = []
        for argv in (("nodes", "camera", "snap", "--node", self.ours_id),
                     # The CLI's 0..1 quality scale reaches the device check (not refused as an argument).
                     ("nodes", "camera", "snap", "--node", self.ours_id, "--quality", "0.5"),
                     ("nodes", "camera", "clip", "--node", self.ours_id, "--duration", "500", "--no-audio"),
                     ("nodes", "invoke", "--node", self.ours_id, "--command", "camera.snap", "--params", "{}")):
            answer = self.openclaw(*argv)
            message = answer.error_message()
            expect(answer.rc != 0 and "no camera found" in message and "UNAVAILABLE" in message, f"{answer}")
            seen.append(f"{' '.join(argv[1:3]) if argv[1] == 'camera' else 'invoke camera.snap'}: {message[:90]!r}")
        return "; ".join(seen)

    def disabled_after_on(self) -> str:
        rejoins_before = self.node_log().count("the command surface changed")
        self.setting("NodeScreenEnabled", "false")
        entry = wait_for("node.list without screen.*",
                         lambda: (e := self.node_entry()) and e.get("connected")
                         and not any(c in (e.get("commands") or []) for c in SCREEN) and e, 30)
        expect(self.node_log().count("the command surface changed") > rejoins_before, "no reconnect in our node's log")
        expect(entry.get("approvalState") == "approved", f"a narrower surface left it {entry.get('approvalState')!r}")
        who, message, codes = self.refusal()
        return f"reconnected, still approved; refused by {who}: CLI said {message!r}; node.invoke error {json.dumps(codes)}"

    def run(self) -> int:
        try:
            self.start_xvfb()
            self.check("gateway-allow", self.gateway_allow)
            self.start_ours()
            self.check("declared-off", self.declared_off, ("gateway-allow",))
            self.check("disabled-refusal", self.disabled_refusal, ("declared-off",))
            self.check("declared-on", self.declared_on, ("declared-off",))
            self.check("snapshot-via-cli", self.snapshot_via_cli, ("declared-on",))
            self.check("record-via-cli", self.record_via_cli, ("declared-on",))
            self.check("camera-list", self.camera_list, ("declared-off",))
            self.check("camera-snap-no-device", self.camera_snap_no_device, ("declared-off",))
            self.check("disabled-after-on", self.disabled_after_on, ("declared-on",))
        except Failed as err:
            self.rows.append(("setup", False, str(err)))
        finally:
            for problem in self.stop():
                self.rows.append(("stop", False, problem))
        return report(self.rows, "node-capture", self.artifacts / "node-capture.json")


def main() -> int:
    return Suite(suite_args(__doc__)).run()


if __name__ == "__main__":
    sys.exit(main())
