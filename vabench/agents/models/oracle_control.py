"""The oracle under ``control=ee_delta``: the scripted expert's paper commands as control steps.

The expert (vabench.envs.tasks.expert) yields one paper command at a time and reads the live
privileged state when asked for the next, so it stays closed-loop whatever executes its commands.
Here each command, read by the env's own parser (so every naming form the env takes names the
same arm), becomes a target per arm, fixed when the command starts from the observation's robot
state: a ``move_world`` the grip centre (``gc``) then plus the signed distance on its axis, a
``rotate_local`` the orientation then turned about its local axis, an ``open``/``close`` the
gripper target, held for :data:`~vabench.envs.control.GRIPPER_STEPS` periods. Each control step is
then the clipped delta from the measured pose toward the target (translation in world metres, a
world rotation vector, the gripper's 0/1), until the arm is within :data:`TOL_M` and
:data:`TOL_RAD` of it or the command's step cap runs out; then the next command. Camera actions
are left out (a policy acts without them). It stays privileged: the expert reads object poses.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
from scipy.spatial.transform import Rotation

from vabench.core.boundary import ArmProprio
from vabench.envs.actions import MOVE_AXES, ROTATE_AXES, DualGripper, DualMoveWorld, Gripper, MoveWorld, parse_action
from vabench.envs.control import GRIPPER_STEPS, MAX_STEP_M, MAX_STEP_RAD

TOL_M = 0.001  # the expert's own tolerance: it re-measures and moves again from 1 mm
TOL_RAD = math.radians(0.5)
SLACK_STEPS = 6  # a command's step cap beyond the steps its length needs at the limits
AXES = {axis: i for names in (MOVE_AXES, ROTATE_AXES) for i, axis in enumerate(names)}  # x/rx 0, y/ry 1, z/rz 2


def rotation_vector(target: np.ndarray, now: np.ndarray) -> np.ndarray:
    """The world rotation vector that turns orientation ``now`` into ``target`` (3x3 each)."""
    return Rotation.from_matrix(target @ now.T).as_rotvec()


def turned(rotation: np.ndarray, axis: int, angle: float) -> np.ndarray:
    """``rotation`` (columns: the gripper-local axes in world) turned by ``angle`` about its column ``axis``."""
    return Rotation.from_rotvec(rotation[:, axis] * angle).as_matrix() @ rotation


def pose(arm: ArmProprio) -> tuple[np.ndarray, np.ndarray]:
    """(grip centre, orientation) of an arm's proprioception."""
    return np.asarray(arm.gc, dtype=float), np.column_stack([arm.rx, arm.ry, arm.rz]).astype(float)


class Target:
    """One expert command as per-arm targets: position, orientation, gripper; and its step cap."""

    def __init__(self, command: dict, proprio: dict[str, ArmProprio], grip: dict[str, float]):
        self.pose = {arm: pose(p) for arm, p in proprio.items()}
        self.grip = dict(grip)
        self.moves = False
        self.steps, self.cap = 0, GRIPPER_STEPS
        # the env's own parser: every naming form it takes (an 'arm' field, left_/right_/dual_gripper)
        # names the same arm here as there
        action = parse_action(command, tuple(proprio), camera=False)
        if isinstance(action, (Gripper, DualGripper)):
            which = tuple(proprio) if isinstance(action, DualGripper) else (action.arm,)
            self.grip.update({arm: float(action.close) for arm in which})
            return
        parts = (action.left, action.right) if isinstance(action, DualMoveWorld) else (action,)
        self.moves, need = True, 1
        for part in parts:
            position, rotation = self.pose[part.arm]
            if isinstance(part, MoveWorld):
                position = position.copy()
                position[AXES[part.axis]] += part.sign * part.distance_mm / 1000.0
                need = max(need, math.ceil(part.distance_mm / 1000.0 / MAX_STEP_M))
            else:
                angle = part.sign * math.radians(part.angle_deg)
                rotation = turned(rotation, AXES[part.axis], angle)
                need = max(need, math.ceil(abs(angle) / MAX_STEP_RAD))
            self.pose[part.arm] = (position, rotation)
        self.cap = need + SLACK_STEPS

    def step(self, proprio: dict[str, ArmProprio]) -> dict[str, tuple[float, ...]] | None:
        """The next control step toward the target, or None: reached, or its cap is spent."""
        if self.steps >= self.cap:
            return None
        out, far = {}, not self.moves
        for arm, p in proprio.items():
            position, rotation = pose(p)
            move = self.pose[arm][0] - position
            turn = rotation_vector(self.pose[arm][1], rotation)
            far |= bool(np.linalg.norm(move) > TOL_M or np.linalg.norm(turn) > TOL_RAD)
            move *= min(1.0, MAX_STEP_M / max(float(np.linalg.norm(move)), 1e-12))
            turn *= min(1.0, MAX_STEP_RAD / max(float(np.linalg.norm(turn)), 1e-12))
            out[arm] = tuple(float(x) for x in (*move, *turn, self.grip[arm]))
        if not far:
            return None
        self.steps += 1
        return out


class ControlOracle:
    """One episode's expert commands as control steps (7 numbers per arm, left before right)."""

    def __init__(self, commands: Iterator[dict], arms: tuple[str, ...]):
        self.commands, self.arms = commands, tuple(arms)
        self.target: Target | None = None
        self.grip: dict[str, float] | None = None  # the gripper targets sent (None: not yet read)

    def step(self, proprio: dict[str, ArmProprio]) -> dict[str, tuple[float, ...]] | None:
        """The next control step from the arms' state now, or None: the expert has finished."""
        proprio = {arm: proprio[arm] for arm in self.arms}
        if self.grip is None:
            self.grip = {arm: float(p.gripper_closed) for arm, p in proprio.items()}
        while True:
            if self.target is not None:
                out = self.target.step(proprio)
                if out is not None:
                    return out
                self.grip = self.target.grip
            command = next(self.commands, None)
            if command is None:
                return None
            if str(command.get("action", "")).startswith("camera."):
                continue  # a policy acts without camera actions
            self.target = Target(command, proprio, self.grip)
