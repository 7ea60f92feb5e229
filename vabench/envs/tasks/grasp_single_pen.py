"""grasp_single_pen (paper Table 22, row 4): lift a marker pen lying on the table."""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import RIGHT

from ..objects.common import PEN_MODELS, pen
from ..privileged import PrivilegedState
from ..sim.scene import TABLE_TOP_Z, World
from . import expert
from .base import GraspAndLift
from .registry import register_task


@register_task()
class GraspSinglePen(GraspAndLift):
    TARGET = "pen"
    name, arms, budget = "grasp_single_pen", (RIGHT,), 50
    instruction = "Use the right arm to grasp the pen lying on the table and lift it up."
    X, Y, YAW_DEG = (0.18, 0.26), (-0.20, -0.10), 30.0  # the pen's back end; the pen points +y
    LIFT_M = 0.050
    GRASP_AT = 0.45  # grasp point along the pen, as a fraction of its length from the back end
    MODEL_ID = 0  # one fixed pen, as in the reference (the marker, PEN_MODELS[0]); no per-seed draw

    def build(self, world: World, rng: np.random.Generator) -> None:
        x, y = rng.uniform(*self.X), rng.uniform(*self.Y)
        yaw = np.radians(rng.uniform(-self.YAW_DEG, self.YAW_DEG))
        self.model_id = self.MODEL_ID
        self.model = PEN_MODELS[self.model_id]
        world.add(
            pen("pen", self.model_id),
            (x, y, TABLE_TOP_Z + self.model.cap_apothem + 0.001),  # rests on its thicker cap
            (np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)),
        )

    def grasp_point(self, s: PrivilegedState) -> np.ndarray:
        """On the axis, GRASP_AT of the length from the end that is the origin (on the barrel, clear of the cap)."""
        return (s.matrix("pen") @ np.array([0.0, self.GRASP_AT * self.model.length, 0.0, 1.0]))[:3]

    def expert(self, s: PrivilegedState):
        m = s.matrix("pen")
        across = float(np.arctan2(m[1, 0], m[0, 0]))  # the pen's local x: close the fingers across it
        yield from expert.grasp_point_from_above(s, RIGHT, lambda: self.grasp_point(s), across)
        yield from expert.lift(s, RIGHT, 0.12)
