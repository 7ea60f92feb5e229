"""place_single_bottle_upright (paper Table 23, row 4): stand the bottle on the green target pad."""

from __future__ import annotations

import numpy as np

from ..objects import PAD_HALF_HEIGHT, target_pad
from ..privileged import PrivilegedState
from ..scene import TABLE_TOP_Z, World
from . import expert
from .base import Task
from .grasp_single_bottle_upright import GraspSingleBottleUpright, add_upright_bottle, grasp_by_the_cap


class PlaceSingleBottleUpright(Task):
    name, arms, budget = "place_single_bottle_upright", ("right",), 100
    MODELS = GraspSingleBottleUpright.MODELS  # held-out variants swap in unseen models
    instruction = "Use the right arm to pick up the upright bottle and stand it on the green target area."
    labels = {"target_pad": "the green target pad"}
    BOTTLE_X, BOTTLE_Y = GraspSingleBottleUpright.X, GraspSingleBottleUpright.Y  # "as in the upright-grasp task"
    PAD_X, PAD_Y = (0.03, 0.09), (0.07, 0.13)
    PAD_HALF = 0.065
    LIFT_M = 0.050  # previously lifted >= 50 mm
    XY_TOL_M = 0.040  # |dx|, |dy| from the pad centre, each <=
    HEIGHT_TOL_M = 0.035  # |z - resting height on the pad| <=
    PAD_MOVE_M = 0.002  # pad displacement <= (static pad: holds by construction, as in VABench)
    CARRY_ABOVE_M = 0.015  # the expert carries the bottle this far above its resting height on the pad ...
    RELEASE_ABOVE_M = 0.003  # ... and lets go this far above it

    def build(self, world: World, rng: np.random.Generator) -> None:
        add_upright_bottle(self, world, rng, self.BOTTLE_X, self.BOTTLE_Y, GraspSingleBottleUpright.MASS)
        px, py = rng.uniform(*self.PAD_X), rng.uniform(*self.PAD_Y)
        world.add(target_pad("target_pad", (self.PAD_HALF, self.PAD_HALF)), (px, py, TABLE_TOP_Z + PAD_HALF_HEIGHT))

    def rest_z(self, s: PrivilegedState) -> float:
        """Where the bottle's origin sits when it stands on the pad: the pad top plus the height
        it sat at above the table (RoboTwin's object_support_offset)."""
        support = s.start["bottle"][2, 3] - TABLE_TOP_Z
        return float(s.position("target_pad")[2] + PAD_HALF_HEIGHT + support)

    def errors(self, s: PrivilegedState) -> np.ndarray:
        """|dx|, |dy| from the pad centre and |dz| from the resting height, metres."""
        d = s.position("bottle") - s.position("target_pad")
        return np.abs([d[0], d[1], s.position("bottle")[2] - self.rest_z(s)])

    def update(self, s: PrivilegedState) -> None:
        self.latch(s, "lifted", s.peak_lift("bottle") >= self.LIFT_M)

    def checkpoints(self, s: PrivilegedState) -> dict[str, bool]:
        dx, dy, _ = self.errors(s)
        over = dx <= self.XY_TOL_M and dy <= self.XY_TOL_M and s.held("bottle", "right")
        return {
            "grasped": self.latch(s, "grasped", s.held("bottle", "right")),
            "lifted": s.flags.get("lifted", False),
            "over_pad": self.latch(s, "over_pad", over and s.flags.get("lifted", False)),
            "placed": self.success(s),
        }

    def success(self, s: PrivilegedState) -> bool:
        dx, dy, dz = self.errors(s)
        return bool(
            s.flags.get("lifted", False)
            and dx <= self.XY_TOL_M
            and dy <= self.XY_TOL_M
            and dz <= self.HEIGHT_TOL_M
            and s.displacement("target_pad") <= self.PAD_MOVE_M
            and s.touching("bottle", "target_pad")
            and not s.closed("right")
        )

    def expert(self, s: PrivilegedState):
        yield from grasp_by_the_cap(self, s)
        yield from expert.lift(s, "right", self.LIFT_M + 0.01)
        # a top-down hand high over the pad's far corner is beyond the arm's reach: carry low
        yield from expert.lower_body_to(s, "right", "bottle", self.rest_z(s) + self.CARRY_ABOVE_M)
        yield from expert.carry_over(s, "right", "bottle", s.position("target_pad")[:2])
        yield from expert.lower_body_to(s, "right", "bottle", self.rest_z(s) + self.RELEASE_ABOVE_M)
        yield {"action": "gripper.open"}
        yield from expert.lift(s, "right", 0.05)
