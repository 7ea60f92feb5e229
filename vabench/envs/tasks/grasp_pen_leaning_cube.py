"""grasp_pen_leaning_cube (paper Table 22, row 5): lift a pen that leans at 30 deg on a blue
support cube, without going for the cube."""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import RIGHT

from ..objects.common import BLUE, PEN_MODELS, cube, pen
from ..sim.geometry import axis_angle, matrix_to_quat
from ..sim.scene import TABLE_TOP_Z, World
from .grasp_single_pen import GraspSinglePen
from .registry import register_task


@register_task()
class GraspPenLeaningCube(GraspSinglePen):
    """The pen grasp, predicate and expert of grasp_single_pen; only the layout differs."""

    name, arms, budget = "grasp_pen_leaning_cube", (RIGHT,), 50
    instruction = (
        "Use the right arm to grasp the pen that leans diagonally on the blue cube and lift it up; "
        "the cube only supports the pen, do not grasp it."
    )
    labels = {"pen_support_cube": "the blue support cube"}
    X, Y, YAW_DEG = (0.16, 0.22), (-0.24, -0.20), 15.0  # the group: the pen's lower end
    LEAN_DEG = 30.0
    CUBE_HALF = 0.04  # static support cube
    LIFT_M = 0.050
    GRASP_AT = 0.5  # grasp point along the pen, as a fraction of its length from the lower end

    def build(self, world: World, rng: np.random.Generator) -> None:
        yaw = np.radians(rng.uniform(-self.YAW_DEG, self.YAW_DEG))
        x, y = rng.uniform(*self.X), rng.uniform(*self.Y)
        self.model_id = self.MODEL_ID  # grasp_single_pen's one fixed pen
        self.model = m = PEN_MODELS[self.model_id]
        lean = np.radians(self.LEAN_DEG)
        # Rest pose: the back end's lowest edge on the table, the underside on the cube's near top
        # edge (the cap is 1.5 mm thicker than the barrel and is what touches the edge).
        a, a_edge = m.apothem, m.cap_apothem
        z0 = TABLE_TOP_Z + a * np.cos(lean)
        t = (2 * self.CUBE_HALF + (a_edge - a) * np.cos(lean)) / np.sin(lean)  # along the axis
        reach = t * np.cos(lean) + a_edge * np.sin(lean) + self.CUBE_HALF  # pen end -> cube centre
        fwd = np.array([-np.sin(yaw), np.cos(yaw), 0.0])
        rot = axis_angle([0, 0, 1], yaw) @ axis_angle([1, 0, 0], lean)
        world.add(pen("pen", m), (x, y, z0 + 0.0005), tuple(matrix_to_quat(rot)))
        c = np.array([x, y, TABLE_TOP_Z + self.CUBE_HALF]) + reach * fwd
        world.add(
            cube("pen_support_cube", self.CUBE_HALF, BLUE, mass=None),
            tuple(c),
            (np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)),
        )
