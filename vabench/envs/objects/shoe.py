"""Procedural objects of place_shoe (paper Table 25, row 1): ten shoes and the blue target mat,
built from convex primitives (see sim/bodies.py). They replace RoboTwin's 041_shoe base0-9 meshes
(robotwin-task-notes sections 4.5 and 6).

Shoe frame, as RoboTwin's model frame: local +y up, local +z toward the toe, local x across the
width. The origin is the sole centre (the reference's functional point fp0), 1 cm above the
sole's bottom. Lying flat with the toe toward world -x, the shoe's quaternion is then exactly
the reference's target (0.5, 0.5, -0.5, -0.5), well away from w = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sim.bodies import BodySpec, Part, quat
from ..sim.geometry import axis_angle
from .common import box
from .tools import centre_of_mass

SOLE_HALF_THICKNESS = 0.010  # the origin sits this far above the sole's bottom
_UPRIGHT = quat(axis_angle([1, 0, 0], -np.pi / 2))  # a cylinder's axis (part z) -> shoe +y (up)


@dataclass(frozen=True)
class ShoeModel:
    """One shoe model id. Widths are across the shoe (what the jaw closes on: the upper); heights
    are above the sole's top. The upper covers the rear ``upper_fraction`` of the length, the
    lower toe cap the rest."""

    length: float
    sole_width: float
    upper_width: float
    upper_height: float
    toe_height: float
    upper_fraction: float
    upper_color: tuple[float, float, float]
    sole_color: tuple[float, float, float]


WHITE, DARK = (0.93, 0.93, 0.90), (0.15, 0.15, 0.16)
SHOE_MODELS = (  # lengths 0.20-0.26 m (RoboTwin base0: 0.219 x 0.080); uppers <= 64 mm for the 80 mm jaw
    ShoeModel(0.220, 0.076, 0.062, 0.065, 0.026, 0.67, (0.85, 0.15, 0.12), WHITE),  # red sneaker
    ShoeModel(0.200, 0.068, 0.054, 0.056, 0.022, 0.64, (0.98, 0.55, 0.10), WHITE),  # orange, child size
    ShoeModel(0.207, 0.070, 0.056, 0.060, 0.024, 0.66, (0.95, 0.80, 0.15), DARK),  # yellow
    ShoeModel(0.214, 0.072, 0.058, 0.070, 0.028, 0.70, (0.15, 0.55, 0.25), WHITE),  # green high-top
    ShoeModel(0.227, 0.074, 0.060, 0.062, 0.024, 0.63, (0.55, 0.25, 0.70), WHITE),  # purple runner
    ShoeModel(0.234, 0.076, 0.062, 0.066, 0.026, 0.67, (0.93, 0.93, 0.90), (0.85, 0.15, 0.12)),  # white, red sole
    ShoeModel(0.241, 0.077, 0.063, 0.068, 0.030, 0.68, (0.45, 0.28, 0.15), DARK),  # brown leather
    ShoeModel(0.248, 0.078, 0.064, 0.072, 0.028, 0.70, (0.10, 0.10, 0.12), WHITE),  # black boot
    ShoeModel(0.255, 0.078, 0.064, 0.060, 0.022, 0.62, (0.95, 0.40, 0.60), WHITE),  # pink low-cut
    ShoeModel(0.260, 0.078, 0.064, 0.070, 0.030, 0.66, (0.55, 0.57, 0.60), DARK),  # grey trainer
)


def shoe(name: str, model: ShoeModel | int = 0, mass: float = 0.05, friction: float = 0.7) -> BodySpec:
    """A shoe (``model``: a ShoeModel or an index into SHOE_MODELS): a flat sole with a rounded
    heel and toe, a tall upper with a rounded heel over the rear of the sole, and a lower toe
    cap in front of it. Frame: see the module docstring. It rests flat on the sole."""
    m = SHOE_MODELS[model] if isinstance(model, int) else model
    t, half_l = SOLE_HALF_THICKNESS, m.length / 2
    rs, ru = m.sole_width / 2, m.upper_width / 2
    parts = [  # sole: a box between two upright discs (rounded heel and toe in plan view)
        Part("box", (rs, t, half_l - rs), color=m.sole_color),
        Part("cylinder", (rs, t), p=(0.0, 0.0, -half_l + rs), q=_UPRIGHT, color=m.sole_color),
        Part("cylinder", (rs, t), p=(0.0, 0.0, half_l - rs), q=_UPRIGHT, color=m.sole_color),
    ]
    back, front = -half_l + rs - ru, -half_l + m.upper_fraction * m.length  # upper: heel and front ends
    y_up, hu = t + m.upper_height / 2, m.upper_height / 2
    parts += [
        Part("cylinder", (ru, hu), p=(0.0, y_up, back + ru), q=_UPRIGHT, color=m.upper_color),
        Part("box", (ru, hu, (front - back - ru) / 2), p=(0.0, y_up, (front + back + ru) / 2), color=m.upper_color),
    ]
    rt, toe = rs - 0.004, half_l - rs  # toe cap: just inside the sole's outline, overlapping the upper 5 mm
    y_toe, ht = t + m.toe_height / 2, m.toe_height / 2
    parts += [
        Part(
            "box", (rt, ht, (toe - front) / 2 + 0.005), p=(0.0, y_toe, (toe + front) / 2 - 0.005), color=m.upper_color
        ),
        Part("cylinder", (rt, ht), p=(0.0, y_toe, toe), q=_UPRIGHT, color=m.upper_color),
    ]
    return BodySpec(name, tuple(parts), mass=mass, friction=friction)


def grasp_point(spec: BodySpec, model: ShoeModel | int) -> np.ndarray:
    """The top-down grasp point in the shoe frame (the reference's contact point): on the centre
    line at the upper's mid-height, along the length at the centre of mass, so the turn in the
    grasp needs little torque."""
    m = SHOE_MODELS[model] if isinstance(model, int) else model
    return np.array([0.0, SOLE_HALF_THICKNESS + m.upper_height / 2, float(centre_of_mass(spec)[2])])


MAT_HALF = (0.13, 0.05, 0.0005)  # RoboTwin's mat: 26 x 10 cm, paper-thin
MAT_BLUE = (0.10, 0.30, 0.80)


def shoe_mat(name: str = "mat") -> BodySpec:
    """The static blue target mat. Origin at its centre; it lies on the table at z = table + MAT_HALF[2]."""
    return box(name, MAT_HALF, color=MAT_BLUE, mass=None)
