"""The long-horizon track's large open basket (robotwin-task-notes section 6, "Large basket":
VA-Bench's basket is not public, so this is the proposed open box), and the world AABB of any
body built from convex parts, which the basket's containment test reads.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from ..sim.bodies import BodySpec, Part

BASKET_COLOR = (0.15, 0.50, 0.62)  # teal: unlike the table, the pads and every object colour
BASKET_INNER = (0.40, 0.30)  # inner x, y (m): five objects in one layer with finger room (see the task)
BASKET_WALL_HEIGHT = 0.06  # above the floor
BASKET_WALL = 0.006
BASKET_FLOOR = 0.01


def large_basket(
    name: str = "basket",
    inner=BASKET_INNER,
    wall_height: float = BASKET_WALL_HEIGHT,
    wall: float = BASKET_WALL,
    floor: float = BASKET_FLOOR,
    color=BASKET_COLOR,
) -> BodySpec:
    """A static open box without a handle, so top-down drops stay clear. Origin at the bottom
    centre; the floor top is ``floor`` and the rim ``floor + wall_height`` above it. Static: it
    cannot be moved or grasped, and the planner keeps the arm off its walls."""
    hx, hy = inner[0] / 2, inner[1] / 2
    wz = floor + wall_height / 2
    parts = (
        Part("box", (hx + wall, hy + wall, floor / 2), p=(0.0, 0.0, floor / 2), color=color),
        Part("box", (hx + wall, wall / 2, wall_height / 2), p=(0.0, hy + wall / 2, wz), color=color),
        Part("box", (hx + wall, wall / 2, wall_height / 2), p=(0.0, -hy - wall / 2, wz), color=color),
        Part("box", (wall / 2, hy, wall_height / 2), p=(hx + wall / 2, 0.0, wz), color=color),
        Part("box", (wall / 2, hy, wall_height / 2), p=(-hx - wall / 2, 0.0, wz), color=color),
    )
    return BodySpec(name, parts, mass=None)


def world_aabb(spec: BodySpec, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of the body's parts at the 4x4 pose ``matrix``: exact per part (a box's rotated
    half extents, a cylinder's axis half length plus its disc, a capsule's plus its radius)."""
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for part in spec.parts:
        w, x, y, z = part.q
        rot = matrix[:3, :3] @ Rotation.from_quat([x, y, z, w]).as_matrix()
        c = matrix[:3, :3] @ np.asarray(part.p) + matrix[:3, 3]
        if part.kind == "box":
            half = np.abs(rot) @ np.asarray(part.size)
        elif part.kind == "sphere":
            half = np.full(3, part.size[0])
        else:  # cylinder or capsule, axis along the part's local z
            r, h = part.size
            a = np.abs(rot[:, 2])
            disc = r if part.kind == "capsule" else r * np.sqrt(np.clip(1.0 - a * a, 0.0, 1.0))
            half = a * h + disc
        lo, hi = np.minimum(lo, c - half), np.maximum(hi, c + half)
    return lo, hi
