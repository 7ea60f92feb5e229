"""The scene's body description: a rigid body as a list of convex primitive parts.

A body is described once, as a list of primitive parts, and that description feeds both SAPIEN
(collision + visual shapes) and mplib's FCL planning world, so the planner sees exactly the
geometry the physics does. Concave objects (the bowl) are unions of convex parts. The builders
of concrete objects live in :mod:`vabench.envs.objects`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .geometry import matrix_to_quat


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


def quat(rot) -> tuple[float, float, float, float]:
    """A rotation matrix as a Part's ``q``: the quaternion as a tuple of floats."""
    return tuple(float(v) for v in matrix_to_quat(rot))
