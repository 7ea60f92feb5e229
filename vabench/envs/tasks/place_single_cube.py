"""place_single_cube (paper Table 23, row 3): put the red cube on a green target pad."""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import RIGHT

from ..objects.common import PAD_HALF_HEIGHT, RED, cube, target_pad
from ..privileged import PrivilegedState
from ..sim.scene import TABLE_TOP_Z, World
from . import expert
from .base import SPAWN_Z, PlaceOnPad
from .registry import register_task


@register_task()
class PlaceSingleCube(PlaceOnPad):
    TARGET = "cube"
    name, arms, budget = "place_single_cube", (RIGHT,), 100
    instruction = "Use the right arm to pick up the red cube and place it on the green target area."
    labels = {"target_pad": "the green target pad"}
    HALF, PAD_HALF = 0.025, 0.06  # cube and pad half sizes (reference: pad half 0.06 for the cube)
    CUBE_X, CUBE_Y, YAW_DEG = (0.18, 0.26), (-0.16, -0.06), 45.0  # as in grasp_single_cube
    PAD_X, PAD_Y = (0.10, 0.14), (0.00, 0.04)
    LIFT_M = 0.050  # previously lifted >= 50 mm
    XY_TOL_M = 0.035  # |dx|, |dy| between the cube and pad centres, each <=
    HEIGHT_TOL_M = 0.035  # |cube z - its resting height on the pad| <=
    PAD_MOVE_M = 0.002  # pad displacement <= (static, as in the reference: holds by construction)

    def build(self, world: World, rng: np.random.Generator) -> None:
        cx, cy = rng.uniform(*self.CUBE_X), rng.uniform(*self.CUBE_Y)
        self.yaw = np.radians(rng.uniform(-self.YAW_DEG, self.YAW_DEG))
        px, py = rng.uniform(*self.PAD_X), rng.uniform(*self.PAD_Y)
        world.add(
            cube("cube", self.HALF, RED, 0.01),
            (cx, cy, SPAWN_Z + self.HALF),
            (np.cos(self.yaw / 2), 0.0, 0.0, np.sin(self.yaw / 2)),
        )
        world.add(target_pad("target_pad", (self.PAD_HALF, self.PAD_HALF)), (px, py, TABLE_TOP_Z + PAD_HALF_HEIGHT))

    def expert(self, s: PrivilegedState):
        yield from expert.grasp_from_above(s, RIGHT, "cube", self.yaw, grasp_z=s.position("cube")[2])
        yield from expert.lift(s, RIGHT, 0.12)
        yield from expert.carry_over(s, RIGHT, "cube", s.position("target_pad")[:2])
        yield from expert.lower_body_to(s, RIGHT, "cube", self.rest_z(s) + 0.004)
        yield {"action": "gripper.open"}
        yield from expert.lift(s, RIGHT, 0.05)
