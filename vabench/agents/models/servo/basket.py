"""The servo agent's long-horizon skill (put_everything_in_basket): pick whatever still lies on the
table, one object at a time, and drop it into a free slot of the teal basket.

An object is any hole in the table's beige outside the basket; the one being servoed is tracked
from image to image (its last position, shifted by the measured Jacobian times the GC's motion
since), so that a neighbour never takes its place. A slot is a fixed fraction of the basket's
visible far edge and width (the arm hides its near edge when the hand is over it).
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from .perception import Blob, _channels, _holes, blobs, largest
from .skills import Servo, Skill

OBJECT, SLOT = "object", "slot"
N_OBJECTS = 5
INNER_ASPECT = 0.75  # the basket's inner depth over its width, as seen from above
# (across, down) fractions of the width; the near half, which the arm reaches from the carry height
SLOTS = ((0.22, 0.50), (0.78, 0.50), (0.50, 0.50), (0.30, 0.76), (0.70, 0.76))
CARRY_M = 0.10  # lift after a grasp: the load's bottom clears the basket's rim (7 cm above the table)
LONG = 2.0  # blob elongation from which an object is grasped across its long axis
LOST_PX = 45.0  # the tracked object is hidden (by the hand) when no object lies this near its predicted place


def teal(img: np.ndarray) -> np.ndarray:
    """The basket's walls and floor, and whatever lies in it."""
    r, g, b, mx, sat = _channels(img)
    mask = ndimage.binary_opening((g > r + 0.15) & (b > r + 0.15) & (np.abs(g - b) < 0.2), iterations=1)
    biggest = largest(mask)
    return mask if biggest is None else ndimage.binary_fill_holes(biggest)


def loose_objects(img: np.ndarray, min_area: int = 120) -> list[Blob]:
    """Objects that lie on the table outside the basket, largest first."""
    r, g, b, mx, sat = _channels(img)
    table = (sat > 0.07) & (sat < 0.4) & (r > b + 0.04) & (mx > 0.3)
    return blobs(_holes(table, open_top=True) & ~ndimage.binary_dilation(teal(img), iterations=3), min_area)


class Tracker:
    """The finder of the object being servoed: the loose object nearest to where it should be now."""

    def __init__(self, s: Servo):
        self.s = s
        self.at: np.ndarray | None = None  # its last pixel position, and the GC then
        self.gc: np.ndarray | None = None

    def __call__(self, img: np.ndarray) -> Blob | None:
        found = loose_objects(img)
        if not found:
            return None
        h, w = img.shape[:2]
        if self.at is None:  # a new object: the nearest to the hand
            want = np.array([(w - 1) / 2, (h - 1) / 2])
        else:
            moved = np.zeros(2) if self.s.J is None else self.s.J @ (self.s.gc[:2] - self.gc[:2])
            want = self.at + moved
        best = min(found, key=lambda b: float(np.linalg.norm(b.centre - want)))
        if self.at is not None and np.linalg.norm(best.centre - want) > LOST_PX:
            return None
        self.at, self.gc = best.centre, self.s.gc.copy()
        return best


def slot_finder(k: int):
    """A finder of the ``k``-th drop slot: a point placed by the basket's far edge and width."""

    def find_slot(img: np.ndarray) -> Blob | None:
        mask = teal(img)
        if mask.sum() < 500:
            return None
        vs, us = np.nonzero(mask)
        u0, u1, v0 = float(us.min()), float(us.max()), float(vs.min())
        fu, fv = SLOTS[k % len(SLOTS)]
        c = np.array([u0 + fu * (u1 - u0), v0 + fv * INNER_ASPECT * (u1 - u0)])
        return Blob(c, int(mask.sum()), 0.0, 0.0, 1.0, (int(v0), int(vs.max()) + 1, int(u0), int(u1) + 1))

    return find_slot


def basket(s: Servo) -> Skill:
    """Point down, calibrate on the nearest object, then per object: square up, align, grasp, lift,
    carry low over a free slot and lower until the load touches down, let go; until none is left."""
    if not s.active:
        return "servo: the basket skill measures in the active topdown only"
    track = Tracker(s)
    s.finders[OBJECT] = track
    yield from s.point_down()
    m, blob = yield from s.calibrate(OBJECT)
    home, placed = s.gc.copy(), 0
    for _ in range(N_OBJECTS + 2):
        if m is None:
            return "servo: nothing left on the table" if placed else "servo: no object seen"
        yield from s.yaw_to(blob, across_long=blob.elongation >= LONG)
        yield from s.align(OBJECT, m, blob)
        yield from s.descend()
        yield from s.grip(True)
        yield from s.move("z", CARRY_M)  # the load clear of the rim
        yield from s.move_z_to(s.z_cal)  # measured where the Jacobian was
        s.finders[SLOT] = slot_finder(placed)
        m, slot = yield from s.measure(SLOT)
        if m is not None:
            yield from s.align(SLOT, m, slot, tries=2)
            floor = s.z_floor if s.z_floor is not None else float(s.gc[2]) - 0.6
            yield from s.lower_to(floor)  # stops where the load touches the basket's floor
            placed += 1
        yield from s.grip(False)
        yield from s.move("z", 0.05)
        yield from s.move_z_to(s.z_cal)
        yield from s.move("y", float(home[1] - s.gc[1]))  # back where the arm hides none of the table
        yield from s.move("x", float(home[0] - s.gc[0]))
        track.at = None
        m, blob = yield from s.measure(OBJECT)
    return "servo: attempts exhausted"
