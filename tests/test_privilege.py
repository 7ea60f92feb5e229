"""The Observation is the privilege boundary: it carries robot state, images and feedback only.
Object poses must not leak through any field."""

import dataclasses
import re

import numpy as np

from vabench.envs.env import Observation, StepResult
from vabench.envs.sim.robot import ArmProprio

ALLOWED_OBSERVATION = {
    "task",
    "instruction",
    "protocol",
    "arms",
    "images",
    "proprio",
    "step",
    "budget",
    "budget_left",
    "last_action",
    "action_valid",
    "planner_success",
    "feedback",
}
# fingers: None under the paper's commands (the prompt says open or closed); the finger joints under
# control=ee_delta, a named departure whose policy layouts (openpi's LIBERO) read them
ALLOWED_PROPRIO = {"ee_position", "ee_quat_wxyz", "ee_rpy_deg", "gripper_closed", "gc", "rx", "ry", "rz", "fingers"}


def test_observation_fields_are_exactly_the_model_visible_ones():
    assert {f.name for f in dataclasses.fields(Observation)} == ALLOWED_OBSERVATION
    assert {f.name for f in dataclasses.fields(ArmProprio)} == ALLOWED_PROPRIO
    assert {f.name for f in dataclasses.fields(StepResult)} - {"observation"} <= {
        "success",
        "done",
        "action_valid",
        "planner_success",
        "feedback",
        "step",
        "budget_left",
        "kind",
    }


def _numbers(obj, out):
    if isinstance(obj, Observation) or dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            _numbers(getattr(obj, f.name), out)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k != "active" and not isinstance(v, np.ndarray):
                _numbers(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _numbers(v, out)
    elif isinstance(obj, str):
        out += [float(x) for x in re.findall(r"-?\d+\.?\d*", obj)]
        out += [float(x) / 1000 for x in re.findall(r"-?\d+\.?\d*", obj)]
    elif isinstance(obj, (bool, type(None))):
        return
    elif isinstance(obj, (int, float, np.floating, np.integer)):
        out.append(float(obj))
    elif not isinstance(obj, np.ndarray):
        raise TypeError(f"unexpected type in an Observation: {type(obj)}")


def _object_coordinates(env) -> list[float]:
    out = []
    for name, body in env.world.bodies.items():
        out += list(body.matrix()[:3, 3]) + list(env.privileged().start[name][:3, 3])
    return out


def test_no_observation_value_equals_an_object_coordinate(render_env):
    """At reset and after camera actions (the robot is far from every object, so none of its
    own coordinates may coincide), no number anywhere in the Observation is an object's."""
    env = render_env
    observations = [env.reset("place_cube_in_bowl", 1005)]
    for name in ("view_topdown", "view_side", "zoom_in", "yaw_left"):
        observations.append(env.step({"action": f"camera.{name}"}).observation)
    secrets = _object_coordinates(env)
    for obs in observations:
        values = []
        _numbers(obs, values)
        for v in values:
            assert all(abs(v - s) > 5e-4 for s in secrets), (v, secrets)
        assert all(img.dtype == np.uint8 and img.ndim == 3 for img in obs.images.values())


def test_feedback_never_names_or_locates_moving_objects(physics_env):
    """Through whole expert episodes and deliberately failing actions (clamps, collisions, out of
    reach, detours), feedback names fixtures and static bodies only, and no number in it is an
    object coordinate (in metres or millimetres)."""
    env = physics_env
    texts = []
    for task, seed in (("place_cube_in_bowl", 1005), ("grasp_single_cube", 1002)):
        env.reset(task, seed)
        secrets = _object_coordinates(env)
        results = list(env.expert_steps())
        env.reset(task, seed)
        for a, s, d in [
            ("z", "-", 100),
            ("y", "+", 100),
            ("x", "-", 100),
            ("z", "+", 100),
            ("z", "+", 100),
            ("z", "+", 100),
            ("x", "-", 100),
            ("x", "-", 100),
            ("x", "-", 100),
        ]:
            results.append(env.step({"action": "gripper.move_world", "axis": a, "sign": s, "distance_mm": d}))
        for r in results:
            texts.append(r.feedback)
            assert "cube" not in r.feedback and "an object" not in r.feedback, r.feedback
            values = []
            _numbers(r.feedback, values)
            assert all(abs(v - s) > 5e-4 for v in values for s in secrets), (r.feedback, secrets)
    joined = " ".join(texts)
    assert "via a detour" in joined and "clamped" in joined and "not executed" in joined  # the cases ran
