"""place_cube_in_bowl (paper Table 23, row 1): put a red 4 cm cube into a static bowl."""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import RIGHT

from ..objects.common import RED, bowl, cube
from ..privileged import PrivilegedState
from ..sim.scene import World
from . import expert
from .base import SPAWN_Z, Task
from .registry import register_task


@register_task()
class PlaceCubeInBowl(Task):
    name, arms, budget = "place_cube_in_bowl", (RIGHT,), 50
    instruction = "Use the right arm to pick up the red cube and place it inside the bowl."
    labels = {"bowl": "the bowl"}
    HALF = 0.02
    CUBE_X, CUBE_Y, YAW_DEG = (0.22, 0.27), (-0.17, -0.10), 45.0
    BOWL_X, BOWL_Y = (0.10, 0.14), (0.00, 0.04)
    LIFT_M = 0.050  # previously lifted >= 50 mm
    RADIUS_M = 0.055  # horizontal cube-bowl centre distance <
    HEIGHT_M = (0.015, 0.095)  # cube centre above the bowl origin (its bottom)
    BOWL_MOVE_M = 0.005  # the paper's check; our bowl is static, as in VABench, so it holds by construction
    RELEASE_ABOVE_BOWL = 0.05  # the expert's release height of the cube centre

    def build(self, world: World, rng: np.random.Generator) -> None:
        bx, by = rng.uniform(*self.BOWL_X), rng.uniform(*self.BOWL_Y)
        cx, cy = rng.uniform(*self.CUBE_X), rng.uniform(*self.CUBE_Y)
        self.yaw = np.radians(rng.uniform(-self.YAW_DEG, self.YAW_DEG))
        world.add(bowl("bowl"), (bx, by, SPAWN_Z))
        world.add(
            cube("cube", self.HALF, RED, 0.01),
            (cx, cy, SPAWN_Z + self.HALF),
            (np.cos(self.yaw / 2), 0.0, 0.0, np.sin(self.yaw / 2)),
        )

    def _in_bowl(self, s: PrivilegedState) -> bool:
        d = s.position("cube") - s.position("bowl")
        return bool(np.hypot(d[0], d[1]) < self.RADIUS_M and self.HEIGHT_M[0] < d[2] < self.HEIGHT_M[1])

    def update(self, s: PrivilegedState) -> None:
        self.latch(s, "lifted", s.peak_lift("cube") >= self.LIFT_M)

    def checkpoints(self, s: PrivilegedState) -> dict[str, bool]:
        d = s.position("cube") - s.position("bowl")
        above = np.hypot(d[0], d[1]) < self.RADIUS_M and s.held("cube", RIGHT)
        return {
            "grasped": self.latch(s, "grasped", s.held("cube", RIGHT)),
            "lifted": s.flags.get("lifted", False),
            "above_bowl": self.latch(s, "above_bowl", above and s.flags.get("lifted", False)),
            "released_in_bowl": self.success(s),
        }

    def success(self, s: PrivilegedState) -> bool:
        return (
            s.flags.get("lifted", False)
            and self._in_bowl(s)
            and s.displacement("bowl") < self.BOWL_MOVE_M
            and s.touching("cube", "bowl")
            and not s.closed(RIGHT)
        )

    def expert(self, s: PrivilegedState):
        yield from expert.grasp_from_above(s, RIGHT, "cube", self.yaw, grasp_z=s.position("cube")[2], avoid=("bowl",))
        yield from expert.lift(s, RIGHT, 0.12)
        yield from expert.carry_over(s, RIGHT, "cube", s.position("bowl")[:2])
        yield from expert.lower_body_to(s, RIGHT, "cube", s.position("bowl")[2] + self.RELEASE_ABOVE_BOWL)
        yield {"action": "gripper.open"}
        yield from expert.lift(s, RIGHT, 0.05)
