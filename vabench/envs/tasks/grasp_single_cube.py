"""grasp_single_cube (paper Table 22, row 3): lift a red 5 cm cube off the table."""

from __future__ import annotations

import numpy as np

from ..objects import RED, cube
from ..privileged import PrivilegedState
from ..scene import World
from . import expert
from .base import SPAWN_Z, Task


class GraspSingleCube(Task):
    name, arms, budget = "grasp_single_cube", ("right",), 50
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

    def checkpoints(self, s: PrivilegedState) -> dict[str, bool]:
        return {
            "grasped": self.latch(s, "grasped", s.held("cube", "right")),
            "lifted": self.latch(s, "lifted", s.lift("cube") > self.LIFT_M and s.held("cube", "right")),
        }

    def success(self, s: PrivilegedState) -> bool:
        return s.lift("cube") > self.LIFT_M and s.closed("right")

    def expert(self, s: PrivilegedState):
        yield from expert.grasp_from_above(s, "right", "cube", self.yaw, grasp_z=s.position("cube")[2])
        yield from expert.lift(s, "right", 0.12)
