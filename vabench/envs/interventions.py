"""What the interventions hand a model beyond the paper's boundary (vabench.core.interventions declares
each manifest): the task bodies' poses and sizes (``object_poses``) and the world point under a
pixel of the current image (``depth_point``). Both read simulator state on purpose; the env hands
them out only through its named intervention calls, never in an Observation.
"""

from __future__ import annotations

import math

import numpy as np
import sapien

from .sim.scene import World

_RING = 16  # points per end circle of a cylinder or capsule


def _part_points(part) -> np.ndarray:
    """Points on the surface of one primitive, in its body's frame (a hull that bounds it)."""
    if part.kind == "box":
        hx, hy, hz = part.size
        local = np.array([(x, y, z) for x in (-hx, hx) for y in (-hy, hy) for z in (-hz, hz)])
    elif part.kind == "sphere":
        r = part.size[0]
        local = np.vstack([np.eye(3) * r, -np.eye(3) * r])
    else:
        r, h = part.size
        a = np.linspace(0, 2 * np.pi, _RING, endpoint=False)
        ring = np.stack([r * np.cos(a), r * np.sin(a), np.zeros_like(a)], axis=1)
        ends = (h + r, -h - r) if part.kind == "capsule" else (h, -h)
        local = np.vstack([ring + (0, 0, h), ring - (0, 0, h), [(0, 0, ends[0]), (0, 0, ends[1])]])
    rot = sapien.Pose(list(part.p), list(part.q)).to_transformation_matrix()[:3, :3]
    return local @ rot.T + np.asarray(part.p)


def _min_rectangle(xy: np.ndarray) -> tuple[float, float, float, np.ndarray]:
    """The smallest-area rectangle around ``xy`` (yaw of its longer side in radians, in (-pi/2, pi/2];
    length, width, centre): a cube's yaw is its faces' (mod 90 degrees), a pen's its axis."""

    def fit(a):
        u = np.array([math.cos(a), math.sin(a)])
        p, q = xy @ u, xy @ np.array([-u[1], u[0]])
        return (p.max() - p.min()) * (q.max() - q.min()), a

    coarse = min(fit(math.radians(d)) for d in range(0, 180, 2))[1]
    best = min(fit(coarse + math.radians(d / 10)) for d in range(-20, 21))[1]
    u = np.array([math.cos(best), math.sin(best)])
    v = np.array([-u[1], u[0]])
    p, q = xy @ u, xy @ v
    (lp, hp), (lq, hq) = (p.min(), p.max()), (q.min(), q.max())
    centre = u * (lp + hp) / 2 + v * (lq + hq) / 2
    length, width = hp - lp, hq - lq
    if width > length:  # the yaw names the longer horizontal side
        best, length, width = best + math.pi / 2, width, length
    best = math.atan2(math.sin(best), math.cos(best))
    if best <= -math.pi / 2:
        best += math.pi
    elif best > math.pi / 2:
        best -= math.pi
    return best, float(length), float(width), centre


def object_poses(world: World) -> list[dict]:
    """Every task body (fixtures aside) now: its name, the centre of its bounding box in the world
    frame, the yaw of its long horizontal side (degrees from +x), its extent along and across that
    side and its height (metres), and whether it is static. Sorted by name."""
    out = []
    for name in sorted(world.bodies):
        body = world.bodies[name]
        m = body.matrix()
        points = np.vstack([_part_points(p) for p in body.spec.parts]) @ m[:3, :3].T + m[:3, 3]
        yaw, length, width, centre = _min_rectangle(points[:, :2])
        lo, hi = points[:, 2].min(), points[:, 2].max()
        out.append(
            {
                "name": name,
                "centre": [round(float(v), 4) for v in (*centre, (lo + hi) / 2)],
                "yaw_deg": round(math.degrees(yaw), 1),
                "size": [round(length, 4), round(width, 4), round(float(hi - lo), 4)],
                "static": bool(body.static),
            }
        )
    return out


def pixel_point(scene, camera, pose: np.ndarray, u: int, v: int) -> np.ndarray | None:
    """The world point seen at pixel (u, v) (column, row from the top left) by ``camera`` placed at
    ``pose``, unprojected from its depth buffer (the lean shader keeps depth, not positions); None
    where it sees no surface."""
    camera.entity.set_pose(sapien.Pose(pose))
    scene.update_render()
    camera.take_picture()
    depth = float(np.squeeze(camera.get_picture("GbufferDepth")[v, u]))  # [0, 1]; 1: nothing drawn
    if depth >= 1.0:
        return None
    ndc = np.array([(u + 0.5) / camera.width * 2 - 1, (v + 0.5) / camera.height * 2 - 1, depth, 1.0])
    view = np.linalg.inv(camera.get_projection_matrix()) @ ndc  # the projection flips y itself
    return (camera.get_model_matrix() @ (view / view[3]))[:3]
