"""Procedural objects built from convex primitives: the colours and the common builders (box,
cube, bowl, target pad, pens, bottles).

A body is described once, as a list of primitive parts (the types are in sim/bodies.py), and that
description feeds both SAPIEN (collision + visual shapes) and mplib's FCL planning world, so the
planner sees exactly the geometry the physics does. Concave objects (the bowl) are unions of
convex parts.

Sizes follow ../shared/reference/robotwin-task-notes.md section 6. Frames: z up, origin at the
point named in each builder's docstring.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sim.bodies import BodySpec, Part, quat
from ..sim.geometry import axis_angle

RED = (0.9, 0.1, 0.1)
BLUE = (0.12, 0.35, 0.85)
BOWL_BLUE = (0.25, 0.45, 0.8)
BROWN = (0.45, 0.28, 0.15)


def box(name: str, half, color=RED, mass: float | None = 0.01, friction: float = 0.5) -> BodySpec:
    """A box with its origin at the centre."""
    half = tuple(float(h) for h in half)
    return BodySpec(name, (Part("box", half, color=color),), mass=mass, friction=friction)


def cube(name: str, half: float, color=RED, mass: float | None = 0.01) -> BodySpec:
    return box(name, (half, half, half), color=color, mass=mass)


def bowl(
    name: str = "bowl",
    floor_radius: float = 0.045,
    rim_radius: float = 0.065,
    height: float = 0.055,
    floor_thickness: float = 0.008,
    wall_thickness: float = 0.006,
    segments: int = 16,
    color=BOWL_BLUE,
    rim_color=BROWN,
) -> BodySpec:
    """A static concave bowl: a floor disk and ``segments`` outward-tilted wall slabs.

    Origin at the bottom centre. The inner radius grows from ``floor_radius`` at the floor to
    ``rim_radius`` at the rim, so a cube dropped near the centre slides to the middle.
    """
    tilt = np.arctan2(rim_radius - floor_radius, height)  # outward lean of the wall
    slant = float(np.hypot(height, rim_radius - floor_radius))
    mid_r = (floor_radius + rim_radius) / 2 + wall_thickness / 2
    width = 2 * np.pi * (rim_radius + wall_thickness) / segments * 1.08  # slight overlap, no gaps
    parts = [
        Part(
            "cylinder", (floor_radius + wall_thickness, floor_thickness / 2), p=(0, 0, floor_thickness / 2), color=color
        )
    ]
    for i in range(segments):
        a = 2 * np.pi * i / segments
        # slab frame: z along the slanted wall, x radial (outward), y tangential
        rot = axis_angle([0, 0, 1], a) @ axis_angle([0, 1, 0], tilt)
        center = np.array([mid_r * np.cos(a), mid_r * np.sin(a), floor_thickness / 2 + height / 2])
        parts.append(Part("box", (wall_thickness / 2, width / 2, slant / 2), p=tuple(center), q=quat(rot), color=color))
    for i in range(segments):  # a thin darker rim so the opening is easy to see
        a = 2 * np.pi * (i + 0.5) / segments
        rot = axis_angle([0, 0, 1], a) @ axis_angle([1, 0, 0], np.pi / 2)
        r = rim_radius + wall_thickness / 2 + 0.002
        center = (r * np.cos(a), r * np.sin(a), floor_thickness / 2 + height + 0.002)
        parts.append(Part("capsule", (0.004, width / 2 * 0.95), p=center, q=quat(rot), color=rim_color))
    return BodySpec(
        name,
        tuple(parts),
        mass=None,
        friction=0.3,
    )


GREEN = (0.08, 0.72, 0.28)  # RoboTwin's target colour (pads, the base cube)
PAD_HALF_HEIGHT = 0.003


def target_pad(name: str = "target_pad", half_xy=(0.065, 0.065), color=GREEN) -> BodySpec:
    """RoboTwin's flat green target area: a static box 6 mm thick. Origin at its centre, so it
    lies on the table at z = TABLE_TOP_Z + PAD_HALF_HEIGHT; its top is 2 * PAD_HALF_HEIGHT higher."""
    return box(name, (float(half_xy[0]), float(half_xy[1]), PAD_HALF_HEIGHT), color=color, mass=None)


@dataclass(frozen=True)
class PenModel:
    """One pen/marker model id: a polygonal barrel (flat faces, so a lying pen does not roll),
    a cap of another colour over the front end, 1.5 mm thicker than the barrel, a butt plug in
    the cap's colour at the back and optionally a pocket clip on the cap. Lengths in metres."""

    length: float  # back end to cap end
    apothem: float  # axis to a flat face of the barrel (half the width a gripper closes on)
    sides: int  # even: 6 (hexagonal) or 8 (octagonal)
    cap_length: float
    barrel_color: tuple[float, float, float]
    cap_color: tuple[float, float, float]
    clip: bool = False

    @property
    def cap_apothem(self) -> float:
        return self.apothem + 0.0015


PEN_MODELS = (
    # 0: whiteboard marker, white barrel, black cap (RoboTwin's 058_markpen is 0.19 x 0.03 m)
    PenModel(0.190, 0.0150, 8, 0.055, (0.93, 0.93, 0.90), (0.08, 0.08, 0.09)),
    # 1: slimmer marker, white barrel, red cap
    PenModel(0.185, 0.0140, 8, 0.050, (0.93, 0.93, 0.90), (0.85, 0.12, 0.10)),
    # 2: hexagonal pen, black barrel, yellow cap with a clip
    PenModel(0.180, 0.0125, 6, 0.050, (0.12, 0.12, 0.14), (0.95, 0.78, 0.15), clip=True),
)


def _prism(apothem: float, sides: int, start: float, end: float, color, axis: str) -> list[Part]:
    """A regular prism along local ``axis`` ("y" or "z") from ``start`` to ``end``: the union of
    sides/2 boxes, each spanning two opposite faces. Along y one flat face points down (-z), so a
    lying pen rests on it; along z the faces start at +x."""
    half_side = apothem * np.tan(np.pi / sides)
    mid, half_len = (start + end) / 2, (end - start) / 2
    if axis == "y":
        half, p, turn = (half_side, half_len, apothem), (0.0, mid, 0.0), [0, 1, 0]
    else:
        half, p, turn = (apothem, half_side, half_len), (0.0, 0.0, mid), [0, 0, 1]
    return [
        Part("box", half, p=p, q=quat(axis_angle(turn, 2 * np.pi * k / sides)), color=color) for k in range(sides // 2)
    ]


def pen(name: str, model: PenModel | int = 0, mass: float = 0.015, friction: float = 0.6) -> BodySpec:
    """A pen or marker (``model``: a PenModel or an index into PEN_MODELS). Origin at the back end
    on the axis, axis along local +y (cap toward +y), a flat face down, as RoboTwin's markpen:
    lying on the table its cap rests at z = table + cap_apothem."""
    m = PEN_MODELS[model] if isinstance(model, int) else model
    cap0 = m.length - m.cap_length
    parts = _prism(m.apothem, m.sides, 0.0, cap0 + 0.004, m.barrel_color, "y")
    parts += _prism(m.cap_apothem, m.sides, cap0, m.length, m.cap_color, "y")
    along_y = quat(axis_angle([1, 0, 0], -np.pi / 2))  # a cylinder's axis (part z) -> body +y
    parts.append(Part("cylinder", (0.8 * m.apothem, 0.0015), p=(0.0, -0.0015, 0.0), q=along_y, color=m.cap_color))
    if m.clip:
        clip = (0.0, cap0 + 0.35 * m.cap_length, m.cap_apothem + 0.0015)
        parts.append(Part("box", (0.003, 0.4 * m.cap_length, 0.0015), p=clip, color=m.cap_color))
    return BodySpec(name, tuple(parts), mass=mass, friction=friction)


@dataclass(frozen=True)
class BottleModel:
    """One bottle model id: a 12-gon body (flat faces, so a lying bottle does not roll) with a
    label band, a domed shoulder, a neck and a cap. Lengths in metres along the axis; ``radius``
    is the body's apothem, half the width across its flat faces (what a gripper closes on)."""

    radius: float
    body: float  # length of the straight body
    neck_radius: float
    neck: float
    cap_radius: float
    cap: float
    label: tuple[float, float]  # the label band, as fractions of the body length from its bottom
    color: tuple[float, float, float]
    label_color: tuple[float, float, float]
    cap_color: tuple[float, float, float]

    @property
    def shoulder(self) -> float:
        """From the top of the body to where the neck leaves the dome (it sinks 3 mm in)."""
        return float(np.sqrt(self.radius**2 - self.neck_radius**2)) - 0.003

    @property
    def cap_z(self) -> float:
        """The cap's centre above the origin (the middle of the body)."""
        return self.body / 2 + self.shoulder + self.neck + self.cap / 2

    @property
    def height(self) -> float:
        return self.body + self.shoulder + self.neck + self.cap


BOTTLE_SIDES = 12
BOTTLE_MODELS = (
    # 0: cola, 19 cm: dark body, red label and cap (RoboTwin's "Coca-Cola bottle with a red cap")
    BottleModel(0.032, 0.125, 0.012, 0.024, 0.0145, 0.016, (0.30, 0.70), (0.30, 0.12, 0.08), RED, RED),
    # 1: water, 19 cm, slim: pale blue, blue label, white cap
    BottleModel(0.029, 0.135, 0.011, 0.020, 0.0135, 0.014, (0.35, 0.65), (0.62, 0.80, 0.92), BLUE, (0.95, 0.95, 0.95)),
    # 2: soda, 18.5 cm, short body, long neck: green, yellow label, dark green cap
    BottleModel(
        0.030, 0.115, 0.0105, 0.030, 0.0125, 0.015, (0.25, 0.75), (0.2, 0.55, 0.28), (0.95, 0.8, 0.2), (0.1, 0.35, 0.15)
    ),
)


def bottle(name: str = "bottle", model: BottleModel | int = 0, mass: float = 0.05, friction: float = 0.5) -> BodySpec:
    """A capped bottle (``model``: a BottleModel or an index into BOTTLE_MODELS). Origin on the
    axis at the middle of the body (where a side grasp closes), axis along local +z, cap up, a
    flat face toward local -y. Standing, the origin is ``body / 2`` above the support; lying on
    that face (local z turned to world y), ``radius`` above it."""
    m = BOTTLE_MODELS[model] if isinstance(model, int) else model
    half, (lo, hi) = m.body / 2, m.label
    parts: list[Part] = []
    for f0, f1, color in ((0.0, lo, m.color), (lo, hi, m.label_color), (hi, 1.0, m.color)):
        parts += _prism(m.radius, BOTTLE_SIDES, (2 * f0 - 1) * half, (2 * f1 - 1) * half, color, "z")
    parts.append(Part("sphere", (m.radius,), p=(0.0, 0.0, half), color=m.color))  # the domed shoulder
    neck = half + m.shoulder
    parts.append(Part("cylinder", (m.neck_radius, m.neck / 2), p=(0.0, 0.0, neck + m.neck / 2), color=m.color))
    cap = neck + m.neck
    parts.append(Part("cylinder", (m.cap_radius, m.cap / 2), p=(0.0, 0.0, cap + m.cap / 2), color=m.cap_color))
    return BodySpec(name, tuple(parts), mass=mass, friction=friction)
