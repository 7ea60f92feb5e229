"""Procedural objects of the functional-contact and tool-use tasks (paper Table 24): a desk bell
and a claw hammer, built from convex primitives (see sim/bodies.py).

Both replace RoboTwin meshes (050_bell base0/base1, 020_hammer base0; robotwin-task-notes
section 6). Every part is a collision shape too, so no part may reach below a body's resting
face: a dome cannot be a sphere sunk into the table, it is a stack of thin tiers instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sim.bodies import BodySpec, Part, quat
from ..sim.geometry import axis_angle

# -- desk bell ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BellModel:
    """One bell model id: RoboTwin's base0 (13 cm) and base1 (its 0.8 scale)."""

    scale: float
    dome_color: tuple[float, float, float]
    base_color: tuple[float, float, float]
    mass: float

    # unscaled profile (model 0), metres
    BASE_R, BASE_H = 0.065, 0.012
    DOME_R, DOME_H, DOME_TIERS = 0.058, 0.043, 9
    STEM_R, STEM_H = 0.0035, 0.006
    KNOB_R, KNOB_H = 0.009, 0.007

    @property
    def height(self) -> float:
        """Top of the knob above the bell's origin (its bottom centre): the functional point."""
        return self.scale * (self.BASE_H + self.DOME_H + self.STEM_H + self.KNOB_H)


BELL_MODELS = (
    BellModel(1.0, dome_color=(0.80, 0.81, 0.84), base_color=(0.08, 0.08, 0.09), mass=0.4),  # chrome on black
    BellModel(0.8, dome_color=(0.86, 0.66, 0.22), base_color=(0.30, 0.16, 0.08), mass=0.3),  # brass on walnut
)


def bell(name: str, model_id: int) -> BodySpec:
    """A service bell: a flat round base, a dome (tiers following a spherical cap) and a small
    push knob on a stem at the apex. Origin at the bottom centre, axis along z; the knob top
    (``BELL_MODELS[model_id].height`` on the axis) is the press point.

    Dynamic and heavy (RoboTwin's bell is static): a static body is a planner obstacle, and the
    executor would refuse every move that touches it, so the bell could never be pressed."""
    m = BELL_MODELS[model_id]
    s = m.scale
    parts = [Part("cylinder", (s * m.BASE_R, s * m.BASE_H / 2), p=(0, 0, s * m.BASE_H / 2), color=m.base_color)]
    # dome: a spherical cap of base radius DOME_R and height DOME_H, as DOME_TIERS flat tiers
    cap_r = (m.DOME_R**2 + m.DOME_H**2) / (2 * m.DOME_H)
    z0, dz = m.BASE_H, m.DOME_H / m.DOME_TIERS
    for i in range(m.DOME_TIERS):
        mid = z0 + (i + 0.5) * dz  # radius at the tier's middle height
        r = float(np.sqrt(max(cap_r**2 - (mid - (z0 + m.DOME_H - cap_r)) ** 2, 0.0)))
        parts.append(Part("cylinder", (s * max(r, m.STEM_R * 2), s * dz / 2), p=(0, 0, s * mid), color=m.dome_color))
    top = z0 + m.DOME_H
    parts.append(
        Part("cylinder", (s * m.STEM_R, s * m.STEM_H / 2), p=(0, 0, s * (top + m.STEM_H / 2)), color=m.dome_color)
    )
    knob_z = top + m.STEM_H + m.KNOB_H / 2
    parts.append(Part("cylinder", (s * m.KNOB_R, s * m.KNOB_H / 2), p=(0, 0, s * knob_z), color=(0.12, 0.12, 0.13)))
    return BodySpec(name, tuple(parts), mass=m.mass, friction=0.8)


# -- claw hammer ----------------------------------------------------------------------------

STEEL = (0.62, 0.64, 0.68)
WOOD = (0.93, 0.74, 0.27)
RUBBER = (0.09, 0.09, 0.10)

HAMMER_HALF_THICKNESS = 0.015  # lying on its side: the origin is this high above the table
HAMMER_FACE = np.array([0.0, -0.065, 0.0])  # striking-face centre (functional point), local
HAMMER_FACE_NORMAL = np.array([0.0, -1.0, 0.0])  # out of the face, local
HAMMER_GRIP = (0.13, 0.26)  # rubber grip along local x (the handle axis)


def hammer(name: str = "hammer", mass: float = 0.1) -> BodySpec:
    """A claw hammer lying on its side. Origin at the eye (where the handle enters the head),
    local x along the handle (head at x = 0, grip end at x = 0.26), local -y toward the round
    striking face (its centre is ``HAMMER_FACE``), +y toward the split claw, z up. It rests
    flat on the head and the rubber grip, both 30 mm thick.

    One density for every part (BodySpec has one mass), so the centre of mass lies on the
    handle near the grip: a grasp on the grip's front end holds it with little torque."""
    t = HAMMER_HALF_THICKNESS
    parts = [
        Part("box", (0.016, 0.016, t), color=STEEL),  # eye
        Part("cylinder", (0.011, 0.0145), p=(0, -0.0305, 0), q=quat(axis_angle([1, 0, 0], np.pi / 2)), color=STEEL),
        Part("cylinder", (t, 0.010), p=(0, -0.055, 0), q=quat(axis_angle([1, 0, 0], np.pi / 2)), color=STEEL),  # face
    ]
    for side in (-1, 1):  # split claw, curving back toward the handle
        rot = axis_angle([0, 0, 1], -0.35)
        parts.append(Part("box", (0.007, 0.024, 0.0055), p=(0.008, 0.036, side * 0.0075), q=quat(rot), color=STEEL))
    g0, g1 = HAMMER_GRIP
    parts.append(Part("box", ((g0 - 0.016) / 2, 0.011, 0.011), p=((g0 + 0.016) / 2, 0, 0), color=WOOD))  # shaft
    parts.append(Part("box", ((g1 - g0) / 2, 0.014, t), p=((g0 + g1) / 2, 0, 0), color=RUBBER))  # grip
    return BodySpec(name, tuple(parts), mass=mass, friction=0.6)


def centre_of_mass(spec: BodySpec) -> np.ndarray:
    """Volume-weighted centre of the parts, in the body frame (one density, as sim/scene.py uses)."""
    v = np.array([p.volume() for p in spec.parts])
    return (v[:, None] * np.array([p.p for p in spec.parts])).sum(0) / v.sum()
