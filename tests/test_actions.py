"""The action parser: valid decisions become typed actions; anything else gets a precise error."""

import math

import pytest

from vabench.envs.actions import (
    ActionError,
    CameraAction,
    DualGripper,
    DualMoveWorld,
    Gripper,
    MoveWorld,
    RotateLocal,
    action_names,
    parse_action,
)

ONE = ("right",)
TWO = ("left", "right")


def test_move_world_parses_and_defaults_to_the_controlled_arm():
    a = parse_action(
        {"action": "gripper.move_world", "axis": "z", "sign": "-", "distance_mm": 25, "reason": "down"}, ONE
    )
    assert a == MoveWorld("right", "z", -1, 25.0)


@pytest.mark.parametrize("sign,expected", [("+", 1), ("positive", 1), ("-", -1), ("neg", -1), (-1, -1), ("+1", 1)])
def test_sign_tokens(sign, expected):
    a = parse_action({"action": "gripper.move_world", "axis": "x", "sign": sign, "distance_mm": "10"}, ONE)
    assert a.sign == expected and a.distance_mm == 10.0


def test_rotation_accepts_bare_axis_names():
    a = parse_action({"action": "gripper.rotate_local", "axis": "y", "sign": "+", "angle_deg": 90}, ONE)
    assert a == RotateLocal("right", "ry", 1, 90.0)


@pytest.mark.parametrize(
    "decision,fragment",
    [
        (
            {"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": 0.5},
            "outside the allowed range [1, 100] mm",
        ),
        ({"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": 101}, "[1, 100]"),
        ({"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": math.nan}, "finite"),
        ({"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": "inf"}, "finite"),
        ({"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": True}, "must be a number"),
        ({"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": [5]}, "must be a number"),
        ({"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": "5cm"}, "must be a number"),
        (
            {"action": "gripper.move_world", "axis": "w", "sign": "+", "distance_mm": 5},
            "field 'axis' must be one of x, y, z",
        ),
        (
            {"action": "gripper.move_world", "axis": "x", "sign": "up", "distance_mm": 5},
            "field 'sign' must be '+' or '-'",
        ),
        ({"action": "gripper.move_world", "axis": "x", "sign": "+"}, "missing field 'distance_mm'"),
        ({"action": "gripper.rotate_local", "axis": "rx", "sign": "+", "angle_deg": 91}, "[1, 90] deg"),
        (
            {"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": 5, "arm": "left"},
            "'arm' must be 'right'",
        ),
        ({"action": "camera.fly_away"}, "unknown action"),
        ({"action": "dual_gripper.close"}, "needs two controlled arms"),
        ({"action": 7}, "missing field 'action'"),
        ({"axis": "x"}, "missing field 'action'"),
    ],
)
def test_invalid_decisions_name_the_problem(decision, fragment):
    with pytest.raises(ActionError) as e:
        parse_action(decision, ONE)
    assert fragment in str(e.value)


def test_not_an_object():
    with pytest.raises(ActionError, match="must be a JSON object"):
        parse_action(["gripper.open"], ONE)


def test_huge_strings_are_truncated_in_errors():
    with pytest.raises(ActionError) as e:
        parse_action({"action": "gripper.move_world", "axis": "x" * 100000, "sign": "+", "distance_mm": 5}, ONE)
    assert len(str(e.value)) < 500


def test_dual_mode_requires_arm_on_single_gripper_commands():
    with pytest.raises(ActionError, match="needs an 'arm' field"):
        parse_action({"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": 5}, TWO)
    with pytest.raises(ActionError, match="needs an 'arm' field"):
        parse_action({"action": "gripper.close"}, TWO)
    assert parse_action({"action": "gripper.close", "arm": "left"}, TWO) == Gripper("left", True)
    assert parse_action({"action": "right_gripper.open"}, TWO) == Gripper("right", False)


def test_dual_move_and_gripper():
    a = parse_action(
        {
            "action": "dual_gripper.move_world",
            "left": {"axis": "z", "sign": "+", "distance_mm": 30},
            "right": {"axis": "z", "sign": "+", "distance_mm": 30},
        },
        TWO,
    )
    assert a == DualMoveWorld(MoveWorld("left", "z", 1, 30.0), MoveWorld("right", "z", 1, 30.0))
    assert parse_action({"action": "dual_gripper.open"}, TWO) == DualGripper(False)
    with pytest.raises(ActionError, match="in 'right': field 'distance_mm'"):
        parse_action(
            {
                "action": "dual_gripper.move_world",
                "left": {"axis": "z", "sign": "+", "distance_mm": 30},
                "right": {"axis": "z", "sign": "+", "distance_mm": 300},
            },
            TWO,
        )
    with pytest.raises(ActionError, match="needs a 'left' object"):
        parse_action({"action": "dual_gripper.move_world", "left": "up", "right": {}}, TWO)


def test_camera_vocabulary_depends_on_arms_and_protocol():
    assert parse_action({"action": "camera.view_topdown"}, ONE) == CameraAction("view_topdown")
    assert parse_action({"action": "camera.yaw_left.small"}, ONE) == CameraAction("yaw_left")
    with pytest.raises(ActionError, match="unknown action"):
        parse_action({"action": "camera.view_left_side"}, ONE)
    assert parse_action({"action": "camera.view_left_side"}, TWO) == CameraAction("view_left_side")
    with pytest.raises(ActionError, match="disabled in the passive"):
        parse_action({"action": "camera.zoom_in"}, ONE, camera=False)
    assert not any(n.startswith("camera.") for n in action_names(ONE, camera=False))
    assert len([n for n in action_names(TWO, camera=True) if n.startswith("camera.view_")]) == 20


def test_action_names_are_case_insensitive_and_arm_prefixes_need_two_arms():
    assert parse_action({"action": " Gripper.Close "}, ONE) == Gripper("right", True)
    with pytest.raises(ActionError, match="for two-arm tasks; here use 'gripper.open'"):
        parse_action({"action": "right_gripper.open"}, ONE)
