"""The action interfaces (``control=``, a condition key): the paper's commands, or a continuous
end-effector delta at control rate (docs/gym.md, docs/policy.md).

``control=commands`` (the default) is the paper's interface, unchanged: one metric command per
env step, planned by mplib and run to rest (vabench.envs.sim.executor).

``control=ee_delta`` is the interface VLA policies act through. One env step carries one
:class:`EEDelta`: per controlled arm (left before right) seven numbers,

    dx, dy, dz        translation of the TCP (the point between the fingertips), world frame, metres
    rx, ry, rz        a rotation vector (axis-angle, radians) about the TCP, in world axes: the new
                      orientation is ``exp([r]x) @ R`` (R: the TCP's orientation now)
    gripper           the finger target, 0 open .. 1 closed (continuous; "closed" from 0.5)

Each step clips the translation to :data:`MAX_STEP_M` and the rotation to :data:`MAX_STEP_RAD`
(by norm), solves damped-least-squares IK on the arm's pinocchio model for the target pose and
tracks the joint targets for one control period (:data:`CONTROL_HZ`; the physics keeps its own
250 Hz), with no motion planning and no settle (vabench.envs.sim.controller). An unreachable
target or a joint limit holds the arm and is reported (planner_success false, the reason in the
feedback). The scenes, seeds, cameras and checker are the paper's; the checker runs after every
control step. Its step budget is its own: the task's times its family's
:data:`BUDGET_FACTOR` (:func:`control_budget`), recorded in the row's ``budget``.

This module imports no simulator: the condition's check reads :data:`CONTROLS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# EE_DELTA: the decision object's field, {"ee_delta": {arm: [7 numbers]}}
from vabench.core.boundary import EE_DELTA, Agent, Participant
from vabench.core.registry import Registry
from vabench.core.vocab import ControlMode

from .actions import ActionError

CONTROLS: Registry[str] = Registry(
    "control mode",
    (
        (ControlMode.COMMANDS, "the paper's metric commands, each planned and run to rest"),
        (ControlMode.EE_DELTA, "a continuous end-effector delta per arm, tracked for one 10 Hz control period"),
    ),
    "control=NAME",
)

CHAT_CONTROL = (  # a chat model under control=ee_delta: the config's refusal
    "control=ee_delta is for agents that read observations (model=policy, an Agent); a chat model acts "
    "through the paper's commands: drop control=ee_delta"
)


def refusal(agent: Participant, control: str) -> str | None:
    """Why ``agent`` cannot play under ``control`` (one line naming the fix), or None. Both the
    launcher and the episode loop ask, so no agent sends paper commands into an ee_delta episode,
    nor control steps into one of the paper's commands."""
    if control != ControlMode.EE_DELTA:
        if getattr(agent, "plays_controls", False):
            return f"model={agent.name} answers control steps (an ee_delta record); add control=ee_delta"
        return None
    if not isinstance(agent, Agent):  # a chat model
        return CHAT_CONTROL
    if agent.plays_commands:
        return f"control=ee_delta: model={agent.name} plays the paper's commands only; leave control unset"
    return None


PER_ARM = 7
CONTROL_HZ = 10  # control steps per simulated second
MAX_STEP_M = 0.02  # the translation of one step, by norm (2 cm: 0.2 m/s at 10 Hz)
MAX_STEP_RAD = 0.1  # the rotation of one step, by norm (0.1 rad: 1 rad/s at 10 Hz)
GRIPPER_CLOSED_AT = 0.5  # the proprioception's gripper_closed from this target on
# The control budget per task family: the task's budget (paper commands) times this. Measured by
# benchmarks/control_budget.py: the oracle's commands of one manifest seed per family, each as the
# control steps it takes at the limits above (a move ceil(d / 2 cm), a turn ceil(a / 0.1 rad), a
# gripper command GRIPPER_STEPS periods), per command, rounded up.
GRIPPER_STEPS = 5  # the periods a gripper command takes at 10 Hz (the paper's takes 0.4 s)
# Measured 2026-12-07 at commit 570341e (python benchmarks/control_budget.py, one seed per family):
# 4.3-7.2 control steps per oracle command.
BUDGET_FACTOR: dict[str, int] = {
    "beat_block_hammer_right": 5,
    "click_bell_right": 5,
    "grasp_pen_leaning_cube": 6,
    "grasp_single_bottle": 6,
    "grasp_single_bottle_upright": 6,
    "grasp_single_cube": 6,
    "grasp_single_pen": 5,
    "handover_horizontal_block": 6,
    "lift_pot": 8,
    "place_cube_in_bowl": 5,
    "place_cube_on_cube": 5,
    "place_shoe": 6,
    "place_single_bottle_upright": 5,
    "place_single_cube": 5,
    "put_everything_in_basket": 5,
}
DEFAULT_BUDGET_FACTOR = 8  # a family not measured (a new task): the largest measured


def recording_stride(fps: float, control: str) -> int:
    """Control steps per recording view: every paper command is one, and at control rate one view
    per ``CONTROL_HZ / fps`` steps keeps the episode video (``recording.fps``) in real time, so the
    reviewer's picture costs a policy's loop a fraction of a step (benchmarks/policy_throughput.py)."""
    return max(1, round(CONTROL_HZ / fps)) if control == ControlMode.EE_DELTA else 1


def control_budget(task_budget: int, family: str) -> int:
    """The step budget under ee_delta of a task whose paper budget is ``task_budget``."""
    return int(task_budget) * BUDGET_FACTOR.get(family, DEFAULT_BUDGET_FACTOR)


@dataclass(frozen=True)
class EEDelta:
    """One control step: per controlled arm its seven numbers (validated: finite, clipped later)."""

    deltas: dict  # arm -> np.ndarray (7,)

    @property
    def label(self) -> str:
        parts = [f"{arm} [{' '.join(f'{v:+.3f}' for v in d)}]" for arm, d in self.deltas.items()]
        return "ee_delta " + ", ".join(parts)


def parse_control(obj, arms: tuple[str, ...]) -> EEDelta:
    """Validate a decision object's ``ee_delta`` (untrusted) into an :class:`EEDelta`, or raise
    :class:`ActionError` naming what is wrong: a map of each controlled arm to seven finite numbers
    (a one-arm task also takes the seven numbers as they are)."""
    if not isinstance(obj, dict) or EE_DELTA not in obj:
        raise ActionError(f"this episode takes control=ee_delta steps: {{'{EE_DELTA}': {{arm: [7 numbers]}}}}")
    given = obj[EE_DELTA]
    if len(arms) == 1 and isinstance(given, list | tuple | np.ndarray):
        given = {arms[0]: given}
    if not isinstance(given, dict) or set(given) != set(arms):
        names = ", ".join(arms)
        raise ActionError(f"'{EE_DELTA}' must map each controlled arm ({names}) to 7 numbers, got {_keys(given)}")
    return EEDelta({arm: _vector(given[arm], arm) for arm in arms})


def _keys(given) -> str:
    return f"arms {', '.join(map(str, given))}" if isinstance(given, dict) else type(given).__name__


def _vector(value, arm: str) -> np.ndarray:
    what = f"'{EE_DELTA}' of the {arm} arm"
    if not isinstance(value, list | tuple | np.ndarray) or len(value) != PER_ARM:
        n = len(value) if isinstance(value, list | tuple | np.ndarray) else type(value).__name__
        raise ActionError(f"{what} must be {PER_ARM} numbers (dx dy dz rx ry rz gripper), got {n}")
    try:
        v = np.array([float(x) if not isinstance(x, bool | str) else math.nan for x in value], dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ActionError(f"{what} must be {PER_ARM} numbers (dx dy dz rx ry rz gripper)") from None
    if not np.isfinite(v).all():
        raise ActionError(f"{what} must be finite numbers, got {[float(x) for x in v]}")
    return v


def clipped(v: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The vector within the limits (translation and rotation by norm, the gripper to 0..1), and
    a note per limit applied."""
    out, notes = v.astype(float).copy(), []
    for part, limit, unit in ((slice(0, 3), MAX_STEP_M, "m"), (slice(3, 6), MAX_STEP_RAD, "rad")):
        norm = float(np.linalg.norm(out[part]))
        if norm > limit:
            out[part] *= limit / norm
            notes.append(f"{'translation' if unit == 'm' else 'rotation'} clipped from {norm:.3g} to {limit:g} {unit}")
    if not 0.0 <= out[6] <= 1.0:
        notes.append(f"gripper target {out[6]:.3g} clipped to 0..1")
        out[6] = min(max(out[6], 0.0), 1.0)
    return out, notes


def task_budget(task, control: str) -> int:
    """The step budget of ``task`` (a task or its class) under ``control``: the paper's, or
    :func:`control_budget` of its family (the base task it belongs to)."""
    if control != ControlMode.EE_DELTA:
        return int(task.budget)
    return control_budget(task.budget, getattr(task, "summary_task", None) or task.name)
