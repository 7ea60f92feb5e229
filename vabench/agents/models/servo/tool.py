"""The servo agent's tool use (beat_block_hammer_right): grasp the hammer by its grip, roll the
striking face down, carry the face over the red block and lower it until it touches.

The handle is the yellow blob; of its two ends the grip's is the one with the black rubber grip
beyond it, the eye's (where the handle enters the head) the other. The striking face lies on the
right of the handle seen from the grip toward the head, and once rolled down it hangs under the eye,
whose offset from the grasp is measured in the first clean image.
"""

from __future__ import annotations

import numpy as np

from .perception import _channels, find, long_ends
from .skills import Servo, Skill

INTO_GRIP_M = 0.015  # the grasp: this far past the handle's yellow end, on the rubber grip
# the face's centre lies this far past the shaft's yellow end: the steel eye's half width (16 mm) and
# what the carry adds (before this term the face landed 24 mm past the block on 5 of 5 seeds)
FACE_PAST_END_M = 0.022
LOOK_AHEAD_M = 0.12
# where, past an end, the black grip is looked for: fractions of the yellow shaft's length (the grip
# is 1.14 of it long, the steel head reaches 0.28 of it past the other end), in discs of DISC_PX
BEYOND, DISC_PX = (0.45, 0.6, 0.75, 0.9), 5


def handle_ends(img: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(eye end, grip end) of the yellow handle, in pixels, or None when no handle is seen: the grip's
    end is the one with the long black grip beyond it (the head beyond the other end is short)."""
    found = long_ends(img, "yellow")
    if found is None:
        return None
    ends, axis = list(found[:2]), found[2]
    length = float(np.linalg.norm(ends[1] - ends[0]))
    dark = _channels(img)[3] < 0.45  # the rubber grip (about 0.3); the table is about 0.7
    vv, uu = np.mgrid[: img.shape[0], : img.shape[1]]

    def black_beyond(end: np.ndarray, out: np.ndarray) -> int:
        discs = [(uu - p[0]) ** 2 + (vv - p[1]) ** 2 < DISC_PX**2 for p in (end + f * length * out for f in BEYOND)]
        return int(sum((dark & d).sum() for d in discs))

    if black_beyond(ends[0], -axis) > black_beyond(ends[1], axis):
        ends.reverse()
    return ends[0], ends[1]


def hammer(s: Servo) -> Skill:
    """Point down, calibrate on the handle, square the fingers across it, grasp past its yellow end,
    lift, roll the face down, carry it over the block and lower it onto the block."""
    if not s.active:
        return "servo: the hammer skill measures in the active topdown only"
    yield from s.point_down()
    m, blob = yield from s.calibrate("yellow")
    if m is None or s.A is None:
        return "servo: the handle is not seen"
    yield from s.yaw_to(blob, across_long=True)
    img = yield from s.topdown()
    ends = handle_ends(img)
    if ends is None:
        return "servo: the handle is not seen"
    eye, grip = ends
    along = (grip - eye) / max(float(np.linalg.norm(grip - eye)), 1e-6)
    scale = float(np.mean(np.linalg.svd(s.A, compute_uv=False)))  # pixels per metre
    target = grip + INTO_GRIP_M * scale * along
    centre = np.array([(img.shape[1] - 1) / 2, (img.shape[0] - 1) / 2])
    d = np.linalg.lstsq(s.J, centre - target, rcond=None)[0]
    eye_offset = s._world_dir(eye - target)  # world xy from the grasp to the eye
    block = find(img, "red", 100)  # where the block is, in case the arm hides it later
    block_xy = None if block is None else s.gc[:2] + np.linalg.lstsq(s.J, centre - block.centre, rcond=None)[0]
    h = s._world_dir(grip - eye)
    h = h / max(float(np.linalg.norm(h)), 1e-6)
    yield from s.move("x", float(d[0]))
    yield from s.move("y", float(d[1]))
    yield from s.descend()
    yield from s.grip(True)
    yield from s.move("z", 0.12)
    face = np.array([h[1], -h[0], 0.0])  # the handle turned clockwise (seen from above) by 90 degrees
    sign = 1.0 if float(np.cross(s.state.rz, face)[2]) < 0 else -1.0
    yield from s.rotate("rz", sign * 90.0, "servo: roll the striking face down")
    yield from s.move_z_to(s.z_cal)
    m, _ = yield from s.measure("red", 100)
    for _ in range(2 if block_xy is None else 0):  # the block lies beyond the view's far edge: look farther
        if m is None:
            yield from s.move("y", LOOK_AHEAD_M)
            m, _ = yield from s.measure("red", 100)
    if m is None and block_xy is None:
        return "servo: the block is not seen"
    over = s.gc[:2] + np.linalg.lstsq(s.J, -m, rcond=None)[0] if m is not None else block_xy
    d = over - s.gc[:2] - (eye_offset - FACE_PAST_END_M * h)  # h points from the eye to the grip
    yield from s.move("x", float(d[0]))
    yield from s.move("y", float(d[1]))
    yield from s.lower_to(float(s.gc[2]) - 0.5)
    return "servo: struck"
