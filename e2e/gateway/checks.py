"""What the gateway e2e suites (node_mode, node_pairing, agent_turn) share to state and report
their checks: the failure type, bounded polling, one PASS/FAIL row per check with its
prerequisites, and the summary table plus its JSON copy. Python 3.11 stdlib only."""

from __future__ import annotations

import argparse
import json
import time
import traceback
from pathlib import Path
from typing import Any, Callable

# The default bound of a wait; suites with slower steps pass their own.
WAIT_S = 60

Rows = list[tuple[str, bool, str]]


class Failed(Exception):
    pass


def expect(condition: Any, message: str) -> None:
    if not condition:
        raise Failed(message)


def wait_for(what: str, probe: Callable[[], Any], timeout_s: float = WAIT_S, every_s: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except Exception as err:  # noqa: BLE001 - a probe that cannot answer yet is "not yet"
            last = err
        else:
            if last:
                return last
        time.sleep(every_s)
    raise Failed(f"timed out after {timeout_s:.0f} s waiting for {what} (last: {str(last)[:600]})")


def run_check(rows: Rows, done: set[str], name: str, body: Callable[[], str | None], needs: tuple[str, ...],
              timed: bool) -> None:
    """Runs `body` as check `name` unless a check it needs failed; one row either way. `timed`
    appends how long it took."""
    missing = [n for n in needs if n not in done]
    if missing:
        rows.append((name, False, f"not run: needs {', '.join(missing)}"))
        return
    started = time.monotonic()
    try:
        detail = body() or ""
        rows.append((name, True, f"{detail} [{time.monotonic() - started:.1f} s]" if timed else detail))
        done.add(name)
    except Exception as err:  # noqa: BLE001 - every failure becomes a FAIL row
        detail = str(err) if isinstance(err, Failed) else f"{type(err).__name__}: {err}\n{traceback.format_exc()}"
        rows.append((name, False, detail))


def report(rows: Rows, suite: str, json_path: Path) -> int:
    """Prints the PASS/FAIL table and the count, writes the rows as JSON; the exit status."""
    width = max(len(name) for name, _, _ in rows)
    for name, ok, detail in rows:
        print(f"{'PASS' if ok else 'FAIL'}  {name.ljust(width)}  {detail.splitlines()[0] if ok and detail else detail}")
    failed = sum(1 for _, ok, _ in rows if not ok)
    print(f"{suite}: {len(rows) - failed} passed, {failed} failed")
    json_path.write_text(json.dumps([{"check": n, "ok": ok, "detail": d} for n, ok, d in rows], indent=2))
    return 1 if failed else 0


def suite_args(doc: str) -> argparse.Namespace:
    """The arguments every gateway suite script takes from its .sh wrapper: --gateway-env (the
    gateway start.sh started), --clawmcp-bin, --artifacts. `doc` is the script's docstring."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--gateway-env", required=True)
    parser.add_argument("--clawmcp-bin", required=True)
    parser.add_argument("--artifacts", required=True)
    return parser.parse_args()
