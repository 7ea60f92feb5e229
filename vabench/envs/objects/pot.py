"""The kitchen pot of lift_pot (paper Table 25, row 3), built from convex primitives (see
sim/bodies.py). It replaces RoboTwin's articulated 060_kitchenpot (models 100015 and 100023, not
published; robotwin-task-notes sections 4.7 and 6): a single rigid body is enough, since the
reference's lid joint stays idle.

An open pot: a polygonal wall ring of thin boxes on a floor disk, and two handle bars sticking
straight out along local +-x. A handle is grasped top-down with the jaw closing across the bar
(along local y), so the 6 cm thickness of the Panda hand, not its 20 cm width, lies along the
pot's radius: the grasp point is far enough out for the fingers and hand to fit beside the wall.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sim.bodies import BodySpec, Part, quat
from ..sim.geometry import axis_angle

POT_ORIGIN_HEIGHT = 0.056  # origin above the pot's bottom: RoboTwin's root rests at 0.74 + 0.056
POT_WALL, POT_FLOOR = 0.006, 0.008  # thicknesses
POT_SIDES = 14  # wall segments; even, so two flat faces point along +-x for the handles
HANDLE_COLOR = (0.10, 0.10, 0.11)


@dataclass(frozen=True)
class PotModel:
    """One pot model id. Lengths in metres; heights above the pot's bottom. ``handle_width`` is
    the bar's extent along local y: what the 8 cm jaw closes on."""

    radius: float  # apothem of the wall ring (axis to a flat outer face)
    height: float  # bottom to rim
    handle: str  # "flat" (a box bar) or "round" (a capsule bar)
    handle_z: float  # the bar's axis height
    handle_length: float  # how far the bar reaches out from the wall
    handle_width: float
    handle_thickness: float  # vertical extent (the round bar's is its diameter)
    grasp_out: float  # the grasp point's distance out from the wall, along the bar
    color: tuple[float, float, float]
    mass: float = 0.2

    def grasp_points(self) -> tuple[np.ndarray, np.ndarray]:
        """(left, right) handle grasp points in the body frame: the -x and the +x handle."""
        r, z = self.radius + self.grasp_out, self.handle_z - POT_ORIGIN_HEIGHT
        return np.array([-r, 0.0, z]), np.array([r, 0.0, z])


POT_MODELS = (
    # 0: wide saucepot, steel, flat black bars. Grasp points at +-0.128 and +-0.114 (model 1), as
    # RoboTwin's handle contacts (+-0.115-0.125); the bars reach a little further out than its
    # ~0.24 m, so the fingers stay on them.
    PotModel(0.088, 0.105, "flat", 0.082, 0.060, 0.022, 0.014, 0.040, (0.72, 0.74, 0.77)),
    # 1: narrower, taller stockpot, red enamel, round black bars
    PotModel(0.076, 0.125, "round", 0.098, 0.058, 0.018, 0.018, 0.038, (0.70, 0.16, 0.12)),
)


def _handle(m: PotModel, side: int) -> Part:
    """One bar along local ``side`` * x, from 3 mm inside the wall to ``handle_length`` out."""
    r0, r1 = m.radius - 0.003, m.radius + m.handle_length
    z = m.handle_z - POT_ORIGIN_HEIGHT
    if m.handle == "flat":
        half = ((r1 - r0) / 2, m.handle_width / 2, m.handle_thickness / 2)
        return Part("box", half, p=(side * (r0 + r1) / 2, 0.0, z), color=HANDLE_COLOR)
    radius = m.handle_width / 2  # a capsule: its length includes the two round ends
    along_x = quat(axis_angle([0, 1, 0], np.pi / 2))
    return Part(
        "capsule", (radius, (r1 - r0) / 2 - radius), p=(side * (r0 + r1) / 2, 0.0, z), q=along_x, color=HANDLE_COLOR
    )


def pot(name: str = "pot", model_id: int = 0) -> BodySpec:
    """An open pot with two side handles (``POT_MODELS[model_id]``). Origin on the axis
    ``POT_ORIGIN_HEIGHT`` above the bottom, z up, handles along local -x (left) and +x (right);
    ``grasp_points()`` gives the handle grasp points in this frame."""
    m = POT_MODELS[model_id]
    bottom = -POT_ORIGIN_HEIGHT
    parts = [
        Part("cylinder", (m.radius - POT_WALL / 2, POT_FLOOR / 2), p=(0, 0, bottom + POT_FLOOR / 2), color=m.color)
    ]
    half_side = m.radius * np.tan(np.pi / POT_SIDES) * 1.04  # a slight overlap: no gaps at the corners
    for k in range(POT_SIDES):
        a = 2 * np.pi * k / POT_SIDES
        r = m.radius - POT_WALL / 2
        centre = (r * np.cos(a), r * np.sin(a), bottom + m.height / 2)
        half = (POT_WALL / 2, half_side, m.height / 2)
        parts.append(Part("box", half, p=centre, q=quat(axis_angle([0, 0, 1], a)), color=m.color))
    parts += [_handle(m, -1), _handle(m, 1)]
    return BodySpec(name, tuple(parts), mass=m.mass, friction=0.8)
