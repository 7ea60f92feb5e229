"""place_cube_on_cube (paper Table 23, row 2): stack the red cube on the green base cube.

The paper's yaw range applies to the base cube; the red cube starts axis-aligned, as in the
reference implementation (robotwin-task-notes 4.2).
"""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import RIGHT

from ..objects.common import GREEN, RED, cube
from ..privileged import PrivilegedState
from ..sim.scene import World
from . import expert
from .base import SPAWN_Z, Task
from .registry import register_task


@register_task()
class PlaceCubeOnCube(Task):
    name, arms, budget = "place_cube_on_cube", (RIGHT,), 200
    instruction = "Use the right arm to pick up the red cube and stack it on top of the green cube."
    HALF = 0.025  # both cubes
    RED_X, RED_Y = (0.20, 0.26), (-0.14, -0.06)
    BASE_X, BASE_Y, YAW_DEG = (0.10, 0.14), (0.00, 0.04), 45.0
    RED_MASS, BASE_MASS = 0.01, 0.05
    LIFT_M = 0.050  # red cube previously lifted >= 50 mm
    OVERLAP_M = 0.002  # top faces overlap >= 2 mm on both world axes
    HEIGHT_TOL_M = 0.012  # |red z - (base z + cube size)| <=
    BASE_MOVE_M = 0.012  # base displacement <=

    def build(self, world: World, rng: np.random.Generator) -> None:
        rx, ry = rng.uniform(*self.RED_X), rng.uniform(*self.RED_Y)
        bx, by = rng.uniform(*self.BASE_X), rng.uniform(*self.BASE_Y)
        yaw = np.radians(rng.uniform(-self.YAW_DEG, self.YAW_DEG))
        world.add(cube("cube", self.HALF, RED, self.RED_MASS), (rx, ry, SPAWN_Z + self.HALF))
        world.add(
            cube("base_cube", self.HALF, GREEN, self.BASE_MASS),
            (bx, by, SPAWN_Z + self.HALF),
            (np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)),
        )

    def update(self, s: PrivilegedState) -> None:
        self.latch(s, "lifted", s.peak_lift("cube") >= self.LIFT_M)

    def _overlaps(self, s: PrivilegedState) -> bool:
        d = s.position("cube") - s.position("base_cube")
        return bool(max(abs(d[0]), abs(d[1])) <= 2 * self.HALF - self.OVERLAP_M)

    def checkpoints(self, s: PrivilegedState) -> dict[str, bool]:
        held = s.held("cube", RIGHT)
        return {
            "grasped": self.latch(s, "grasped", held),
            "lifted": s.flags.get("lifted", False),
            "above_base": self.latch(s, "above_base", held and self._overlaps(s) and s.flags.get("lifted", False)),
            "stacked": self.success(s),
        }

    def conditions(self, s: PrivilegedState) -> dict[str, bool]:
        """The terminal predicate's parts, in the paper's order; success is all of them."""
        height_err = s.position("cube")[2] - (s.position("base_cube")[2] + 2 * self.HALF)
        return {
            "lifted": s.flags.get("lifted", False),
            "overlap": self._overlaps(s),
            "height": bool(abs(height_err) <= self.HEIGHT_TOL_M),
            "base_still": s.displacement("base_cube") <= self.BASE_MOVE_M,
            "contact": s.touching("cube", "base_cube"),
            "open": not s.closed(RIGHT),
        }

    def success(self, s: PrivilegedState) -> bool:
        return all(self.conditions(s).values())

    def expert(self, s: PrivilegedState):
        yaw = 0.0  # the red cube starts axis-aligned
        yield from expert.grasp_from_above(s, RIGHT, "cube", yaw, grasp_z=s.position("cube")[2], avoid=("base_cube",))
        yield from expert.lift(s, RIGHT, 0.12)
        yield from expert.carry_over(s, RIGHT, "cube", s.position("base_cube")[:2])
        yield from expert.lower_body_to(s, RIGHT, "cube", s.position("base_cube")[2] + 2 * self.HALF + 0.003)
        yield {"action": "gripper.open"}
        yield from expert.lift(s, RIGHT, 0.05)
