"""Checks of `clawmcp node` shared by the Python SDK drivers (e2e/node/python_sdk.py over
HTTP, e2e/stdio/python_stdio.py through the `clawmcp call --stdio` relay): whichever way the
SDK reaches the node, the same tool answers and the same cancellation must hold.

A driver imports this after putting e2e/lib on sys.path.
"""

from __future__ import annotations

import json
import os
import secrets
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.client.client import Client

from png_rows import png_rgb_pixels  # stdlib only, shared with e2e/gateway/node_capture.py

EXPECTATIONS = json.loads((Path(__file__).resolve().parent.parent / "node" / "expectations.json").read_text())
# Bound for processes to appear or disappear: generous so a loaded CI machine cannot flake,
# far below the sleep length so a leaked process is always caught.
PROCESS_WAIT_SECONDS = 15.0
CALL_TIMEOUT_SECONDS = 60.0


class CheckFailed(Exception):
    """An assertion about the node's behaviour did not hold."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def tool_payload(result: Any) -> Any:
    """The node answers tools/call with one text content block holding compact JSON."""
    expect(not result.is_error, f"tool returned isError: {result.content!r}")
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    expect(len(texts) == 1, f"expected one text content block, got {result.content!r}")
    return json.loads(texts[0])


def pids_with_args(*needles: str) -> dict[int, list[str]]:
    """Live processes whose argv contains every needle (zombies have an empty cmdline)."""
    found: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = [arg.decode(errors="replace") for arg in (entry / "cmdline").read_bytes().split(b"\0") if arg]
        except OSError:
            continue
        if all(any(needle in arg for arg in argv) for needle in needles):
            found[int(entry.name)] = argv
    return found


async def wait_for(predicate: Callable[[], bool], what: str) -> None:
    with anyio.move_on_after(PROCESS_WAIT_SECONDS):
        while not predicate():
            await anyio.sleep(0.05)
        return
    raise CheckFailed(f"{what} (waited {PROCESS_WAIT_SECONDS:.0f}s)")


class CheckRunner:
    """Runs named checks, prints `PASS <name>` or `FAIL <name>: <why>`, and keeps the score."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.failures: list[str] = []
        self.passed = 0

    async def check(self, name: str, body: Callable[[], Awaitable[None]]) -> None:
        try:
            await body()
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none is fatal to the run
            detail = str(exc) if isinstance(exc, CheckFailed) else "".join(traceback.format_exception(exc)).strip()
            self.fail(name, detail)
        else:
            self.passed += 1
            print(f"PASS {name}", flush=True)

    def fail(self, name: str, detail: str) -> None:
        self.failures.append(name)
        print(f"FAIL {name}: {detail}", flush=True)

    def summary(self) -> int:
        print(f"{self.label}: {self.passed} passed, {len(self.failures)} failed", flush=True)
        return 1 if self.failures else 0


async def tools_list(client: Client) -> None:
    """Every required tool is listed with a description and an object schema."""
    listed = {tool.name: tool for tool in (await client.list_tools(cache_mode="bypass")).tools}
    missing = [name for name in EXPECTATIONS["requiredTools"] if name not in listed]
    expect(not missing, f"tools/list lacks {missing}; got {sorted(listed)}")
    for name in EXPECTATIONS["requiredTools"]:
        tool = listed[name]
        expect(bool(tool.description and tool.description.strip()), f"{name}: empty description")
        expect(tool.input_schema.get("type") == "object", f"{name}: inputSchema {tool.input_schema!r}")


async def system_which(client: Client) -> None:
    """system.which {bins:["sh"]} answers an absolute path to an executable."""
    payload = tool_payload(await client.call_tool("system.which", {"bins": ["sh"]}))
    path = payload.get("bins", {}).get("sh")
    expect(isinstance(path, str) and os.path.isabs(path), f"system.which sh: {payload!r}")
    expect(os.access(path, os.X_OK), f"system.which sh -> {path} is not executable")


async def cancel_long_system_run(client: Client) -> str:
    """Starts a long system.run (sh with a sleep grandchild), cancels it with an anyio cancel
    scope once the grandchild runs, and waits until the whole process tree is gone. Returns the
    marker that names the call (its unique fractional sleep length) for further checks."""
    marker = f"{EXPECTATIONS['cancelSleepSeconds']}.{secrets.randbelow(10**6):06d}"
    command = ["sh", "-c", f"sleep {marker} & wait"]
    completed: list[Any] = []

    async def call() -> None:
        completed.append(await client.call_tool("system.run", {"command": command}))

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(call)
            await wait_for(
                lambda: any(argv[0].endswith("sleep") for argv in pids_with_args(marker).values()),
                f"system.run never started the sleep grandchild ({marker}); completed={completed!r}",
            )
            started = pids_with_args(marker)
            scope.cancel()
    expect(scope.cancelled_caught and not completed, f"call was not abandoned: completed={completed!r}")
    await wait_for(
        lambda: not pids_with_args(marker),
        f"process tree survived cancellation: was {started}, still {pids_with_args(marker)}",
    )
    return marker


async def screen_record(client: Client) -> None:
    """screen.record answers an embedded resource the SDK types as such (a blob resource,
    mimeType video/mp4, an MP4 `ftyp` box, as many bytes as the metadata says) beside JSON
    metadata text that carries no base64."""
    import base64

    result = await client.call_tool("screen.record", {"durationMs": 500, "fps": 5})
    expect(not result.is_error, f"screen.record failed: {result.content!r}")
    embedded = [block for block in result.content if getattr(block, "type", None) == "resource"]
    expect(len(embedded) == 1 and type(embedded[0]).__name__ == "EmbeddedResource", f"expected one EmbeddedResource: {result.content!r}")
    resource = embedded[0].resource
    expect(type(resource).__name__ == "BlobResourceContents", f"expected a blob resource: {type(resource).__name__}")
    mime = getattr(resource, "mime_type", None) or getattr(resource, "mimeType", None)
    expect(mime == "video/mp4", f"mimeType {mime!r}")
    video = base64.b64decode(resource.blob)
    expect(video[4:8] == b"ftyp", f"not an MP4: {video[:12]!r}")
    meta = tool_payload(result)
    expect(meta["bytes"] == len(video) and meta["format"] == "mp4", f"metadata {meta!r} for {len(video)} bytes")
    expect(resource.blob not in json.dumps(meta), "base64 in the text block")


async def screen_snapshot(client: Client) -> None:
    """screen.snapshot answers an image block the SDK types as image content (PNG, the
    expected size, every pixel the white root e2e/run.sh's Xvfb shows) beside JSON metadata
    text that carries no base64."""
    import base64

    want = EXPECTATIONS["screenshot"]
    result = await client.call_tool("screen.snapshot", {"includePointer": False})
    expect(not result.is_error, f"screen.snapshot failed: {result.content!r}")
    images = [block for block in result.content if getattr(block, "type", None) == "image"]
    expect(len(images) == 1 and type(images[0]).__name__ == "ImageContent", f"expected one ImageContent: {result.content!r}")
    mime = getattr(images[0], "mime_type", None) or getattr(images[0], "mimeType", None)
    expect(mime == "image/png", f"mimeType {mime!r}")
    meta = tool_payload(result)
    expect((meta["width"], meta["height"]) == (want["width"], want["height"]), f"metadata {meta!r}")
    expect(images[0].data not in json.dumps(meta), "base64 in the text block")
    width, height, rows = png_rgb_pixels(base64.b64decode(images[0].data))
    expect((width, height) == (want["width"], want["height"]), f"decoded {width}x{height}")
    white = bytes(want["rgb"]) * width
    expect(all(row == white for row in rows), "not every pixel is the white root Xvfb shows")
