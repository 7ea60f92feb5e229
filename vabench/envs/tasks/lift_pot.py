"""lift_pot (paper Table 25, row 3): grasp the pot's two side handles, one arm each, and lift the
pot level with one synchronised move of both arms."""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import LEFT, RIGHT

from ..actions import MOVE_MM
from ..objects.pot import POT_MODELS, POT_ORIGIN_HEIGHT, pot
from ..privileged import PrivilegedState
from ..sim.robot import ARMS
from ..sim.scene import World
from . import expert
from .base import SPAWN_Z, Task
from .registry import register_task


@register_task()
class LiftPot(Task):
    name, arms, budget = "lift_pot", (LEFT, RIGHT), 50
    instruction = "Grasp one side handle of the pot with each arm, then lift the pot upright and level."
    X, Y, YAW_DEG = (-0.05, 0.05), (-0.05, 0.05), 22.5  # handles on world -x / +x at yaw 0
    # Table 25, row 3 (no gripper condition):
    POT_Z_M = 0.82  # pot origin above 0.82 m; it rests at 0.796 (0.056 above the table), so ~24 mm lift
    TCP_TOL_M = 0.030  # each arm's TCP (its GC) within 30 mm of its handle's grasp point
    UPRIGHT_DOT = 0.8  # pot up-axis . world z
    PRE_M = 0.08  # the expert's hover above the handles before the joint descent
    LIFT_M = 0.08  # and its joint lift (RoboTwin: 0.88 - root z, about 8.4 cm)

    def build(self, world: World, rng: np.random.Generator) -> None:
        self.model_id = int(rng.integers(len(POT_MODELS)))  # drawn first, as in RoboTwin
        self.model = POT_MODELS[self.model_id]
        x, y = rng.uniform(*self.X), rng.uniform(*self.Y)
        yaw = np.radians(rng.uniform(-self.YAW_DEG, self.YAW_DEG))
        world.add(
            pot("pot", self.model_id), (x, y, SPAWN_Z + POT_ORIGIN_HEIGHT), (np.cos(yaw / 2), 0, 0, np.sin(yaw / 2))
        )

    # -- predicate -------------------------------------------------------------------------
    def handle_point(self, s: PrivilegedState, arm: str) -> np.ndarray:
        """World grasp point of ``arm``'s handle (left: the pot's -x handle, right: +x)."""
        local = self.model.grasp_points()[ARMS.index(arm)]
        return (s.matrix("pot") @ np.append(local, 1.0))[:3]

    def at_handle(self, s: PrivilegedState, arm: str) -> bool:
        return bool(np.linalg.norm(s.gc(arm) - self.handle_point(s, arm)) < self.TCP_TOL_M)

    def conditions(self, s: PrivilegedState) -> dict[str, bool]:
        """The paper's predicate, part by part; success is all of them."""
        return {
            "pot_z": bool(s.position("pot")[2] > self.POT_Z_M),
            "left_tcp": self.at_handle(s, LEFT),
            "right_tcp": self.at_handle(s, RIGHT),
            "upright": bool(s.matrix("pot")[2, 2] > self.UPRIGHT_DOT),
        }

    def success(self, s: PrivilegedState) -> bool:
        return all(self.conditions(s).values())

    def checkpoints(self, s: PrivilegedState) -> dict[str, bool]:
        c = self.conditions(s)
        left = self.latch(s, "left_grasp", s.held("pot", LEFT) and c["left_tcp"])
        right = self.latch(s, "right_grasp", s.held("pot", RIGHT) and c["right_tcp"])
        return {
            "left_grasp": left,
            "right_grasp": right,
            "lifted": self.latch(s, "lifted", left and right and c["pot_z"] and c["left_tcp"] and c["right_tcp"]),
            "level": self.success(s),
        }

    # -- expert ----------------------------------------------------------------------------
    def expert(self, s: PrivilegedState):
        for arm in ARMS:
            yield from expert.to_topdown(s, arm)
            yield from self.turn_across(s, arm)
        hover = {arm: self.handle_point(s, arm) + (0.0, 0.0, self.PRE_M) for arm in ARMS}
        yield from move_both(s, hover, axes="zxy")
        yield from move_both(s, {arm: self.handle_point(s, arm) for arm in ARMS}, axes="zxy")
        yield {"action": "dual_gripper.close"}
        yield from move_both(s, {arm: s.gc(arm) + (0.0, 0.0, self.LIFT_M) for arm in ARMS}, axes="z")

    def turn_across(self, s: PrivilegedState, arm: str):
        """Yaw the top-down gripper about rx until its closing axis ry runs across the bar and its
        palm normal rz points in at the pot, so the two arms mirror each other. The planner turns
        the wrist partly with the shoulder (joint 1): this way each shoulder turns in, toward the
        pot; the other turn (180 deg apart) turns it out, and reaching back in later can sweep its
        housing into the table edge."""
        rot = s.gripper_rotation(arm)
        inward = s.position("pot") - self.handle_point(s, arm)
        inward[2] = 0.0
        want = np.cross(inward, rot[:, 0])  # ry = rz x rx, with rz inward
        yield from expert.rotate(s, arm, "rx", expert.signed_angle_deg(rot[:, 1], want, rot[:, 0]))


def move_both(s: PrivilegedState, targets: dict[str, np.ndarray], axes: str, tol_mm: float = 1.0):
    """Bring each arm's GC to its target axis by axis: one dual_gripper.move_world while both
    arms still have to go along the axis (<= 100 mm each), a single-arm move for the last one;
    re-measured after every move."""
    for axis in axes:
        i = "xyz".index(axis)
        for _ in range(8):
            err = {arm: (float(targets[arm][i]) - float(s.gc(arm)[i])) * 1000.0 for arm in ARMS}
            todo = [arm for arm in ARMS if abs(err[arm]) >= max(tol_mm, MOVE_MM[0])]
            if not todo:
                break
            moves = {
                arm: {
                    "axis": axis,
                    "sign": "+" if err[arm] > 0 else "-",
                    "distance_mm": round(min(abs(err[arm]), MOVE_MM[1]), 1),
                }
                for arm in todo
            }
            if len(todo) == 2:
                yield {"action": "dual_gripper.move_world", **moves}
            else:
                yield {"action": "gripper.move_world", "arm": todo[0], **moves[todo[0]]}
