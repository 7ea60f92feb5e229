"""The servo agent's place_shoe: the arm on the shoe's side grasps it across its upper, turns its toe
to -x and sets it down on the blue mat.

Where things are comes from the view between the hands, scaled by two dual probe moves (as for the
pot), separately for the shoe (its top) and the mat (on the table): their heights differ. Which end
is the toe comes from touch: the upper is tall and covers the heel and the middle, the toe cap in
front of it is low, so a closed hand that comes down on the shoe's centre and then beside it toward
one end stops much lower over the toe.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from vabench.core.vocab import LEFT, RIGHT

from .dual import ARMS, VIEW_BOTH, Pair, probe_scale, turn_across
from .handover import signed_deg
from .perception import Blob, _channels, _holes, blobs, colour_mask
from .skills import Servo, Skill

TOE_PROBE_M = 0.08  # the second touch: this far from the centre along the shoe
TOE_DROP_M = 0.02  # a touch this much lower than at the centre lies on the toe cap
GRASP_BELOW_TOP_M = 0.03  # GC this far below where the closed hand met the upper's top
LIFT_M = 0.07
TOUCH_STEP_M = 0.03  # downward moves near the shoe: a longer one pushes it aside when the hand meets it
TOE_GOAL = np.array([-1.0, 0.0, 0.0])


def shoe_blob(img: np.ndarray, min_area: int = 400) -> Blob | None:
    """The shoe: the largest hole in the table's beige that is not the blue mat (the beige told from a
    pink upper by its green, nearly the red's)."""
    r, g, b, mx, sat = _channels(img)
    table = (sat > 0.07) & (sat < 0.3) & (r > b + 0.04) & (g > 0.85 * r) & (mx > 0.3)
    mat = ndimage.binary_dilation(colour_mask(img, "blue"), iterations=3)
    found = blobs(_holes(table, open_top=True) & ~mat, min_area)
    return found[0] if found else None


class Look:
    """The view between the hands: the shoe as the calibration's target, the mat's centre kept aside."""

    def __init__(self, p: Pair):
        self.p, self.mats = p, []

    def __call__(self) -> Skill:
        seen = yield from self.p.act({"action": VIEW_BOTH, "reason": "servo: measure the shoe and the mat"})
        img = seen.images[0]
        mat = max(blobs(colour_mask(img, "blue"), 500), key=lambda b: b.area, default=None)
        self.mats.append(None if mat is None else mat.centre)
        shoe = shoe_blob(img)
        return None if shoe is None else [shoe]

    def mat_xy(self) -> np.ndarray | None:
        """The mat's world xy, from its own image motion over the probe moves (it lies on the table)."""
        if len(self.mats) < 3 or any(c is None for c in self.mats[-3:]):
            return None
        return self.p.world(self.mats[-1], self.p.seen.images[0], probe_scale(*self.mats[-3:]))


def touch_z(s: Servo, depth: float) -> Skill:
    """Lower in short moves until the hand meets something (at most ``depth``): the GC height then."""
    yield from s.lower_to(float(s.gc[2]) - depth, step=TOUCH_STEP_M)
    return float(s.gc[2])


def toe_sign(s: Servo, centre: np.ndarray, along: np.ndarray) -> Skill:
    """+1 when the toe lies along ``along`` from the centre, else -1 (two closed-hand touches);
    and the height where the hand met the upper's top."""
    yield from s.move_to(centre, "xy")
    yield from s.grip(True)
    top = yield from touch_z(s, 0.6)
    yield from s.move("z", 0.03)
    yield from s.move_to(centre + TOE_PROBE_M * along, "xy")
    beside = yield from touch_z(s, 0.03 + 2 * TOE_DROP_M)
    yield from s.move_z_to(top + 0.03)
    return (1.0 if top - beside > TOE_DROP_M else -1.0), top


def turn_toe(s: Servo, toe: np.ndarray) -> Skill:
    """Yaw the held shoe so its toe points to -x: the short way round, else the long way when the
    planner refuses it (the wrist's limits). About the downward rx a + turn is a clockwise yaw."""
    yaw = signed_deg(np.append(toe, 0.0), TOE_GOAL, np.array([0.0, 0.0, 1.0]))
    for way in (yaw, yaw - np.copysign(360.0, yaw)):
        left = way
        while abs(left) >= 2.0:
            piece = float(np.clip(left, -90.0, 90.0))
            if not (yield from s.rotate("rx", -piece, "servo: turn the toe to -x")):
                break
            left -= piece
        if abs(left) < 2.0:
            return True
        yield from s.rotate("rx", way - left, "servo: undo the turn")  # back where it started
    return False


def place(s: Servo, centre: np.ndarray, along: np.ndarray, mat: np.ndarray) -> Skill:
    """Grasp the shoe across its upper at the centre, lift it, turn its toe to -x, set it on the mat."""
    sign, top = yield from toe_sign(s, centre, along)
    yield from s.move_to(centre, "xy")
    yield from s.grip(False)
    grasp_z = top - GRASP_BELOW_TOP_M
    yield from s.lower_to(grasp_z, stop_on_contact=False, step=TOUCH_STEP_M)
    yield from s.grip(True)
    yield from s.move("z", LIFT_M)
    if not (yield from turn_toe(s, sign * along)):
        return "servo: the wrist cannot turn the toe to -x"
    yield from s.move_to(mat, "xy")
    yield from s.lower_to(grasp_z + 0.01)
    yield from s.grip(False)
    yield from s.move("z", 0.05)
    return "servo: shoe placed"


def plan_shoe(p: Pair) -> Skill:
    """Point both hands down, calibrate the view between them on the shoe (and the mat), then the
    arm on the shoe's side squares its fingers across the shoe, finds the toe by touch and places it."""
    for a in ARMS:
        yield from p.arm[a].point_down()
    look = Look(p)
    found = yield from p.calibrate(look)
    mat = look.mat_xy()
    if found is None or mat is None:
        return "servo: the shoe or the mat is not seen"
    img, blob = p.seen.images[0], found[0]
    centre = p.world(blob.centre, img)
    t = np.radians(blob.long_angle_deg)
    along = np.linalg.lstsq(p.A, np.array([np.cos(t), np.sin(t)]), rcond=None)[0]
    along /= max(float(np.linalg.norm(along)), 1e-6)
    s = p.arm[LEFT if centre[0] < 0 else RIGHT]
    yield from turn_across(s, along)
    return (yield from place(s, centre, along, mat))
