"""A policy's per-step action vector as the paper's metric commands (docs/policy.md).

The default action is 7 numbers per controlled arm (left before right on a two-arm task):
``dx, dy, dz`` (end-effector translation, world frame, metres), ``droll, dpitch, dyaw`` (radians,
about the gripper-local axes rx, ry, rz, the paper's ``rotate_local`` axes, or about the world
axes with ``rotation_frame=world``) and ``gripper`` (0 open .. 1 closed, closed from
``gripper_close_at``). One vector becomes, per arm, a ``gripper.move_world`` per world axis, a
``gripper.rotate_local`` per local axis and a gripper command when the aperture changes, in that
order; each is one env step, as every model's command is.

The paper's commands move 1..100 mm and turn 1..90 degrees. What a vector asks below 1 mm (or
1 degree) on an axis is carried to the next vector on that axis, so small steps add up; what it
asks beyond 100 mm (90 degrees) is dropped. A vector that yields no command (all zero, or all
carried) is a no-op that still costs one env step: the gripper is commanded as it is (it holds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vabench.envs.actions import MOVE_AXES, MOVE_MM, ROTATE_AXES, ROTATE_DEG, sign_of, sign_word

PER_ARM = 7
FRAMES = ("local", "world")
AXES = tuple(zip(MOVE_AXES + ROTATE_AXES, (MOVE_MM,) * 3 + (ROTATE_DEG,) * 3, strict=True))  # each axis' range


@dataclass(frozen=True)
class ActionMapping:
    """How a vector's numbers become commands (``model.extra.*``, vabench.agents.models.policy)."""

    position_scale: float = 1.0  # metres per action unit
    rotation_scale: float = 1.0  # radians per action unit
    rotation_frame: str = "local"  # local: about rx, ry, rz; world: about the world x, y, z
    gripper_close_at: float = 0.5  # the gripper number from which the gripper closes


def _command(name: str, arm: str, arms: tuple[str, ...], **params) -> dict:
    out = {"action": name, **params}
    if len(arms) == 2:
        out["arm"] = arm
    return out


class CommandMaker:
    """Turns one episode's action vectors into commands, carrying sub-command residues per axis."""

    def __init__(self, mapping: ActionMapping, arms: tuple[str, ...]):
        self.mapping, self.arms = mapping, tuple(arms)
        self.carry = {arm: np.zeros(6) for arm in self.arms}  # mm along x, y, z; degrees about the rotation axes

    @property
    def dim(self) -> int:
        return PER_ARM * len(self.arms)

    def commands(self, vector: np.ndarray, state: dict) -> list[dict]:
        """The commands of one vector; ``state``: arm -> its proprioception (rx, ry, rz, gripper_closed)."""
        out = []
        for k, arm in enumerate(self.arms):
            out += self._arm(arm, np.asarray(vector[PER_ARM * k : PER_ARM * (k + 1)], dtype=float), state[arm])
        if not out:  # a no-op: hold the first arm's gripper as it is
            first = self.arms[0]
            out = [_command("gripper.close" if state[first].gripper_closed else "gripper.open", first, self.arms)]
        return out

    def _arm(self, arm: str, v: np.ndarray, proprio) -> list[dict]:
        m = self.mapping
        rotation = v[3:6] * m.rotation_scale
        if m.rotation_frame == "world":  # the local axes' world directions are the rotation's columns
            rotation = np.array([proprio.rx, proprio.ry, proprio.rz], dtype=float) @ rotation
        self.carry[arm] += np.concatenate([v[:3] * m.position_scale * 1000.0, np.degrees(rotation)])
        out = []
        for i, (axis, (lo, hi)) in enumerate(AXES):
            asked = self.carry[arm][i]
            if abs(asked) < lo:
                continue
            amount = min(abs(asked), hi)
            self.carry[arm][i] = asked - np.sign(asked) * amount if abs(asked) <= hi else 0.0
            sign = sign_word(asked)
            if i < 3:
                out.append(_command("gripper.move_world", arm, self.arms, axis=axis, sign=sign, distance_mm=amount))
            else:
                out.append(_command("gripper.rotate_local", arm, self.arms, axis=axis, sign=sign, angle_deg=amount))
        close = bool(v[6] >= m.gripper_close_at)
        if close != bool(proprio.gripper_closed):
            out.append(_command("gripper.close" if close else "gripper.open", arm, self.arms))
        return out


def vectors_of(decisions: list[dict], arms: tuple[str, ...], closed: dict | None = None) -> np.ndarray:
    """The inverse, for robot commands (camera actions have no vector and are left out): one vector
    per command, local rotations, unit scales; ``closed`` (arm -> bool) is the grippers' start.
    The expert's commands become a policy's demonstration this way (and the tests' scripted server)."""
    grip = {arm: float(bool((closed or {}).get(arm, False))) for arm in arms}
    rows = []
    for d in decisions:
        name = d["action"]
        if name.startswith("camera."):
            continue
        row = np.zeros(PER_ARM * len(arms))
        moves = [(arms[0] if len(arms) == 1 else d.get("arm"), d)]
        if name == "dual_gripper.move_world":
            moves = [(side, d[side]) for side in arms]
        for arm, mv in moves:
            k = arms.index(arm)
            if name.endswith("move_world"):
                row[PER_ARM * k + MOVE_AXES.index(mv["axis"])] = sign_of(mv) * float(mv["distance_mm"]) / 1000.0
            elif name.endswith("rotate_local"):
                row[PER_ARM * k + 3 + ROTATE_AXES.index(mv["axis"])] = sign_of(mv) * np.radians(float(mv["angle_deg"]))
        if name.endswith((".open", ".close")):
            side = name.split("_gripper.")[0] if "_gripper." in name else d.get("arm", arms[0])
            for arm in arms if name.startswith("dual_gripper.") else (side,):
                grip[arm] = 1.0 if name.endswith(".close") else 0.0
        for k, arm in enumerate(arms):
            row[PER_ARM * k + 6] = grip[arm]
        rows.append(row)
    return np.array(rows).reshape(-1, PER_ARM * len(arms))
