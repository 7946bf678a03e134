"""Unit tests for the comparison rules of serve_compat.py (no gateway needed).

The self-check (`run.sh --self-check`, two real bridges) proves the comparison is not too
strict; these prove it is strict enough: each kind of difference a broken bridge could show
is reported. Run: python3 -m unittest discover -s e2e/gateway -p 'test_*.py'
"""

from __future__ import annotations

import json
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serve_compat import split_text_json, structural_diff  # noqa: E402


def text_result(summary: str, payload: object) -> dict:
    return {"content": [{"type": "text", "text": f"{summary}\n\n{json.dumps(payload, indent=2)}"}]}


class StructuralDiff(unittest.TestCase):
    def test_identical_answers_have_no_diff(self) -> None:
        answer = {"result": {"events": [{"cursor": 1, "text": "a"}], "next_cursor": 1}, "id": 3}
        self.assertEqual(structural_diff(answer, json.loads(json.dumps(answer))), [])

    def test_key_order_does_not_matter(self) -> None:
        self.assertEqual(structural_diff({"a": 1, "b": 2}, {"b": 2, "a": 1}), [])

    def test_missing_and_extra_keys_are_reported(self) -> None:
        diffs = structural_diff({"a": 1, "b": 2}, {"a": 1, "c": 2})
        self.assertEqual(diffs, ["$: key 'b' missing", "$: extra key 'c'"])

    def test_type_change_is_reported_even_for_equal_looking_values(self) -> None:
        self.assertEqual(len(structural_diff({"cursor": 1}, {"cursor": "1"})), 1)
        self.assertEqual(len(structural_diff({"event": None}, {"event": {}})), 1)
        self.assertEqual(len(structural_diff({"ok": True}, {"ok": 1})), 1)

    def test_int_and_float_are_both_json_numbers(self) -> None:
        self.assertEqual(structural_diff({"n": 3}, {"n": 3.0}), [])

    def test_value_change_is_reported_with_its_path(self) -> None:
        diffs = structural_diff({"result": {"events": [{"cursor": 1}]}}, {"result": {"events": [{"cursor": 2}]}})
        self.assertEqual(diffs, ["$.result.events[0].cursor: 1 vs 2"])

    def test_list_length_change_is_reported(self) -> None:
        self.assertEqual(structural_diff({"events": [1, 2]}, {"events": [1]}), ["$.events: 2 items vs 1"])

    def test_server_identity_values_are_exempt_but_not_their_types(self) -> None:
        ref = {"result": {"serverInfo": {"name": "openclaw", "version": "2026.9.6"}}}
        self.assertEqual(structural_diff(ref, {"result": {"serverInfo": {"name": "clawmcp", "version": "0.1.0"}}}), [])
        self.assertEqual(len(structural_diff(ref, {"result": {"serverInfo": {"name": "clawmcp", "version": 1}}})), 1)

    def test_exempt_key_names_are_not_exempt_elsewhere(self) -> None:
        # A tool named differently in tools/list must fail even though "name" is exempt in serverInfo.
        ref = {"result": {"tools": [{"name": "events_poll"}]}}
        cand = {"result": {"tools": [{"name": "events_pol"}]}}
        self.assertEqual(len(structural_diff(ref, cand)), 1)

    def test_candidate_may_add_annotations_to_tools_list_entries_only(self) -> None:
        tool = {"name": "events_poll", "description": "d", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "forbidden"}}
        hints = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
        ref = {"result": {"tools": [tool]}}
        self.assertEqual(structural_diff(ref, {"result": {"tools": [{**tool, "annotations": hints}]}}), [])
        # Not in the reference's place, not elsewhere in a result, and no other extra key.
        self.assertEqual(
            structural_diff({"result": {"tools": [{**tool, "annotations": hints}]}}, ref),
            ["$.result.tools[0]: key 'annotations' missing"],
        )
        self.assertEqual(
            structural_diff({"result": {"events": [{}]}}, {"result": {"events": [{"annotations": hints}]}}),
            ["$.result.events[0]: extra key 'annotations'"],
        )
        self.assertEqual(
            structural_diff(ref, {"result": {"tools": [{**tool, "title": "Poll"}]}}),
            ["$.result.tools[0]: extra key 'title'"],
        )

    def test_tools_list_names_descriptions_schemas_and_execution_still_compare_exactly(self) -> None:
        tool = {"name": "events_poll", "description": "d", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "forbidden"}}
        hints = {"readOnlyHint": True}
        ref = {"result": {"tools": [tool]}}
        for key, other in [("name", "events_pol"), ("description", "e"), ("inputSchema", {"type": "string"})]:
            cand = {"result": {"tools": [{**tool, key: other, "annotations": hints}]}}
            self.assertEqual(len(structural_diff(ref, cand)), 1, key)
        without_execution = {k: v for k, v in tool.items() if k != "execution"}
        cand = {"result": {"tools": [{**without_execution, "annotations": hints}]}}
        self.assertEqual(structural_diff(ref, cand), ["$.result.tools[0]: key 'execution' missing"])

    def test_text_with_json_tail_compares_the_json(self) -> None:
        ref = text_result("conversations: 1", {"conversations": [{"sessionKey": "agent:main:main"}]})
        cand = text_result("conversations: 1", {"conversations": [{"sessionKey": "agent:main:other"}]})
        diffs = structural_diff(ref, cand)
        self.assertEqual(diffs, ['$.content[0].text<json>.conversations[0].sessionKey: "agent:main:main" vs "agent:main:other"'])

    def test_text_summary_difference_is_reported(self) -> None:
        diffs = structural_diff(text_result("messages: 2", {"messages": []}), text_result("messages: 3", {"messages": []}))
        self.assertEqual(diffs, ["$.content[0].text: summary 'messages: 2' vs 'messages: 3'"])

    def test_same_json_with_other_layout_is_still_a_difference(self) -> None:
        payload = {"conversations": []}
        ref = {"text": "conversations: 0\n\n" + json.dumps(payload, indent=2)}
        cand = {"text": "conversations: 0\n\n" + json.dumps(payload)}
        self.assertEqual(structural_diff(ref, cand), ["$.text: same JSON, different text layout"])

    def test_plain_text_difference_is_reported(self) -> None:
        self.assertEqual(structural_diff({"text": "timeout"}, {"text": "time out"}), ['$.text: "timeout" vs "time out"'])


class SplitTextJson(unittest.TestCase):
    def test_summary_and_json(self) -> None:
        self.assertEqual(split_text_json('events: 1\n\n{"a": 1}'), ("events: 1", {"a": 1}))

    def test_plain_text_is_not_split(self) -> None:
        self.assertIsNone(split_text_json("attachments: 1"))
        self.assertIsNone(split_text_json("a\n\nnot json"))


if __name__ == "__main__":
    unittest.main()
