"""grasp_single_cube (paper Table 22, row 3): lift a red 5 cm cube off the table."""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import RIGHT

from ..objects.common import RED, cube
from ..privileged import PrivilegedState
from ..sim.scene import World
from . import expert
from .base import SPAWN_Z, GraspAndLift
from .registry import register_task


@register_task()
class GraspSingleCube(GraspAndLift):
    TARGET = "cube"
    name, arms, budget = "grasp_single_cube", (RIGHT,), 50
    instruction = "Use the right arm to grasp the red cube and lift it off the table."
    HALF = 0.025
    X, Y, YAW_DEG = (0.18, 0.26), (-0.16, -0.06), 45.0
    LIFT_M = 0.050
    MASS = 0.01

    def build(self, world: World, rng: np.random.Generator) -> None:
        x, y = rng.uniform(*self.X), rng.uniform(*self.Y)
        self.yaw = np.radians(rng.uniform(-self.YAW_DEG, self.YAW_DEG))
        world.add(
            cube("cube", self.HALF, RED, self.MASS),
            (x, y, SPAWN_Z + self.HALF),
            (np.cos(self.yaw / 2), 0.0, 0.0, np.sin(self.yaw / 2)),
        )

    def expert(self, s: PrivilegedState):
        yield from expert.grasp_from_above(s, RIGHT, "cube", self.yaw, grasp_z=s.position("cube")[2])
        yield from expert.lift(s, RIGHT, 0.12)
