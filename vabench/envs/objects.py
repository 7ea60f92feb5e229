"""Procedural objects built from convex primitives.

A body is described once, as a list of primitive parts, and that description feeds both SAPIEN
(collision + visual shapes) and mplib's FCL planning world, so the planner sees exactly the
geometry the physics does. Concave objects (the bowl) are unions of convex parts.

Sizes follow ../shared/reference/robotwin-task-notes.md section 6. Frames: z up, origin at the
point named in each builder's docstring.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .geometry import axis_angle, matrix_to_quat

RED = (0.9, 0.1, 0.1)
BLUE = (0.12, 0.35, 0.85)
BOWL_BLUE = (0.25, 0.45, 0.8)
BROWN = (0.45, 0.28, 0.15)


@dataclass(frozen=True)
class Part:
    """One convex primitive. ``kind`` is box (size = half extents), sphere (size = (radius,)),
    cylinder or capsule (size = (radius, half_length), axis along the part's local z)."""

    kind: str
    size: tuple[float, ...]
    p: tuple[float, float, float] = (0.0, 0.0, 0.0)
    q: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    color: tuple[float, float, float] = (0.7, 0.7, 0.7)

    def volume(self) -> float:
        if self.kind == "box":
            return 8.0 * float(np.prod(self.size))
        if self.kind == "sphere":
            return 4.0 / 3.0 * np.pi * self.size[0] ** 3
        r, h = self.size
        if self.kind == "cylinder":
            return float(np.pi * r * r * 2 * h)
        if self.kind == "capsule":
            return float(np.pi * r * r * 2 * h + 4.0 / 3.0 * np.pi * r**3)
        raise ValueError(f"unknown part kind {self.kind!r}")


@dataclass(frozen=True)
class BodySpec:
    """A rigid body: its parts, its mass (None for static) and its contact material."""

    name: str
    parts: tuple[Part, ...]
    mass: float | None = None  # None: static
    friction: float = 0.5
    restitution: float = 0.0

    @property
    def static(self) -> bool:
        return self.mass is None


def _q(rot) -> tuple[float, float, float, float]:
    return tuple(float(v) for v in matrix_to_quat(rot))


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
        parts.append(Part("box", (wall_thickness / 2, width / 2, slant / 2), p=tuple(center), q=_q(rot), color=color))
    for i in range(segments):  # a thin darker rim so the opening is easy to see
        a = 2 * np.pi * (i + 0.5) / segments
        rot = axis_angle([0, 0, 1], a) @ axis_angle([1, 0, 0], np.pi / 2)
        r = rim_radius + wall_thickness / 2 + 0.002
        center = (r * np.cos(a), r * np.sin(a), floor_thickness / 2 + height + 0.002)
        parts.append(Part("capsule", (0.004, width / 2 * 0.95), p=center, q=_q(rot), color=rim_color))
    return BodySpec(
        name,
        tuple(parts),
        mass=None,
        friction=0.3,
    )
