"""The servo agent's skills, as generators that yield one protocol decision at a time and receive the
next observation (:class:`~vabench.agents.models.servo.perception.Seen`) back.

Everything metric comes from the robot's own moves: the image Jacobian (pixels per metre of GC
motion) is measured with two probe moves, the table height is where a downward move is first
refused, and the world direction of image axes comes from how things move in the image.

Measurements: in the active protocol, ``camera.view_topdown`` (centred on GC, so the image centre is
GC's pixel) and the target's pixel offset from the centre; in the passive protocol, the target's
column offset from the image centre in the two 45-degree views that follow the gripper (side_top_45,
oblique_45: with the gripper pointing down, GC lies on their vertical centre line).
"""

from __future__ import annotations

from collections.abc import Callable, Generator

import numpy as np

from vabench.core.vocab import RIGHT

from .perception import Blob, Goal, Seen, find, near_edge

Skill = Generator[dict, Seen, object]
MAX_MOVE_MM = 100.0
# where the hand goes to look again when the active topdown does not show the target (m, from where it
# was missed): a large wrist above the hand (the UR5's) hides the table around and beside it, and moving
# the hand sideways shifts the hidden patch of the table into view
LOOK_AROUND = ((-0.15, 0.0), (0.15, 0.0), (-0.15, 0.15), (0.0, 0.15))
MOVE_ON_M = 0.05
PROBE_AGREE = 0.3  # active probes: the largest relative misfit of the y column, and of the blob's area
PASSIVE_TOPDOWN, PASSIVE_COLUMNS = 0, (3, 4)


def wrap(angle: float, period: float) -> float:
    """``angle`` (degrees) wrapped into [-period/2, period/2)."""
    return (angle + period / 2) % period - period / 2


class Now:
    """The newest observation, shared by the skills of both arms in a two-arm episode."""

    def __init__(self, seen: Seen):
        self.seen = seen


class Servo:
    """One episode's state and skills for one arm (two-arm plans hold one per arm, sharing ``now``)."""

    def __init__(self, first: Seen, goal: Goal, active: bool, arm: str = RIGHT, now: Now | None = None):
        self.now, self.goal, self.active, self.arm = now or Now(first), goal, active, arm
        self.J: np.ndarray | None = None  # measurement change per metre of GC motion (2 x 2, columns x, y)
        self.A: np.ndarray | None = None  # topdown pixels per metre of a world point's motion (columns x, y)
        self.z_floor: float | None = None  # lowest GC height the planner accepts (the table)
        self.z_cal = float(self.gc[2])
        self.top_blob: Blob | None = None  # the target in the topdown image the yaw is read from
        # active: per colour, (GC xy, measurement) when it was last seen, to dead-reckon it once hidden
        self.sightings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.notes: list[str] = []
        # named finders that replace colour segmentation in the active topdown (a plan's own targets)
        self.finders: dict[str, Callable[[np.ndarray], Blob | None]] = {}

    # -- state ---------------------------------------------------------------------------
    @property
    def seen(self) -> Seen:
        return self.now.seen

    @seen.setter
    def seen(self, seen: Seen) -> None:
        self.now.seen = seen

    @property
    def state(self):
        return self.seen.arms[self.arm]

    @property
    def gc(self) -> np.ndarray:
        return self.state.gc

    # -- primitive decisions ------------------------------------------------------------------
    @property
    def two(self) -> bool:
        """A two-arm task: every arm action names its arm, and views name the arm they centre on."""
        return len(self.seen.arms) > 1

    def act(self, decision: dict) -> Skill:
        if self.two and decision["action"].startswith("gripper."):
            decision = {**decision, "arm": self.arm}
        self.seen = yield decision
        return self.seen

    def move(self, axis: str, metres: float) -> Skill:
        """GC along a world axis, in moves of at most 100 mm; False when the planner refused one."""
        left = metres * 1000.0
        while abs(left) >= 1.5:
            mm = float(min(abs(left), MAX_MOVE_MM))
            reason = f"servo: move {axis} {mm:.0f} mm"
            seen = yield from self.act(
                {
                    "action": "gripper.move_world",
                    "axis": axis,
                    "sign": "+" if left > 0 else "-",
                    "distance_mm": round(mm, 1),
                    "reason": reason,
                }
            )
            if not seen.planned:
                return False
            left -= np.sign(left) * mm
        return True

    def move_z_to(self, z: float) -> Skill:
        return (yield from self.move("z", z - float(self.gc[2])))

    def move_to(self, xyz: np.ndarray, axes: str = "xyz") -> Skill:
        """GC to ``xyz`` along ``axes``, one axis after another, in that order."""
        for a in axes:
            i = "xyz".index(a)
            yield from self.move(a, float(xyz[i] - self.gc[i]))

    def rotate(self, axis: str, deg: float, why: str) -> Skill:
        if abs(deg) < 2.0:
            return True
        seen = yield from self.act(
            {
                "action": "gripper.rotate_local",
                "axis": axis,
                "sign": "+" if deg > 0 else "-",
                "angle_deg": round(min(abs(deg), 90.0), 1),
                "reason": why,
            }
        )
        return seen.planned

    def grip(self, close: bool) -> Skill:
        yield from self.act({"action": "gripper.close" if close else "gripper.open", "reason": "servo"})

    # -- perception through the protocol ----------------------------------------------------
    def topdown(self) -> Skill:
        """The image that shows the table from above (active: a view_topdown step)."""
        if self.active:
            view = f"camera.view_{self.arm}_topdown" if self.two else "camera.view_topdown"
            seen = yield from self.act({"action": view, "reason": "servo: measure in the topdown"})
            return seen.images[0]
        return self.seen.images[PASSIVE_TOPDOWN]

    def measure(self, colour: str, min_area: int = 30) -> Skill:
        """(2-vector measurement that is 0 when GC is over the blob, the blob) or (None, None)."""
        if self.active:
            img = yield from self.topdown()
            finder = self.finders.get(colour)
            blob = finder(img) if finder else find(img, colour, min_area, open_top=True)
            return self._sighted(colour, img, blob)
        cols = []
        blob = None
        for i in PASSIVE_COLUMNS:
            img = self.seen.images[i]
            b = find(img, colour, min_area)
            if b is None:
                return None, None
            cols.append(b.centre[0] - (img.shape[1] - 1) / 2)
            blob = blob or b
        return np.array(cols), blob

    def _sighted(self, colour: str, img: np.ndarray, blob: Blob | None):
        """(measurement, blob) of an active topdown sighting, remembered with where GC was."""
        if blob is None:
            return None, None
        h, w = img.shape[:2]
        m = blob.centre - np.array([(w - 1) / 2, (h - 1) / 2])
        self.sightings[colour] = (self.gc[:2].copy(), m)
        return m, blob

    def glance(self, colour: str, min_area: int = 30) -> None:
        """Remember where ``colour`` is in the active topdown just taken (no action: it may be hidden
        later, when the hand comes to look for it)."""
        if self.active:
            img = self.seen.images[0]
            self._sighted(colour, img, find(img, colour, min_area, open_top=True))

    def recall(self, colour: str) -> np.ndarray | None:
        """The measurement ``colour`` would give now, dead-reckoned from its last sighting with the
        Jacobian (exact for a camera that moves with GC over a static object); None if never seen."""
        if colour not in self.sightings or self.J is None:
            return None
        gc0, m0 = self.sightings[colour]
        return m0 + self.J @ (self.gc[:2] - gc0)

    def seek(self, colour: str, min_area: int = 30, look: bool = False, recall: bool = False) -> Skill:
        """:meth:`measure`, and in the active protocol, while the target stays hidden, the same from the
        hand positions of :data:`LOOK_AROUND` (``look``: only from those); (None, None) when none shows
        it. ``recall``: a hidden target seen before is dead-reckoned (:meth:`recall`) instead.

        A target that has just come out from behind the arm may still be cut by it (its centre, hence
        the Jacobian the probes measure, is then off), so the hand moves on by :data:`MOVE_ON_M` the
        same way (back, when that would push it out of the image), and the blob seen there is kept
        unless it is lost."""
        if not look:
            m, blob = yield from self.measure(colour, min_area)
            if blob is not None or not self.active:
                return m, blob
            if recall and (m := self.recall(colour)) is not None:
                self.notes.append(f"{colour} hidden: dead-reckoned from where it was seen")
                return m, None
        start = self.gc[:2].copy()
        for dx, dy in LOOK_AROUND:
            yield from self.move_to(start + (dx, dy), "xy")
            m, blob = yield from self.measure(colour, min_area)
            if blob is None:
                continue
            self.notes.append(f"target seen from ({dx:+.2f}, {dy:+.2f}) m")
            on = MOVE_ON_M * np.array([dx, dy]) / np.hypot(dx, dy)
            if near_edge(blob, self.seen.images[0].shape, np.array([-on[0], on[1]])):
                on = -on  # found at the image's edge: moving on would push it out; come back toward it
            yield from self.move("x", float(on[0]))
            yield from self.move("y", float(on[1]))
            m_on, blob_on = yield from self.measure(colour, min_area)
            if blob_on is not None:
                return m_on, blob_on
            yield from self.move("x", -float(on[0]))
            yield from self.move("y", -float(on[1]))
            return (yield from self.measure(colour, min_area))
        return None, None

    # -- skills ------------------------------------------------------------------------------
    def point_down(self) -> Skill:
        """Turn the approach axis rx straight down (a rotation about ry)."""
        rx, rz = self.state.rx, self.state.rz
        angle = float(np.degrees(np.arctan2(rz[2], -rx[2])))
        if abs(angle) >= 2.0:
            yield from self.rotate("ry", angle, "servo: point the fingers straight down")

    def calibrate(self, colour: str) -> Skill:
        """Two probe moves: the image Jacobian of the target's measurement (and the topdown axes). In the
        active protocol, a target a probe loses, or one whose area the x probe changes (a part of it
        peeking past the arm, cut differently in each image), is looked for once more from beside and
        probed there; a y column that is no quarter turn of the x column (the y probe moved a target
        cut by the image's edge) is replaced by it."""
        if self.active:
            yield from self.move("y", -0.10)  # uncover the table in front of the hand
        m0, b0 = yield from self.seek(colour)
        m, blob, whole = yield from self._probe(colour, m0, b0)
        if self.active and not whole:
            self.notes.append("calibration: the probes lost the target or disagree; looking from beside")
            m0, b0 = yield from self.seek(colour, look=True)
            if b0 is not None:
                m, blob, _ = yield from self._probe(colour, m0, b0)
        if m is None:
            self.notes.append("calibration: target not seen")
        return m, blob

    def _probe(self, colour: str, m0: np.ndarray | None, b0: Blob | None) -> Skill:
        """The two probe moves from where ``m0`` was measured: (m, blob, whether the probes agree)."""
        top0 = self.seen.images[PASSIVE_TOPDOWN] if not self.active else None
        if b0 is not None and self.active:
            self.top_blob = b0
        elif not self.active:
            self.top_blob = find(top0, colour, 12)
        ok = yield from self.move("y", -0.04)
        m1, b1 = yield from self.measure(colour)
        top1 = self.seen.images[PASSIVE_TOPDOWN] if not self.active else None
        yield from self.move("x", -0.04)
        m2, b2 = yield from self.measure(colour)
        top2 = self.seen.images[PASSIVE_TOPDOWN] if not self.active else None
        if m1 is None or m2 is None:
            return None, None, False
        jx = (m2 - m1) / -0.04
        # a target cut by the image's edge moves less than the image does: then trust the x probe and a
        # non-mirrored camera looking down (the y column is the x column turned by 90 degrees)
        cut = self.active and b0 is not None and b1 is not None and abs(b1.area - b0.area) > 0.15 * b0.area
        turned = np.array([jx[1], -jx[0]])
        jy = (m1 - m0) / -0.04 if (m0 is not None and ok and not cut) else turned
        if self.active and np.linalg.norm(jy - turned) > PROBE_AGREE * np.linalg.norm(jx):
            jy = turned  # the topdown looks straight down: its Jacobian only turns and scales
        self.J = np.stack([jx, jy], 1)
        if self.active:
            self.A = -self.J
            self.top_blob = b2 or self.top_blob
        else:
            dx, dy = _motion(top1, top2), _motion(top0, top1)
            if dx is not None and dy is not None:
                self.A = np.stack([dx / -0.04, dy / -0.04], 1)
        self.z_cal = float(self.gc[2])
        whole = abs(b2.area - b1.area) < PROBE_AGREE * max(b1.area, b2.area)  # the x probe did not cut it
        return m2, b2, whole

    def align(self, colour: str, m: np.ndarray | None, blob: Blob | None, tries: int = 3, tol: float = 6.0) -> Skill:
        """Newton steps of GC over the blob with the measured Jacobian; a hidden target counts as aligned."""
        ref_area = blob.area if blob is not None else None
        for _ in range(tries):
            if m is None or self.J is None:
                return
            d = np.linalg.lstsq(self.J, -m, rcond=None)[0]
            d = np.clip(d, -0.3, 0.3)
            yield from self.move("x", float(d[0]))
            yield from self.move("y", float(d[1]))
            m, blob = yield from self.measure(colour)
            if blob is None or (ref_area and blob.area < 0.6 * ref_area) or np.linalg.norm(m) < tol:
                return
            ref_area = blob.area

    def _world_dir(self, e_img: np.ndarray) -> np.ndarray:
        return np.linalg.lstsq(self.A, e_img, rcond=None)[0]

    def yaw_to(self, blob: Blob | None, across_long: bool, avoid: str | None = None) -> Skill:
        """Turn about the vertical so that the finger-closing axis ry crosses the target squarely; for a
        cube, of its two square grasps the one whose fingers stay clear of the ``avoid`` blob."""
        if blob is None or self.A is None:
            return
        img = self.seen.images[0]
        other = find(img, avoid, 60) if avoid and not across_long else None
        away = self._world_dir(other.centre - blob.centre) if other is not None else None
        if across_long:
            t = np.radians(blob.long_angle_deg)
            period, extra = 180.0, 90.0
        else:
            t = np.radians(blob.angle_deg)
            period, extra = 90.0, 0.0
        e = self._world_dir(np.array([np.cos(t), np.sin(t)]))
        want = float(np.degrees(np.arctan2(e[1], e[0]))) + extra
        ry = self.state.ry
        delta = wrap(want - float(np.degrees(np.arctan2(ry[1], ry[0]))), period)
        if away is not None:  # fingers (along ry) across the line to the obstacle, not along it
            side = float(np.degrees(np.arctan2(away[1], away[0])))
            options = (delta, wrap(delta + 90.0, 180.0))
            now = float(np.degrees(np.arctan2(ry[1], ry[0])))
            delta = max(options, key=lambda d: abs(np.sin(np.radians(now + d - side))) - 0.002 * abs(d))
        yield from self.rotate("rx", -delta, f"servo: yaw {delta:.0f} deg to square the fingers")

    def descend(self) -> Skill:
        """Down until the planner refuses even a small step (the table, or a static rim): the lowest GC
        height it accepts here."""
        touched = yield from self.lower_to(float(self.gc[2]) - 0.6)
        if touched:  # the palm is on the object's top: back off a little before closing
            yield from self.move("z", 0.01)
            return
        self.z_floor = float(self.gc[2]) if self.z_floor is None else min(self.z_floor, float(self.gc[2]))

    def lower_to(self, z: float, stop_on_contact: bool = True, step: float = 0.10) -> Skill:
        """Down to ``z`` in moves of ``step`` (a light object is pushed less by short ones), halving the
        step whenever the planner refuses one (a rim, the table); True when the fingers met something
        that stopped them short (a dynamic object)."""
        while float(self.gc[2]) - z > 0.004 and step >= 0.006:
            before, ask = float(self.gc[2]), min(step, float(self.gc[2]) - z)
            ok = yield from self.move("z", -ask)
            if ok and before - float(self.gc[2]) < 0.95 * ask - 0.001:  # stopped short: contact
                if stop_on_contact:
                    return True
                step /= 2
            elif not ok:
                step /= 2
        return False

    def release_z(self) -> float:
        """GC height to open at, above the table height the descent found."""
        floor = self.z_floor if self.z_floor is not None else float(self.gc[2]) - 0.1
        return floor + {"bowl": 0.05, "stack": 0.062}.get(self.goal.dest_kind, 0.015)

    def press(self) -> Skill:
        """Close, then go down in shrinking steps until the GC stops following (contact), and back up."""
        yield from self.grip(True)
        yield from self.lower_to(float(self.gc[2]) - 0.6, stop_on_contact=False)
        yield from self.move("z", 0.03)

    def take(self) -> Skill:
        """At the target: press it, or grasp it and lift (a grasp goal 5 cm higher). True when a
        placement's carry follows (lifted to ``z_cal``), False when the attempt is done."""
        if self.goal.kind == "press":
            yield from self.press()
            return False
        yield from self.descend()
        yield from self.grip(True)
        yield from self.move("z", 0.10)
        if self.goal.kind == "grasp":
            yield from self.move("z", 0.05)
            return False
        yield from self.move_z_to(self.z_cal)
        return True


def _motion(before: np.ndarray | None, after: np.ndarray | None) -> np.ndarray | None:
    """Image displacement of the robot between two frames of a fixed camera: the centroid of the
    bright grey pixels that appeared minus that of those that vanished."""
    if before is None or after is None:
        return None
    masks = []
    for img in (before, after):
        f = img.astype(np.float32) / 255.0
        mx, mn = f.max(axis=2), f.min(axis=2)
        masks.append((mx > 0.78) & ((mx - mn) / np.maximum(mx, 1e-6) < 0.08))
    appeared, vanished = masks[1] & ~masks[0], masks[0] & ~masks[1]
    if appeared.sum() < 20 or vanished.sum() < 20:
        return None
    va, ua = np.nonzero(appeared)
    vv, uv = np.nonzero(vanished)
    return np.array([ua.mean() - uv.mean(), va.mean() - vv.mean()])
