"""Two-arm skills of the servo agent: both arms act through ``dual_gripper.*`` decisions, and the
camera's ``view_both_topdown`` (centred between the two grippers) measures what both need.

The scale again comes from the robot's own moves: one dual move shifts the midpoint, and with it
the camera, by a known amount, so the targets' image motion gives pixels per metre at their height.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from vabench.core.vocab import LEFT, RIGHT

from .perception import Blob, Seen, _channels, _describe
from .skills import MAX_MOVE_MM, Now, Servo, Skill, wrap

ARMS = (LEFT, RIGHT)
PROBE_M = 0.08  # the calibration moves: large, so the measured scale is good to a few per cent
VIEW_BOTH = "camera.view_both_topdown"


def dark_bars(img: np.ndarray, min_area: int = 40) -> list[Blob]:
    """The pot's two handle bars, left to right: of the dark elongated parts clear of the image border,
    the largest pair that lie in line (the robot's dark parts do not), or none."""
    r, g, b, mx, sat = _channels(img)
    mask = ndimage.binary_opening(ndimage.binary_closing((mx < 0.4) & (sat < 0.45), iterations=2), iterations=1)
    labels, n = ndimage.label(mask)
    found = []
    for i in range(1, n + 1):
        vs, us = np.nonzero(labels == i)
        h, w = mask.shape
        if len(us) < min_area or us.min() == 0 or vs.min() == 0 or us.max() == w - 1 or vs.max() == h - 1:
            continue
        blob = _describe(us, vs)
        if blob.elongation >= 2.0:
            found.append(blob)
    pairs = [(a, b) for i, a in enumerate(found) for b in found[i + 1 :] if _in_line(a, b)]
    if not pairs:
        return []
    best = max(pairs, key=lambda ab: min(ab[0].area, ab[1].area))
    return sorted(best, key=lambda b: b.centre[0])


def _in_line(a: Blob, b: Blob, tol_deg: float = 15.0) -> bool:
    """Two bars of one pot: of like size, each pointing along the line that joins them."""
    joining = float(np.degrees(np.arctan2(*(b.centre - a.centre)[::-1])) % 180.0)
    off = [abs(wrap(blob.long_angle_deg - joining, 180.0)) for blob in (a, b)]
    return max(a.area, b.area) < 1.8 * min(a.area, b.area) and max(off) < tol_deg


class Pair:
    """Both arms of one episode: a :class:`Servo` each (sharing the newest observation) and dual moves."""

    def __init__(self, first: Seen, goal):
        self.now = Now(first)
        self.arm = {a: Servo(first, goal, True, a, self.now) for a in ARMS}
        self.A: np.ndarray | None = None  # both-topdown pixels per metre of a world point's motion

    @property
    def seen(self) -> Seen:
        return self.now.seen

    def gc(self, arm: str) -> np.ndarray:
        return self.seen.arms[arm].gc

    def act(self, decision: dict) -> Skill:
        self.now.seen = yield decision
        return self.now.seen

    def move(self, axis: str, metres: dict[str, float]) -> Skill:
        """Each arm's GC along ``axis`` by its own distance, in dual moves of at most 100 mm; the
        arms whose move the planner refused, or that stopped short (contact), as a set."""
        left = {a: m * 1000.0 for a, m in metres.items()}
        stuck: set[str] = set()
        while True:
            todo = {a: mm for a, mm in left.items() if abs(mm) >= 1.5 and a not in stuck}
            if not todo:
                return stuck
            step = {a: float(min(abs(mm), MAX_MOVE_MM)) for a, mm in todo.items()}
            before = {a: float(self.gc(a)["xyz".index(axis)]) for a in todo}
            moves = {
                a: {"axis": axis, "sign": "+" if todo[a] > 0 else "-", "distance_mm": round(step[a], 1)} for a in todo
            }
            if len(todo) == 2:
                seen = yield from self.act({"action": "dual_gripper.move_world", **moves, "reason": "servo: both"})
            else:
                (a,) = todo
                seen = yield from self.act({"action": "gripper.move_world", "arm": a, **moves[a], "reason": "servo"})
            for a in todo:
                done = abs(float(self.gc(a)["xyz".index(axis)]) - before[a]) * 1000.0
                if not seen.planned or done < 0.9 * step[a] - 1.0:
                    stuck.add(a)
                left[a] -= np.sign(todo[a]) * step[a]

    def grip(self, close: bool) -> Skill:
        yield from self.act({"action": f"dual_gripper.{'close' if close else 'open'}", "reason": "servo: both"})

    def bars(self) -> Skill:
        """The two handle bars in the both-topdown view, or None when not two are seen."""
        seen = yield from self.act({"action": VIEW_BOTH, "reason": "servo: measure in the topdown"})
        found = dark_bars(seen.images[0])
        return found if len(found) == 2 else None

    def calibrate(self, look=None) -> Skill:
        """Two dual probe moves (x, then y): the image motion of what ``look`` finds (default: the
        pot's bars; a list of blobs or None) per metre of camera motion; its last finding."""
        look = look or self.bars
        b0 = yield from look()
        yield from self.move("x", dict.fromkeys(ARMS, -PROBE_M))
        b1 = yield from look()
        yield from self.move("y", dict.fromkeys(ARMS, PROBE_M))  # forward: the far pot comes into view
        b2 = yield from look()
        if b0 is None or b1 is None or b2 is None:
            return None
        self.A = probe_scale(*(np.mean([b.centre for b in bs], 0) for bs in (b0, b1, b2)))
        return b2

    def world(self, px: np.ndarray, img: np.ndarray, A: np.ndarray | None = None) -> np.ndarray:
        """World xy of an image point at the height ``A`` (default: the calibrated one) was measured at
        (the view is centred on the GC midpoint)."""
        h, w = img.shape[:2]
        mid = (self.gc(LEFT)[:2] + self.gc(RIGHT)[:2]) / 2
        scale = self.A if A is None else A
        return mid + np.linalg.lstsq(scale, px - np.array([(w - 1) / 2, (h - 1) / 2]), rcond=None)[0]


def probe_scale(c0: np.ndarray, c1: np.ndarray, c2: np.ndarray) -> np.ndarray:
    """Pixels per metre of camera motion (columns x, y) from a point's image positions before and
    after :meth:`Pair.calibrate`'s two probe moves (static points move against the camera)."""
    return np.stack([(c1 - c0) / PROBE_M, (c1 - c2) / PROBE_M], 1)


OUTWARD_M = 0.015  # the grasp point lies this far out of the bar's visible centre
PALM_ABOVE_GC_M = 0.038  # the hand: its palm's bottom this far above GC (top-down, open)
UP_FROM_PALM_M = PALM_ABOVE_GC_M - 0.012  # palm down on the bar: up this far puts GC just under its axis
LIFT_M = 0.06


def turn_across(s: Servo, out: np.ndarray) -> Skill:
    """Yaw the downward gripper so the closing axis ry runs across the bar (out x z) and the palm
    normal points in at the pot, the two arms mirrored."""
    want = float(np.degrees(np.arctan2(-out[0], out[1])))
    for _ in range(3):
        ry = s.state.ry
        delta = wrap(want - float(np.degrees(np.arctan2(ry[1], ry[0]))), 360.0)
        if abs(delta) < 2.0:
            return
        yield from s.rotate("rx", -float(np.clip(delta, -90.0, 90.0)), f"servo: yaw {delta:.0f} deg across the bar")


def touch(p: Pair) -> Skill:
    """Lower both grippers until each one meets something (it stops short, or the planner refuses even
    a small step), halving an arm's step when the planner refuses it; the GC heights where they stopped."""
    step = dict.fromkeys(ARMS, 0.05)
    touched: dict[str, float] = {}
    for _ in range(20):
        todo = [a for a in ARMS if a not in touched and step[a] >= 0.004]
        if not todo:
            break
        before = {a: float(p.gc(a)[2]) for a in todo}
        yield from p.move("z", {a: -step[a] for a in todo})
        for a in todo:
            went = before[a] - float(p.gc(a)[2])
            if went < 0.0005:
                step[a] /= 2
                if step[a] < 0.004:
                    touched[a] = float(p.gc(a)[2])
            elif went < 0.9 * step[a] - 0.001:
                touched[a] = float(p.gc(a)[2])
    return touched


RIM_STEP_M = (0.008, 0.03)  # a palm this much higher than the other landed on the rim, not its bar
RIM_OUT_M = 0.012


def off_the_rim(p: Pair, touched: dict[str, float], out: dict[str, np.ndarray]) -> Skill:
    """Both bars stand at one height: a palm that stopped a rim's height above the other one sits on
    the pot's rim, so that arm goes up, out along its bar, and down again; the heights then."""
    high = max(ARMS, key=lambda a: touched[a])
    if not RIM_STEP_M[0] < touched[high] - min(touched.values()) < RIM_STEP_M[1]:
        return touched
    yield from p.move("z", {high: 0.03})
    yield from p.move("x", {high: RIM_OUT_M * float(out[high][0])})
    yield from p.move("y", {high: RIM_OUT_M * float(out[high][1])})
    step = 0.04
    while step >= 0.004:
        before = float(p.gc(high)[2])
        stuck = yield from p.move("z", {high: -step})
        if high in stuck and before - float(p.gc(high)[2]) > 0.0005:
            break
        step = step if high not in stuck else step / 2
    return {**touched, high: float(p.gc(high)[2])}


def lift_pot(p: Pair) -> Skill:
    """Point both down, find the two dark handle bars in the both-topdown view, measure its scale with
    two dual moves, put each GC over its bar's grasp point, lower the open hands until the palms meet
    the bars (the bar's height by touch), raise GC to the bar's axis, grasp both and lift together."""
    for a in ARMS:
        yield from p.arm[a].point_down()
    bars = yield from p.calibrate()
    if bars is None:
        return "servo: the two handles are not seen"
    img = p.seen.images[0]
    ends = {a: p.world(b.centre, img) for a, b in zip(ARMS, bars, strict=True)}
    centre = (ends["left"] + ends["right"]) / 2
    out = {a: (ends[a] - centre) / max(float(np.linalg.norm(ends[a] - centre)), 1e-6) for a in ARMS}
    for a in ARMS:
        yield from turn_across(p.arm[a], out[a])
    goal = {a: ends[a] + OUTWARD_M * out[a] for a in ARMS}
    yield from p.move("x", {a: float(goal[a][0] - p.gc(a)[0]) for a in ARMS})
    yield from p.move("y", {a: float(goal[a][1] - p.gc(a)[1]) for a in ARMS})
    touched = yield from touch(p)  # open, astride the bar: the palm comes down on it
    if len(touched) < 2:
        return "servo: a gripper met nothing on its way down"
    touched = yield from off_the_rim(p, touched, out)
    yield from p.move("z", {a: touched[a] + UP_FROM_PALM_M - float(p.gc(a)[2]) for a in ARMS})
    yield from p.grip(True)
    yield from p.move("z", dict.fromkeys(ARMS, LIFT_M))
    return "servo: pot lifted"
