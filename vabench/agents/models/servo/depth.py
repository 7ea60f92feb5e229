"""The servo agent under the ``depth_point`` intervention (issue 27): the same colour segmentation,
but every metric quantity comes from the ``perception.depth_point`` tool instead of the image
Jacobian its probe moves measure: the target's world point under its blob's centre, the world
direction of its long axis from two such points, the destination's point. Comparing its rates with
the plain servo's, per task, is the offline proof that the tool removes metric grounding.
"""

from __future__ import annotations

import numpy as np

from .perception import Blob, find
from .skills import Servo, Skill, wrap

TOOL = "perception.depth_point"


def depth_point(s: Servo, u: float, v: float) -> Skill:
    """The world point under pixel (u, v) of the topdown image (None: no surface or a refusal)."""
    args = {"u": int(round(u)), "v": int(round(v))}
    if not s.active:
        args["view"] = "topdown"
    seen = yield from s.act({"tool": TOOL, "args": args, "reason": "servo: where is this pixel"})
    return seen.point


def locate(s: Servo, colour: str, min_area: int = 30) -> Skill:
    """(world point, blob) of the largest ``colour`` blob in the topdown image, or (None, None)."""
    img = yield from s.topdown()
    blob = find(img, colour, min_area, open_top=s.active)
    if blob is None:
        return None, None
    point = yield from depth_point(s, *blob.centre)
    return point, blob


def yaw_by_depth(s: Servo, blob: Blob, point: np.ndarray, across_long: bool) -> Skill:
    """Turn ry across the target: its axis's world direction from a second depth point along it."""
    t = np.radians(blob.long_angle_deg if across_long else blob.angle_deg)
    v0, v1, u0, u1 = blob.box
    reach = max(2.0, 0.25 * min(u1 - u0, v1 - v0))
    other = yield from depth_point(s, *(blob.centre + reach * np.array([np.cos(t), np.sin(t)])))
    if other is None or np.linalg.norm((other - point)[:2]) < 1e-4:
        return
    e = other - point
    period, extra = (180.0, 90.0) if across_long else (90.0, 0.0)
    want = float(np.degrees(np.arctan2(e[1], e[0]))) + extra
    ry = s.state.ry
    delta = wrap(want - float(np.degrees(np.arctan2(ry[1], ry[0]))), period)
    yield from s.rotate("rx", -delta, f"servo: yaw {delta:.0f} deg to square the fingers")


def over(s: Servo, point: np.ndarray) -> Skill:
    yield from s.move("x", float(point[0] - s.gc[0]))
    yield from s.move("y", float(point[1] - s.gc[1]))


def plan_depth(s: Servo) -> Skill:
    """Point down; locate the target by depth, square up, go over it, grasp (or press); for a
    placement locate the destination by depth, carry over it and release; retry while budget lasts."""
    g = s.goal
    if g.kind == "none":
        return "servo: no skill for this task (tool use)"
    yield from s.point_down()
    if s.active:
        yield from s.move("y", -0.10)  # uncover the table in front of the hand, as the probe moves do
    for attempt in range(3):
        if attempt:
            yield from s.grip(False)
            yield from s.move_z_to(s.z_cal)
        point, blob = yield from locate(s, g.target)
        if point is None:
            return "servo: the target is not visible"
        if g.kind != "press":
            yield from yaw_by_depth(s, blob, point, across_long=g.shape == "long")
        yield from over(s, point)
        if not (yield from s.take()):
            continue
        dest, _ = yield from locate(s, g.destination, 60)
        if dest is None:
            s.notes.append("destination not seen")
            continue
        yield from s.move_z_to(s.release_z() + 0.08)
        yield from over(s, dest)
        yield from s.lower_to(s.release_z())
        yield from s.grip(False)
        yield from s.move("z", 0.05)
    return "servo: attempts exhausted"
