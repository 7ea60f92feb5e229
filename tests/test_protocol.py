"""The decision protocol: JSON extraction, decision kinds, and every validation error text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vabench.agents.chat.protocol import (
    ACTION,
    CAMERA,
    MAX_DEPTH,
    MAX_STRING,
    STOP,
    TOOL,
    ProtocolError,
    extract_json,
    parse_decision,
)

ONE, TWO = ("right",), ("left", "right")
TOOLS = ("camera.history", "geometry.verify")
MOVE = {"action": "gripper.move_world", "axis": "z", "sign": "-", "distance_mm": 30}


def parse(obj_or_text, arms=ONE, camera=True, tools=TOOLS):
    text = obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text)
    return parse_decision(text, arms, camera, tools)


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(MOVE),
        "```json\n" + json.dumps(MOVE) + "\n```",
        "I will lower the gripper.\n```\n" + json.dumps(MOVE) + "\n```\nDone.",
        "Plan: lower. " + json.dumps(MOVE) + " That is all.",
        "  \n" + json.dumps(MOVE, indent=2) + "\n",
    ],
)
def test_json_is_found_fenced_or_bare(text):
    d = parse(text)
    assert d.kind == ACTION and d.label == "right.move_world z- 30mm"


def test_first_fenced_block_wins():
    text = "```json\n" + json.dumps(MOVE) + '\n```\n```json\n{"stop": true}\n```'
    assert parse(text).kind == ACTION


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("move down 3 cm", "no JSON object"),
        ("{not json}", "not valid JSON"),
        ("[1, 2]", "no JSON object"),
        ('```json\n[{"stop": true}]\n```', "must be an object"),
        ('{"distance_mm": NaN, "action": "gripper.move_world"}', "finite"),
        ('{"distance_mm": Infinity, "action": "gripper.move_world"}', "finite"),
        ('{"distance_mm": 1e999, "action": "gripper.move_world", "axis": "z", "sign": "+"}', "finite"),
        ("{}", 'must contain "action", "tool", or true "stop"'),
        ('{"reason": "thinking"}', 'must contain "action"'),
    ],
)
def test_malformed_replies_get_exact_errors(text, message):
    with pytest.raises(ProtocolError, match=message):
        parse(text)


def test_huge_and_deep_inputs_are_rejected():
    with pytest.raises(ProtocolError, match=f"at most {MAX_STRING}"):
        parse({**MOVE, "reason": "x" * (MAX_STRING + 1)})
    deep = {"action": "gripper.open"}
    node = deep
    for _ in range(MAX_DEPTH + 1):
        node["junk"] = {}
        node = node["junk"]
    with pytest.raises(ProtocolError, match="nested too deeply"):
        parse(deep)
    with pytest.raises(ProtocolError, match="fields; at most"):
        parse({"action": "gripper.open", **{f"k{i}": i for i in range(100)}})
    with pytest.raises(ProtocolError, match="characters long; at most"):
        parse("x" * 300_000)


def test_reason_is_kept_and_unknown_fields_ignored():
    d = parse({**MOVE, "reason": "cube is 3 cm below", "confidence": 0.9, "notes": ["a"]})
    assert d.reason == "cube is 3 cm below" and d.kind == ACTION
    with pytest.raises(ProtocolError, match="'reason' must be a string"):
        parse({**MOVE, "reason": 5})


def test_decision_kinds_in_order():
    assert parse({"stop": True, "action": "gripper.open"}).kind == STOP
    assert parse({"tool": "geometry.verify"}).kind == TOOL
    d = parse({"action": "camera.history", "args": {"step": 2}})  # an action naming a tool is a tool call
    assert (d.kind, d.tool, d.args) == (TOOL, "camera.history", {"step": 2})
    assert parse({"action": "camera.view_topdown"}).kind == CAMERA
    assert parse({"action": "camera.zoom_in.small"}).label == "camera.zoom_in"
    assert parse({"action": "gripper.close", "stop": False}).kind == ACTION


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"stop": "yes"}, "'stop' must be true"),
        ({"tool": ""}, "must be a tool name"),
        ({"tool": "expert.frame"}, "unknown tool 'expert.frame'; allowed: camera.history, geometry.verify"),
        ({"tool": "geometry.verify", "args": [1]}, "'args' must be a JSON object"),
        ({"action": 7}, "missing field 'action'"),
        ({"action": "gripper.fly"}, "unknown action 'gripper.fly'; allowed: gripper.move_world"),
        (
            {"action": "gripper.move_world", "axis": "w", "sign": "+", "distance_mm": 10},
            "'axis' must be one of x, y, z",
        ),
        ({"action": "gripper.move_world", "axis": "x", "sign": "up", "distance_mm": 10}, "'sign' must be '\\+' or '-'"),
        ({"action": "gripper.move_world", "axis": "x", "sign": "+"}, "missing field 'distance_mm'"),
        ({**MOVE, "distance_mm": 0.5}, r"0.5 mm is outside the allowed range \[1, 100\] mm"),
        ({**MOVE, "distance_mm": 101}, r"101 mm is outside the allowed range \[1, 100\] mm"),
        ({**MOVE, "distance_mm": True}, "must be a number of mm"),
        ({**MOVE, "distance_mm": "far"}, "must be a number of mm"),
        (
            {"action": "gripper.rotate_local", "axis": "rx", "sign": "+", "angle_deg": 95},
            r"95 deg is outside the allowed range \[1, 90\] deg",
        ),
        ({"action": "gripper.rotate_local", "axis": "yaw", "sign": "+", "angle_deg": 9}, "'axis' must be one of rx"),
        ({"action": "camera.view_top"}, "unknown action 'camera.view_top'"),
        ({"action": "dual_gripper.close"}, "needs two controlled arms"),
        ({"action": "left_gripper.open"}, "for two-arm tasks"),
        ({**MOVE, "arm": "left"}, "'arm' must be 'right' in this task"),
    ],
)
def test_single_arm_validation_errors(obj, message):
    with pytest.raises(ProtocolError, match=message):
        parse(obj)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (MOVE, "needs an 'arm' field"),
        ({"action": "gripper.rotate_local", "axis": "rz", "sign": "-", "angle_deg": 10}, "needs an 'arm' field"),
        ({**MOVE, "arm": "both"}, "'arm' must be 'left' or 'right'"),
        ({"action": "dual_gripper.move_world", "left": MOVE}, "needs a 'right' object"),
        (
            {"action": "dual_gripper.move_world", "left": MOVE, "right": {**MOVE, "distance_mm": 500}},
            "in 'right': field 'distance_mm' = 500 mm is outside",
        ),
        ({"action": "camera.view_middle_topdown"}, "unknown action"),
    ],
)
def test_dual_arm_validation_errors(obj, message):
    with pytest.raises(ProtocolError, match=message):
        parse(obj, arms=TWO)


def test_dual_arm_valid_decisions():
    assert parse({**MOVE, "arm": "left"}, arms=TWO).label == "left.move_world z- 30mm"
    d = parse({"action": "dual_gripper.move_world", "left": MOVE, "right": {**MOVE, "axis": "x"}}, arms=TWO)
    assert d.label.startswith("dual.move_world")
    assert parse({"action": "dual_gripper.close"}, arms=TWO).label == "dual.gripper close"
    assert parse({"action": "right_gripper.open"}, arms=TWO).label == "right.gripper open"
    assert parse({"action": "camera.view_left_side"}, arms=TWO).kind == CAMERA


def test_passive_protocol_has_no_camera_actions():
    with pytest.raises(ProtocolError, match="camera actions are disabled in the passive"):
        parse({"action": "camera.view_side"}, camera=False)


def test_extract_json_returns_the_object():
    assert extract_json('noise {"a": {"b": [1, 2]}} noise') == {"a": {"b": [1, 2]}}


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        st.text(max_size=400),
        st.recursive(
            st.none() | st.booleans() | st.floats() | st.text(max_size=30) | st.integers(),
            lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=12), c, max_size=4),
        ).map(lambda v: json.dumps(v, allow_nan=True)),
    )
)
def test_arbitrary_replies_only_raise_protocol_errors(text):
    for arms in (ONE, TWO):
        try:
            parse_decision(text, arms, True, TOOLS)
        except ProtocolError:
            pass


@settings(max_examples=200, deadline=None)
@given(
    st.fixed_dictionaries(
        {"action": st.sampled_from(["gripper.move_world", "gripper.rotate_local", "dual_gripper.move_world"])},
        optional={
            "axis": st.one_of(st.sampled_from(["x", "y", "z", "rx", "ry", "rz"]), st.text(max_size=3), st.integers()),
            "sign": st.one_of(st.sampled_from(["+", "-", "pos", "neg"]), st.integers(-2, 2), st.none()),
            "distance_mm": st.one_of(
                st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.text(max_size=5)
            ),
            "angle_deg": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers()),
            "arm": st.one_of(st.sampled_from(["left", "right", "both"]), st.integers()),
            "left": st.dictionaries(st.text(max_size=10), st.integers(), max_size=3),
        },
    )
)
def test_near_valid_actions_only_raise_protocol_errors(obj):
    for arms in (ONE, TWO):
        try:
            d = parse_decision(json.dumps(obj, allow_nan=True), arms, True, TOOLS)
        except ProtocolError:
            continue
        assert d.kind == ACTION
