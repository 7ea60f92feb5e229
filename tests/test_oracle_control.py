"""The oracle under control=ee_delta (vabench.agents.models.oracle_control): each expert command as
a target, approached by clipped control steps from the measured pose; the launcher takes
model=oracle control=ee_delta, and the oracle succeeds through the episode loop within the control
budget on a manifest seed of each one-arm task the BC baseline learns and (slow) of both two-arm
tasks; per-arm command names set the arm they name."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.test_launch import validate
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.offline import OracleAgent
from vabench.agents.models.oracle_control import ControlOracle, Target, rotation_vector
from vabench.core.boundary import ArmProprio
from vabench.envs import RENDER_PRESETS, EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.control import GRIPPER_STEPS, MAX_STEP_M, MAX_STEP_RAD, control_budget
from vabench.envs.seeds import eval_seeds
from vabench.envs.tasks import task_class
from vabench.results.recordfile import read_events

TASKS = ("grasp_single_cube", "place_cube_in_bowl", "click_bell_right")
TWO_ARM = ("lift_pot", "handover_horizontal_block")


def proprio(gc=(0.0, 0.0, 0.3), rotation=None, closed=False) -> ArmProprio:
    rotation = np.eye(3) if rotation is None else rotation
    cols = tuple(tuple(float(x) for x in rotation[:, i]) for i in range(3))
    return ArmProprio(gc, (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0), closed, tuple(gc), *cols)


def test_a_move_becomes_clipped_steps_toward_the_commands_target_and_ends_within_tolerance():
    command = {"action": "gripper.move_world", "axis": "x", "sign": "-", "distance_mm": 50}
    target = Target(command, {"right": proprio()}, {"right": 1.0})
    first = target.step({"right": proprio()})["right"]
    assert np.allclose(first, (-MAX_STEP_M, 0, 0, 0, 0, 0, 1.0))  # full speed along -x, the gripper held closed
    last = target.step({"right": proprio(gc=(-0.045, 0.0, 0.3))})["right"]
    assert np.allclose(last[:3], (-0.005, 0, 0))  # the rest of the way, measured from where the arm is
    assert target.step({"right": proprio(gc=(-0.0502, 0.0, 0.3))}) is None  # within 1 mm: the next command
    assert target.cap == math.ceil(0.05 / MAX_STEP_M) + 6


def test_a_local_rotation_is_a_world_rotation_vector_about_the_gripper_axis():
    rotation = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])  # rx along world z, ry along x
    command = {"action": "gripper.rotate_local", "axis": "ry", "sign": "+", "angle_deg": 30}
    target = Target(command, {"right": proprio(rotation=rotation)}, {"right": 0.0})
    wanted = rotation_vector(target.pose["right"][1], rotation)
    assert np.allclose(wanted, (math.radians(30), 0, 0))  # about ry, which points along world x
    step = target.step({"right": proprio(rotation=rotation)})["right"]
    assert np.allclose(step[3:6], (MAX_STEP_RAD, 0, 0)) and np.allclose(step[:3], 0)


def test_a_gripper_command_holds_the_arm_for_its_periods_and_dual_commands_move_both_arms():
    arms = {"left": proprio(gc=(0.0, 0.3, 0.3)), "right": proprio()}
    oracle = ControlOracle(iter([{"action": "dual_gripper.close"}, {"action": "camera.zoom_in"}]), tuple(arms))
    steps = [oracle.step(arms) for _ in range(GRIPPER_STEPS + 1)]
    assert all(s == {arm: (0.0,) * 6 + (1.0,) for arm in arms} for s in steps[:GRIPPER_STEPS])
    assert steps[-1] is None  # the camera action is left out, and the expert has finished
    move = {
        "action": "dual_gripper.move_world",
        "left": {"axis": "z", "sign": "+", "distance_mm": 10},
        "right": {"axis": "y", "sign": "-", "distance_mm": 10},
    }
    both = Target(move, arms, {"left": 0.0, "right": 0.0}).step(arms)
    assert np.allclose(both["left"][:3], (0, 0, 0.01)) and np.allclose(both["right"][:3], (0, -0.01, 0))


def test_per_arm_gripper_names_set_the_arm_they_name_not_the_first_arm():
    arms = {"left": proprio(gc=(0.0, 0.3, 0.3)), "right": proprio()}
    closed = Target({"action": "right_gripper.close"}, arms, {"left": 0.0, "right": 0.0})
    assert closed.grip == {"left": 0.0, "right": 1.0} and not closed.moves
    opened = Target({"action": "Left_Gripper.Open"}, arms, {"left": 1.0, "right": 1.0})
    assert opened.grip == {"left": 0.0, "right": 1.0}
    move = {"action": "gripper.move_world", "arm": "RIGHT", "axis": "z", "sign": "plus", "distance_mm": 10}
    step = Target(move, arms, {"left": 0.0, "right": 0.0}).step(arms)
    assert np.allclose(step["right"][:3], (0, 0, 0.01)) and np.allclose(step["left"][:6], 0)


def test_the_launcher_takes_the_oracle_under_ee_delta(physics_env):
    run = validate("model=oracle", "control=ee_delta", f"tasks=[{TASKS[0]}]", "seeds=1")
    assert run.condition.control == "ee_delta" and run.condition.budget_scale == 1


def play(task: str, tmp_path) -> tuple:
    """The oracle's episode on the task's first manifest seed under ee_delta: its row, and the
    control steps it sent per arm (one array of 7-vectors per arm)."""
    recording = RecordingConfig(enabled=False, video=False)
    env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["small"], recording=recording, control="ee_delta", wrist=False))
    try:
        episode = Episode.of(task, eval_seeds(task)[0], env=env, control="ee_delta")
        row = run_episode(env, OracleAgent(), episode, tmp_path)
    finally:
        env.close()
    budget = control_budget(task_class(task).budget, task)
    assert row.success and row.privileged and row.control == "ee_delta" and row.invalid_actions == 0
    assert row.budget == budget and row.steps < budget
    sent = [e["payload"]["ee_delta"] for e in read_events(tmp_path / "events.jsonl") if e["type"] == "action"]
    assert len(sent) == row.steps and all(list(v) == list(task_class(task).arms) for v in sent)
    moves = {arm: np.array([v[arm] for v in sent]) for arm in sent[0]}
    for steps in moves.values():
        assert steps.shape == (row.steps, 7)
        assert np.linalg.norm(steps[:, :3], axis=1).max() <= MAX_STEP_M + 1e-9  # within the limits: nothing clipped
        assert np.linalg.norm(steps[:, 3:6], axis=1).max() <= MAX_STEP_RAD + 1e-9
    return row, moves


@pytest.mark.parametrize("task", TASKS)
def test_the_oracle_succeeds_under_ee_delta_within_the_control_budget(task, tmp_path):
    row, moves = play(task, tmp_path)
    assert list(moves) == ["right"]


@pytest.mark.slow  # 3-5 s each once the assets are loaded, about 12 s cold (106 and 178 control steps)
@pytest.mark.parametrize("task", TWO_ARM)
def test_the_oracle_succeeds_under_ee_delta_on_the_two_arm_tasks(task, tmp_path):
    """Both arms move and both grippers close (lift_pot: both hold the pot; the handover: the giver
    takes the block, the receiver takes it over) through the dual and the per-arm commands."""
    row, moves = play(task, tmp_path)
    assert list(moves) == ["left", "right"]
    for steps in moves.values():
        assert np.abs(steps[:, :6]).max() > 0 and steps[:, 6].max() == 1.0
