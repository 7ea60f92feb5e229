"""One exported episode (:class:`Clip`), built the same way from a run's record and from a replayed
demonstration: from the ``state`` events (the robot state after reset and after each action) and
the ``action`` events (what was done at each step), keyed by step as the record keys them.

Frame t is the observation seen at step t; its action is the ``action`` event of step t + 1 (the
record numbers an action by the step it leads to). An episode that ended on success or budget has
no frame after its last action: the model never saw that observation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vabench.core.errors import VabenchError
from vabench.core.vocab import ControlMode, StepKind
from vabench.envs.actions import CameraAction, DualMoveWorld, MoveWorld, RotateLocal, parse_action
from vabench.envs.control import EE_DELTA, clipped, parse_control

from .features import (
    ACTION_KINDS,
    ARMS,
    CAMERA_ACTIONS,
    DEFAULT_FEATURES,
    EE_DELTA_NAMES,
    NO_ACTION,
    Layout,
    action_names,
)

# the frame table's columns a clip holds (the rest are LeRobot's indices) and their numpy types
DTYPES = {f.key: np.dtype(f.dtype) for f in Layout((), 0, 1, "").columns if f.key not in DEFAULT_FEATURES}


class ExportError(VabenchError, ValueError):
    """Input that cannot be exported; the message names the fix."""


@dataclass
class Clip:
    """One episode to export: its task string (the instruction), one image file per frame per view,
    the frame table's columns (feature key -> one row per frame) and its row in meta/episodes."""

    task: str
    images: dict[str, list[Path]]
    columns: dict[str, np.ndarray]
    meta: dict = field(default_factory=dict)
    dof: int = 0
    robot: str = ""
    control: str = ControlMode.COMMANDS  # the action interface it was played under (its action columns)

    @property
    def length(self) -> int:
        return len(next(iter(self.images.values())))


def robot_state(state: dict, where: str) -> tuple[np.ndarray, int]:
    """The ``observation.state`` vector of a ``state`` event, and the robot's joint count."""
    try:
        robot = state["robot"]
    except KeyError:
        raise ExportError(
            f"{where} predates the robot state in records (joint positions); re-simulate the run with the "
            "current code and export that: python -m vabench.verify RUN --rescore NEW_RUN"
        ) from None
    parts, dof = [], None
    for arm in ARMS:
        r = robot[arm]
        dof = len(r["qpos"]) - 2
        parts += [*r["qpos"], *r["ee_p"], *r["ee_q"], *r["gc"], float(r["closed"])]
    return np.asarray(parts, dtype=np.float32), dof


def _motion(event: dict, arms: tuple[str, ...]) -> tuple[dict[str, float], int]:
    """The motion components and the camera index (0: none) of an executed or refused decision; a
    control step's seven numbers per arm as the controller tracked them (clipped to its limits)."""
    if event["kind"] == StepKind.INVALID:
        return {}, 0
    if isinstance(event["payload"], dict) and EE_DELTA in event["payload"]:
        step = parse_control(event["payload"], arms)  # already validated when it ran
        sent = {arm: clipped(v)[0] for arm, v in step.deltas.items()}
        return {f"{arm}.{n}": float(x) for arm, v in sent.items() for n, x in zip(EE_DELTA_NAMES, v, strict=True)}, 0
    act = parse_action(event["payload"], arms, camera=True)
    if isinstance(act, CameraAction):
        return {}, 1 + CAMERA_ACTIONS.index(act.name)
    out = {}
    for m in (act.left, act.right) if isinstance(act, DualMoveWorld) else (act,):
        if isinstance(m, MoveWorld):
            out[f"{m.arm}.move_{m.axis}_mm"] = m.sign * m.distance_mm
        elif isinstance(m, RotateLocal):
            out[f"{m.arm}.rotate_{m.axis}_deg"] = m.sign * m.angle_deg
    return out, 0


def columns(
    states: dict[int, dict],
    actions: dict[int, dict],
    steps: int,
    ending: str,
    arms,
    where: str,
    control: str = ControlMode.COMMANDS,
) -> tuple:
    """The frame table's columns of ``steps`` frames (steps 0..steps-1) from the record's state and
    action events; ``ending`` is the action kind of a last frame that no action followed (the
    model's stop, or none); ``control``, the interface the actions were sent through (their names).
    Returns (columns, dof)."""
    names = action_names(control)
    held = "gripper_closed" if control == ControlMode.COMMANDS else None  # ee_delta: a parked arm's target stays 0
    rows = {key: [] for key in DTYPES}
    dof = 0
    for t in range(steps):
        if t not in states:
            raise ExportError(f"{where} has no state event for step {t}")
        state, dof = robot_state(states[t], where)
        event = actions.get(t + 1)
        after = states.get(t + 1, states[t])
        motion, camera = _motion(event, arms) if event else ({}, 0)
        vector = np.zeros(len(names), dtype=np.float32)
        for i, name in enumerate(names):
            arm, part = name.split(".", 1)
            vector[i] = float(after["robot"][arm]["closed"]) if part == held else motion.get(name, 0.0)
        kind = event["kind"] if event else (ending if t == steps - 1 else NO_ACTION)
        frame = {
            "observation.state": state,
            "action": vector,
            "complementary_info.action_kind": ACTION_KINDS.index(kind),
            "complementary_info.camera_action": camera,
            "complementary_info.action_valid": bool(event and event["valid"]),
            "complementary_info.planner_success": bool(event and event["planner_success"]),
            "next.success": bool(event and event["success"]),
            "next.done": t == steps - 1,
        }
        for key in DTYPES:
            rows[key].append(frame[key])
    return {key: np.asarray(v, dtype=DTYPES[key]) for key, v in rows.items()}, dof
