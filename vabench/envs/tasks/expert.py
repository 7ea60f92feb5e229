"""Shared motions for the scripted experts. Each helper is a generator of protocol actions that
re-reads the privileged state after every action, exactly like a closed-loop model would
re-read its observation, so the experts prove that the model's action space suffices.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from ..actions import MOVE_AXES, MOVE_MM, ROTATE_DEG, sign_word
from ..privileged import PrivilegedState

DOWN = np.array([0.0, 0.0, -1.0])


def _arm_field(s: PrivilegedState, arm: str) -> dict:
    return {"arm": arm} if len(s.controlled) > 1 else {}


def move_gc(s: PrivilegedState, arm: str, target, axes: str = "xyz", tol_mm: float = 1.0) -> Iterator[dict]:
    """World-axis moves (<= 100 mm each) until GC is within ``tol_mm`` of ``target`` per axis."""
    for axis in axes:
        i = MOVE_AXES.index(axis)
        for _ in range(8):  # a move can stop short (clamp, contact); re-measure and retry
            err_mm = (float(target[i]) - float(s.gc(arm)[i])) * 1000.0
            if abs(err_mm) < max(tol_mm, MOVE_MM[0]):
                break
            d = min(abs(err_mm), MOVE_MM[1])
            yield {
                "action": "gripper.move_world",
                "axis": axis,
                "sign": sign_word(err_mm),
                "distance_mm": round(d, 1),
                **_arm_field(s, arm),
            }


def rotate(s: PrivilegedState, arm: str, axis: str, angle_deg: float) -> Iterator[dict]:
    """A signed local rotation, split into protocol-sized pieces (skips < 1 deg)."""
    remaining = angle_deg
    while abs(remaining) >= ROTATE_DEG[0]:
        piece = math.copysign(min(abs(remaining), ROTATE_DEG[1]), remaining)
        yield {
            "action": "gripper.rotate_local",
            "axis": axis,
            "sign": sign_word(piece),
            "angle_deg": round(abs(piece), 2),
            **_arm_field(s, arm),
        }
        remaining -= piece


def signed_angle_deg(v_from, v_to, axis) -> float:
    v_from, v_to, axis = (np.asarray(v, dtype=float) for v in (v_from, v_to, axis))
    return math.degrees(math.atan2(float(np.cross(v_from, v_to) @ axis), float(v_from @ v_to)))


def to_topdown(s: PrivilegedState, arm: str) -> Iterator[dict]:
    """Pitch the approach axis straight down by rotating about the closing axis ry."""
    rot = s.gripper_rotation(arm)
    yield from rotate(s, arm, "ry", signed_angle_deg(rot[:, 0], DOWN, rot[:, 1]))


def align_closing_axis(
    s: PrivilegedState, arm: str, yaw_rad: float, symmetry_deg: float = 90.0, avoid_dirs=()
) -> Iterator[dict]:
    """Yaw a top-down gripper about rx so ry is perpendicular to faces at ``yaw_rad`` (mod
    symmetry). The hand is 20 cm wide along ry, so with ``avoid_dirs`` (unit xy directions to
    nearby static obstacles) prefer the option whose ry is most nearly perpendicular to them;
    among equals, the smallest turn."""
    rot = s.gripper_rotation(arm)
    options = []
    for k in range(int(round(360 / symmetry_deg))):
        a = yaw_rad + math.radians(k * symmetry_deg)
        want = np.array([math.cos(a), math.sin(a), 0.0])
        ang = signed_angle_deg(rot[:, 1], want, rot[:, 0])
        exposure = max((abs(want[:2] @ d) for d in avoid_dirs), default=0.0)
        options.append((round(exposure, 1), abs(ang), ang))
    yield from rotate(s, arm, "rx", min(options)[2])


def grasp_from_above(
    s: PrivilegedState,
    arm: str,
    body: str,
    yaw_rad: float,
    grasp_z: float,
    pre_height: float = 0.09,
    symmetry_deg: float = 90.0,
    avoid: tuple[str, ...] = (),
) -> Iterator[dict]:
    """Top-down grasp: turn down, align yaw (keeping the wide hand clear of ``avoid`` bodies),
    go above, descend, close."""
    yield from to_topdown(s, arm)
    here = s.position(body)[:2]
    dirs = [(s.position(b)[:2] - here) / max(np.linalg.norm(s.position(b)[:2] - here), 1e-9) for b in avoid]
    yield from align_closing_axis(s, arm, yaw_rad, symmetry_deg, dirs)
    p = s.position(body)
    yield from move_gc(s, arm, (p[0], p[1], grasp_z + pre_height), axes="zxy")
    p = s.position(body)  # re-read: nothing should have moved, but the model would look again
    yield from move_gc(s, arm, (p[0], p[1], grasp_z), axes="xyz")
    yield {"action": "gripper.close", **_arm_field(s, arm)}


def grasp_point_from_above(
    s: PrivilegedState, arm: str, point, yaw_rad: float, pre_height: float = 0.09, symmetry_deg: float = 180.0
) -> Iterator[dict]:
    """Top-down grasp at a chosen point of a long body (a pen's barrel, not its origin):
    ``point()`` returns that world point from the live state and is re-read before the descent;
    the closing axis ry turns to ``yaw_rad`` (mod ``symmetry_deg``)."""
    yield from to_topdown(s, arm)
    yield from align_closing_axis(s, arm, yaw_rad, symmetry_deg)
    p = point()
    yield from move_gc(s, arm, (p[0], p[1], p[2] + pre_height), axes="zxy")
    p = point()
    yield from move_gc(s, arm, p, axes="xyz")
    yield {"action": "gripper.close", **_arm_field(s, arm)}


def lift(s: PrivilegedState, arm: str, height: float) -> Iterator[dict]:
    gc = s.gc(arm)
    yield from move_gc(s, arm, (gc[0], gc[1], gc[2] + height), axes="z")


def carry_over(s: PrivilegedState, arm: str, body: str, target_xy) -> Iterator[dict]:
    """Move the held body horizontally until its centre is over ``target_xy``."""
    for _ in range(3):  # re-measure: a held body may sit off-centre in the grasp
        p, gc = s.position(body), s.gc(arm)
        goal = gc.copy()
        goal[:2] += np.asarray(target_xy, dtype=float) - p[:2]
        if np.max(np.abs(goal[:2] - gc[:2])) < 0.002:
            return
        yield from move_gc(s, arm, goal, axes="xy")


def lower_body_to(s: PrivilegedState, arm: str, body: str, z: float) -> Iterator[dict]:
    dz = z - s.position(body)[2]
    gc = s.gc(arm)
    yield from move_gc(s, arm, (gc[0], gc[1], gc[2] + dz), axes="z")
