"""place_single_bottle_upright (paper Table 23, row 4): stand the bottle on the green target pad."""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import RIGHT

from ..objects.common import PAD_HALF_HEIGHT, target_pad
from ..privileged import PrivilegedState
from ..sim.scene import TABLE_TOP_Z, World
from . import expert
from .base import PlaceOnPad
from .grasp_single_bottle_upright import GraspSingleBottleUpright, add_upright_bottle, grasp_by_the_cap
from .registry import register_task


@register_task()
class PlaceSingleBottleUpright(PlaceOnPad):
    TARGET = "bottle"
    name, arms, budget = "place_single_bottle_upright", (RIGHT,), 100
    MODELS = GraspSingleBottleUpright.MODELS  # held-out variants swap in unseen models
    MODEL_ID = GraspSingleBottleUpright.MODEL_ID  # the one fixed bottle; None (held-out): drawn per seed
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

    def expert(self, s: PrivilegedState):
        yield from grasp_by_the_cap(self, s)
        yield from expert.lift(s, RIGHT, self.LIFT_M + 0.01)
        # a top-down hand high over the pad's far corner is beyond the arm's reach: carry low
        yield from expert.lower_body_to(s, RIGHT, "bottle", self.rest_z(s) + self.CARRY_ABOVE_M)
        yield from expert.carry_over(s, RIGHT, "bottle", s.position("target_pad")[:2])
        yield from expert.lower_body_to(s, RIGHT, "bottle", self.rest_z(s) + self.RELEASE_ABOVE_M)
        yield {"action": "gripper.open"}
        yield from expert.lift(s, RIGHT, 0.05)
