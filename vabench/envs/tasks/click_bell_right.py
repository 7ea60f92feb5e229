"""click_bell_right (paper Table 24, row 1): press the top of a desk bell with the closed gripper."""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import RIGHT

from ..objects.tools import BELL_MODELS, bell
from ..privileged import PrivilegedState
from ..sim.scene import World
from . import expert
from .base import SPAWN_Z, Task
from .registry import register_task

FINGERTIP_BELOW_GC = 0.0092  # closed top-down Panda fingertips reach this far below GC


@register_task()
class ClickBellRight(Task):
    name, arms, budget = "click_bell_right", (RIGHT,), 50
    instruction = "Use the right arm to press the top centre of the bell with the closed gripper."
    X, Y = (0.12, 0.26), (-0.18, -0.04)
    MODEL_IDS = (0, 1)
    XY_TOL_M = 0.025  # a finger contact point within 25 mm of the functional point in x and in y ...
    Z_TOL_M = 0.030  # ... and within 30 mm in z
    PRESS_M = 0.004  # the expert aims this far into the knob

    def build(self, world: World, rng: np.random.Generator) -> None:
        x, y = rng.uniform(*self.X), rng.uniform(*self.Y)
        self.model_id = int(rng.choice(self.MODEL_IDS))  # drawn after the pose, as in RoboTwin
        world.add(bell("bell", self.model_id), (x, y, SPAWN_Z))

    def functional_point(self, s: PrivilegedState) -> np.ndarray:
        """The knob top, on the bell's axis."""
        return (s.matrix("bell") @ np.array([0.0, 0.0, BELL_MODELS[self.model_id].height, 1.0]))[:3]

    def near_functional_point(self, points, fp) -> bool:
        """Some contact point within the paper's per-axis tolerances of the functional point."""
        return any(
            abs(p[0] - fp[0]) < self.XY_TOL_M and abs(p[1] - fp[1]) < self.XY_TOL_M and abs(p[2] - fp[2]) < self.Z_TOL_M
            for p in points
        )

    def update(self, s: PrivilegedState) -> None:  # latched, as RoboTwin's stage_success_tag
        pressed = s.closed(RIGHT) and self.near_functional_point(
            s.contact_points("bell", RIGHT), self.functional_point(s)
        )
        self.latch(s, "pressed", pressed)

    def checkpoints(self, s: PrivilegedState) -> dict[str, bool]:
        return {
            "touched": self.latch(s, "touched", s.touching("bell", RIGHT)),
            "pressed": s.flags.get("pressed", False),
        }

    def success(self, s: PrivilegedState) -> bool:
        return s.flags.get("pressed", False)

    def expert(self, s: PrivilegedState):
        yield from expert.to_topdown(s, RIGHT)
        yield {"action": "gripper.close"}
        fp = self.functional_point(s)
        yield from expert.move_gc(s, RIGHT, (fp[0], fp[1], fp[2] + FINGERTIP_BELOW_GC + 0.04), axes="zxy")
        fp = self.functional_point(s)
        yield from expert.move_gc(s, RIGHT, (fp[0], fp[1], fp[2] + FINGERTIP_BELOW_GC - self.PRESS_M), axes="xyz")
