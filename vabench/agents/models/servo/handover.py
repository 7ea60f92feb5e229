"""The servo agent's handover (handover_horizontal_block): the arm on the block's side (the giver)
grasps the red block near its end toward the robot, lifts it and pitches its approach forward, so
the block stands up in its hand; the other arm (the receiver), turned to approach level along x,
comes in at the exposed upper segment, closes, and only then does the giver open.

Only the block's place comes from the image (the giver's topdown, scaled by its probe moves, as in
the single-arm plan). Once the block is in the giver's hand, where its upper segment is follows from
the giver's GC in the robot-state text: the block hangs on the grasp, its far end up.
"""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import LEFT, RIGHT

from .dual import ARMS, VIEW_BOTH, Pair, turn_across
from .perception import find, long_ends
from .skills import Servo, Skill

NEAR_END_M = 0.07  # the grasp: this far from the block's centre toward the robot (-y)
LIFT_TO_M = 0.215  # GC this high above the table before the pitch (lower, the wrist meets the table)
PRESENT = (0.03, -0.10, 0.19)  # giver GC while presenting: x toward its side, y, height above the table
UP_SEGMENT_M = 0.12  # the receiver's grasp: this far above the giver's GC along the standing block
STANDOFF_M = 0.12  # the receiver lines up this far out before moving in along x


def signed_deg(v_from: np.ndarray, v_to: np.ndarray, axis: np.ndarray) -> float:
    """The turn about ``axis`` (right-hand rule) that takes ``v_from`` toward ``v_to``."""
    return float(np.degrees(np.arctan2(np.cross(v_from, v_to) @ axis, v_from @ v_to)))


def turn(s: Servo, axis: str, frame_axis: str, want: tuple[float, float, float]) -> Skill:
    """Rotate about the gripper's local ``axis`` until its ``frame_axis`` points along ``want``
    (as far as a turn about ``axis`` can take it), in pieces of at most 90 degrees."""
    for _ in range(3):
        deg = signed_deg(getattr(s.state, frame_axis), np.array(want), getattr(s.state, axis))
        if abs(deg) < 2.0:
            return
        yield from s.rotate(axis, float(np.clip(deg, -90.0, 90.0)), f"servo: turn {frame_axis} about {axis}")


def receiver_ready(r: Servo, out: float) -> Skill:
    """The receiver: pointing down, closing axis along y, then pitched to approach level toward the
    giver's side (+x when the giver is the right arm)."""
    yield from r.point_down()
    yield from turn(r, "rx", "ry", (0.0, out, 0.0))
    yield from turn(r, "ry", "rx", (out, 0.0, 0.0))


def block_in_view(p: Pair) -> Skill:
    """The red block in the view centred between the hands, as a list of one blob, or None."""
    seen = yield from p.act({"action": VIEW_BOTH, "reason": "servo: measure the block"})
    blob = find(seen.images[0], "red", 60)
    return None if blob is None else [blob]


def grasp_point(p: Pair) -> tuple[np.ndarray, np.ndarray] | None:
    """(world xy of the giver's grasp, the block's unit direction toward the robot): NEAR_END_M from
    its centre toward its end nearer the robot, both ends measured in the calibrated view between the hands."""
    img = p.seen.images[0]
    found = long_ends(img, "red", 60)
    if found is None:
        return None
    a, b = (p.world(e, img) for e in found[:2])
    near, far = (a, b) if a[1] < b[1] else (b, a)
    along = (near - far) / max(float(np.linalg.norm(near - far)), 1e-6)
    return (near + far) / 2 + NEAR_END_M * along, along


def giver_grasp(g: Servo, at: np.ndarray, along: np.ndarray) -> Skill:
    """Fingers across the block, over the grasp point, down to the table, closed; the table's height
    (where the descent stopped)."""
    yield from turn_across(g, along)
    yield from g.move_to(at, "xy")
    yield from g.grip(False)
    yield from g.descend()
    yield from g.grip(True)
    return g.z_floor if g.z_floor is not None else float(g.gc[2]) - 0.01


def handover(p: Pair, giver: str) -> Skill:
    """The whole handover from ``giver`` to the other arm, once the view between the hands is calibrated."""
    receiver = LEFT if giver == RIGHT else RIGHT
    g, r, out = p.arm[giver], p.arm[receiver], 1.0 if giver == RIGHT else -1.0
    found = grasp_point(p)
    if found is None:
        return "servo: the block's ends are not seen"
    yield from receiver_ready(r, out)
    table = yield from giver_grasp(g, *found)
    yield from g.move_z_to(table + LIFT_TO_M)
    yield from turn(g, "ry", "rx", (0.0, 1.0, 0.0))  # approach forward: the block stands up in the hand
    yield from g.move_to(np.array([out * PRESENT[0], PRESENT[1], table + PRESENT[2]]))
    up = g.gc + np.array([0.0, 0.0, UP_SEGMENT_M])
    yield from r.move_to(up - np.array([out * STANDOFF_M, 0.0, 0.0]), "xzy")
    yield from r.move_to(up)
    yield from r.grip(True)
    yield from g.grip(False)
    yield from g.move("y", -0.07)
    yield from r.move("z", 0.05)
    yield from r.move("x", -out * STANDOFF_M)
    return "servo: handed over"


def plan_handover(p: Pair) -> Skill:
    """Point both hands down, calibrate the view between them on the block (two dual probe moves),
    and hand the block over from the arm on its side (its image side in that view) to the other."""
    for a in ARMS:
        yield from p.arm[a].point_down()
    blobs = yield from p.calibrate(lambda: block_in_view(p))
    if blobs is None:
        return "servo: the block is not seen"
    side = LEFT if p.world(blobs[0].centre, p.seen.images[0])[0] < 0 else RIGHT
    return (yield from handover(p, side))
