"""The Observation is the privilege boundary: it carries robot state, images and feedback only.
Object poses must not leak through any field."""

import dataclasses
import re

import numpy as np

from vabench.envs.env import Observation, StepResult
from vabench.envs.robot import ArmProprio

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
ALLOWED_PROPRIO = {"ee_position", "ee_quat_wxyz", "ee_rpy_deg", "gripper_closed", "gc", "rx", "ry", "rz"}


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


def test_no_observation_value_equals_an_object_coordinate(render_env):
    env = render_env
    observations = [env.reset("place_cube_in_bowl", 1005)]
    for name in ("view_topdown", "view_side", "zoom_in", "yaw_left"):
        observations.append(env.step({"action": f"camera.{name}"}).observation)
    secrets = []
    for body in env.world.bodies.values():
        m = body.matrix()
        secrets += list(m[:3, 3])
    for obs in observations:
        values = []
        _numbers(obs, values)
        for v in values:
            assert all(abs(v - s) > 5e-4 for s in secrets), (v, secrets)
        assert all(img.dtype == np.uint8 and img.ndim == 3 for img in obs.images.values())
