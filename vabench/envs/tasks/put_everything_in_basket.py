"""put_everything_in_basket (the paper's long-horizon composition track): five objects of the four
atomic-skill kinds (cube, lying bottle, upright bottle, pen) go into one large static basket,
right arm only. VA-Bench's file is not public; its known semantics (robotwin-task-notes 4.8) are
kept: success is the final state alone, every object contained (whole footprint inside the
basket, below the rim, let go), whatever the order or history.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vabench.core.vocab import RIGHT, Track

from ..objects.basket import BASKET_FLOOR, BASKET_INNER, BASKET_WALL, BASKET_WALL_HEIGHT, large_basket, world_aabb
from ..objects.common import BLUE, BOTTLE_MODELS, PEN_MODELS, RED, bottle, cube, pen
from ..privileged import PrivilegedState
from ..sim.bodies import BodySpec
from ..sim.geometry import axis_angle, matrix_to_quat
from ..sim.scene import TABLE_TOP_Z, World
from . import expert
from .base import SPAWN_Z, Task
from .grasp_single_bottle import LYING
from .grasp_single_bottle_upright import grasp_by_the_cap
from .grasp_single_pen import GraspSinglePen
from .registry import register_task

KINDS = ("cube", "bottle", "upright", "pen")  # cube, lying bottle, standing bottle, pen
CUBE_COLORS = (RED, BLUE, (0.95, 0.75, 0.10), (0.55, 0.25, 0.70))  # a cube's "model id" is its colour


@dataclass(frozen=True)
class Rect:
    """An oriented rectangle on the table plane: centre, unit axis ``u``, half sizes along ``u``
    and along its normal. Footprints of objects and of the hand."""

    c: np.ndarray
    u: np.ndarray
    hu: float
    hv: float

    @classmethod
    def at(cls, c, heading: float, hu: float, hv: float) -> Rect:
        return cls(np.asarray(c, float)[:2], np.array([np.cos(heading), np.sin(heading)]), hu, hv)

    def corners(self) -> np.ndarray:
        v = np.array([-self.u[1], self.u[0]])
        return np.array([self.c + a * self.hu * self.u + b * self.hv * v for a in (-1, 1) for b in (-1, 1)])

    def clear_of(self, other: Rect, gap: float) -> bool:
        """Separating axes: some edge normal of either rectangle parts them by at least ``gap``."""
        a, b = self.corners(), other.corners()
        for u in (self.u, other.u):
            for n in (u, np.array([-u[1], u[0]])):
                if (a @ n).min() - (b @ n).max() >= gap or (b @ n).min() - (a @ n).max() >= gap:
                    return True
        return False


def carry_lanes(fp: Rect, slot) -> list[Rect]:
    """What a carried object's footprint sweeps (carry_over moves x first, then y): along x at
    its own y, then along y at the slot's x. For an object that is round about z."""
    corner = np.array([slot[0], fp.c[1]])
    dx, dy = abs(corner[0] - fp.c[0]), abs(slot[1] - corner[1])
    return [
        Rect.at((fp.c + corner) / 2, 0.0, dx / 2 + fp.hu, fp.hv),
        Rect.at((corner + np.asarray(slot)) / 2, np.pi / 2, dy / 2 + fp.hv, fp.hu),
    ]


def _unit_xy(v) -> np.ndarray:
    return np.asarray(v[:2], float) / max(float(np.linalg.norm(v[:2])), 1e-9)


# the track's demonstrations: the four atomic skills, no full-task video (paper 3, C.8)
ATOMIC_DEMOS = ("place_single_cube", "grasp_single_bottle", "grasp_single_bottle_upright", "grasp_single_pen")


@register_task(Track.LONG_HORIZON, demos=ATOMIC_DEMOS)
class PutEverythingInBasket(Task):
    """Layout and expert are built around the hand (measured top-down, open): its palm is 0.20 m
    along the closing axis ry and 0.064 m across, its bottom 38 mm above GC; the open fingers
    reach 66 mm either side of GC along ry. Low objects (cube, lying bottle, pen) are grasped
    with the palm just above table-object height, so it must land clear of every object still
    on the table; standing bottles (19 cm) are taller than the palm at any low grasp or carry,
    so they go first, into the far right of the basket, where no later carry passes.

    Budget: the expert needs 84-107 steps (mean 99); twice that, rounded to 50, is 200 (camera actions
    and corrections need room over five pick-and-place cycles)."""

    name, arms, budget = "put_everything_in_basket", (RIGHT,), 200
    instruction = "Use the right arm to put every object on the table into the basket."
    labels = {"basket": "the basket"}
    N_OBJECTS = 5

    # layout: the basket behind, the five objects in the band in front of it
    BASKET_XY = (0.12, 0.055)  # inner centre; every slot is reachable top-down by the right arm
    OBJECTS_X = (-0.14, 0.47)  # footprints stay inside this x range ...
    TABLE_EDGE_Y = -0.325  # ... and between the table's front edge and the basket (less GAP)
    GAP = 0.02  # between footprints on the table
    CUBE_HALF = 0.025  # as place_single_cube
    YAW_DEG = {"cube": 45.0, "bottle": 22.5, "pen": 30.0}  # as the atomic tasks
    BOTTLE_MASS = 0.05  # as the bottle tasks
    # the hand, with a few mm margin: palm and open-finger half sizes along ry and across
    PALM = (0.11, 0.04)
    FINGERS = (0.075, 0.02)
    HAND_ABOVE_GC = 0.038  # palm bottom above GC, top-down

    # drop slots, from the inner centre (x, y), two per group. Long objects lie along y in two
    # lanes 11 cm apart (their fingers, along x, clear the neighbour and the wall); cubes sit at
    # the back, fingers along x; standing bottles take the right column, back one first, so none
    # is passed over, low enough in y that the arm reaches them carrying a hanging bottle.
    UPRIGHT_SLOTS = ((0.155, 0.02), (0.155, -0.10))
    LONG_SLOTS = ((-0.125, -0.045), (-0.015, -0.045))
    CUBE_SLOTS = ((-0.115, 0.105), (-0.005, 0.105))
    LIFT = 0.10  # after a grasp, one protocol move: the object clears the rim and the low objects by >= 3 cm
    DROP = 0.01  # release with the object's bottom this far above the basket floor ...
    PALM_OVER_RIM = 0.012  # ... unless the palm would come closer than this to the rim
    CLEAR = 0.10  # lift after letting go
    LIFTED_M = 0.030  # an object counts as lifted once it rose this far (per-object record only)

    # -- layout ---------------------------------------------------------------------------------
    def build(self, world: World, rng: np.random.Generator) -> None:
        bx, by = self.BASKET_XY
        hx, hy = BASKET_INNER[0] / 2, BASKET_INNER[1] / 2
        self.inner = (bx - hx, by - hy, bx + hx, by + hy)  # x0, y0, x1, y1
        self.floor_top_z = TABLE_TOP_Z + BASKET_FLOOR
        self.rim_z = self.floor_top_z + BASKET_WALL_HEIGHT
        self.basket_outer = Rect.at((bx, by), 0.0, hx + BASKET_WALL, hy + BASKET_WALL)
        world.add(large_basket("basket"), (bx, by, TABLE_TOP_Z))
        self.kinds = dict(zip(self.names(), self._draw_kinds(rng), strict=True))
        n_models = {"cube": len(CUBE_COLORS), "pen": len(PEN_MODELS), "bottle": len(BOTTLE_MODELS)}
        self.model_ids = {n: int(rng.integers(n_models.get(k, len(BOTTLE_MODELS)))) for n, k in self.kinds.items()}
        for name, m in self._draw_layout(rng).items():
            world.add(self._spec(name), m[:3, 3], matrix_to_quat(m[:3, :3]))

    def names(self) -> list[str]:
        return [f"object_{i}" for i in range(self.N_OBJECTS)]

    def _draw_kinds(self, rng) -> list[str]:
        """Five kinds with repetition, at most two per slot group (cubes, standing bottles, long
        objects), so every scene has at least three of the four atomic skills."""
        while True:
            kinds = [KINDS[i] for i in rng.integers(len(KINDS), size=self.N_OBJECTS)]
            if max(kinds.count("cube"), kinds.count("upright"), kinds.count("bottle") + kinds.count("pen")) <= 2:
                return kinds

    def model(self, name: str):
        k, i = self.kinds[name], self.model_ids[name]
        return CUBE_COLORS[i] if k == "cube" else PEN_MODELS[i] if k == "pen" else BOTTLE_MODELS[i]

    def _spec(self, name: str) -> BodySpec:
        k, m = self.kinds[name], self.model(name)
        if k == "cube":
            return cube(name, self.CUBE_HALF, m, 0.01)
        return pen(name, m) if k == "pen" else bottle(name, m, self.BOTTLE_MASS)

    def _rest_pose(self, name: str, yaw: float) -> np.ndarray:
        """Resting on the table at the origin's xy = 0, as the atomic tasks spawn it."""
        k, m = self.kinds[name], self.model(name)
        mat = np.eye(4)
        turn = axis_angle([0, 0, 1], yaw)
        if k == "cube":
            mat[:3, :3], mat[2, 3] = turn, SPAWN_Z + self.CUBE_HALF
        elif k == "pen":  # on its thicker cap, pointing +y before the yaw
            mat[:3, :3], mat[2, 3] = turn, TABLE_TOP_Z + m.cap_apothem + 0.001
        elif k == "bottle":  # on a flat face, cap toward +y, then yawed
            mat[:3, :3], mat[2, 3] = turn @ LYING, SPAWN_Z + m.radius
        else:
            mat[2, 3] = SPAWN_Z + m.body / 2
        return mat

    def _draw_layout(self, rng) -> dict[str, np.ndarray]:
        """Rejection sampling: footprints in the band, GAP apart, and a pick order exists in which
        every grasp lands clear (see ``pick``)."""
        y_max = self.basket_outer.c[1] - self.basket_outer.hv - 0.015
        for _ in range(5000):
            mats: dict[str, np.ndarray] = {}
            for name in self.names():
                for _ in range(50):
                    yaw = np.radians(rng.uniform(-1, 1) * self.YAW_DEG.get(self.kinds[name], 0.0))
                    c = (rng.uniform(*self.OBJECTS_X), rng.uniform(self.TABLE_EDGE_Y, y_max))
                    m = self._rest_pose(name, yaw)
                    m[:2, 3] += c - self.footprint(name, m).c  # the footprint centred on the draw
                    fp = self.footprint(name, m)
                    xy = fp.corners()
                    inside = xy[:, 0].min() >= self.OBJECTS_X[0] and xy[:, 0].max() <= self.OBJECTS_X[1]
                    inside &= xy[:, 1].min() >= self.TABLE_EDGE_Y and xy[:, 1].max() <= y_max
                    if inside and all(fp.clear_of(self.footprint(o, mo), self.GAP) for o, mo in mats.items()):
                        mats[name] = m
                        break
                else:
                    break
            if len(mats) == self.N_OBJECTS and self._order(mats) is not None:
                return mats
        raise RuntimeError("no feasible basket layout")

    # -- geometry shared by the layout check and the expert -------------------------------------
    def footprint(self, name: str, m: np.ndarray) -> Rect:
        k, mod = self.kinds[name], self.model(name)
        if k == "cube":
            return Rect(m[:2, 3].copy(), _unit_xy(m[:3, 0]), self.CUBE_HALF, self.CUBE_HALF)
        if k == "pen":  # origin at the back end, axis local y
            d = _unit_xy(m[:3, 1])
            return Rect(m[:2, 3] + d * mod.length / 2, d, mod.length / 2, mod.cap_apothem + 0.002)
        r = mod.radius * 1.04  # the 12-gon's corners
        if k == "upright":
            return Rect(m[:2, 3].copy(), np.array([1.0, 0.0]), r, r)
        d = _unit_xy(m[:3, 2])  # lying bottle: origin mid-body, axis local z
        return Rect(m[:2, 3] + d * (mod.height - mod.body) / 2, d, mod.height / 2, r)

    def grasp_point(self, name: str, m: np.ndarray) -> np.ndarray:
        """Where each atomic skill closes: the cube's and the lying bottle's centre, the pen's
        barrel (grasp_single_pen's point), the standing bottle's cap."""
        k = self.kinds[name]
        if k == "pen":
            return (m @ np.array([0.0, GraspSinglePen.GRASP_AT * self.model(name).length, 0.0, 1.0]))[:3]
        return m[:3, 3] + (0, 0, self.model(name).cap_z if k == "upright" else 0.0)

    def headings(self, name: str, m: np.ndarray) -> list[float]:
        """Closing-axis headings (mod 180 deg) that close across the object."""
        k = self.kinds[name]
        if k == "cube":
            a = float(np.arctan2(m[1, 0], m[0, 0]))
            return [a, a + np.pi / 2]
        if k == "upright":
            return [0.0]  # round: grasp_by_the_cap takes its heading mod 90
        axis = m[:3, 2] if k == "bottle" else m[:3, 1]
        return [float(np.arctan2(axis[1], axis[0])) + np.pi / 2]

    def pick(self, mats: dict[str, np.ndarray], remaining: list[str]) -> tuple[str, float] | None:
        """The next object and heading. Standing bottles first, by name, when their open fingers
        (either heading mod 90) and the hanging bottle's carry clear every other standing bottle;
        then the first low object whose palm lands clear of the basket and of every object left."""
        fps = {n: self.footprint(n, mats[n]) for n in remaining}
        up = [n for n in remaining if self.kinds[n] == "upright"]
        for n in up:
            g = self.grasp_point(n, mats[n])
            sweep = [Rect.at(g, a, *self.FINGERS) for a in (0.0, np.pi / 2)]
            sweep += carry_lanes(fps[n], self.slot(n, list(self.kinds.values()).count("upright") - len(up)))
            if all(r.clear_of(fps[o], 0.01) for r in sweep for o in up if o != n):
                return n, 0.0
        if up:
            return None
        for n in remaining:
            for a in self.headings(n, mats[n]):
                palm = Rect.at(self.grasp_point(n, mats[n]), a, *self.PALM)
                if palm.clear_of(self.basket_outer, 0.01) and all(
                    palm.clear_of(fps[o], 0.005) for o in remaining if o != n
                ):
                    return n, a
        return None

    def _order(self, mats: dict[str, np.ndarray]) -> list[str] | None:
        remaining, order = list(mats), []
        while remaining:
            nxt = self.pick(mats, remaining)
            if nxt is None:
                return None
            order.append(nxt[0])
            remaining.remove(nxt[0])
        return order

    def slot(self, name: str, k: int) -> np.ndarray:
        """Drop point (footprint centre, world xy) of the ``k``-th object of this one's group."""
        kind = self.kinds[name]
        slots = self.UPRIGHT_SLOTS if kind == "upright" else self.CUBE_SLOTS if kind == "cube" else self.LONG_SLOTS
        x0, y0, x1, y1 = self.inner
        return np.array([(x0 + x1) / 2, (y0 + y1) / 2]) + slots[k]

    # -- predicate (final state, per object) -------------------------------------------------------
    def conditions(self, s: PrivilegedState, name: str) -> dict[str, bool]:
        """One object contained: its world AABB's footprint inside the inner rectangle, its
        bottom below the rim top (not resting on a wall), and no finger touching it (so the
        basket or other objects carry it)."""
        lo, hi = world_aabb(s.world.bodies[name].spec, s.matrix(name))
        x0, y0, x1, y1 = self.inner
        return {
            "inside": bool(lo[0] >= x0 and lo[1] >= y0 and hi[0] <= x1 and hi[1] <= y1),
            "below_rim": bool(lo[2] < self.rim_z),
            "released": not s.touching(name, RIGHT),
        }

    def update(self, s: PrivilegedState) -> None:
        for n in self.names():  # the reference's per-object was_lifted (its seed probe's 30 mm minimum)
            self.latch(s, f"{n}_lifted", s.peak_lift(n) >= self.LIFTED_M)

    def placement(self, s: PrivilegedState) -> dict[str, dict]:
        """Per-object state for the episode record: kind, ever lifted, contained now. Placements
        can then be split by atomic skill, e.g. to see which skill fails in composition."""
        return {
            n: {
                "kind": self.kinds[n],
                "lifted": s.flags.get(f"{n}_lifted", False),
                "contained": all(self.conditions(s, n).values()),
            }
            for n in self.names()
        }

    def objects_placed(self, s: PrivilegedState) -> int:
        return sum(all(self.conditions(s, n).values()) for n in self.names())

    def success(self, s: PrivilegedState) -> bool:
        return self.objects_placed(s) == self.N_OBJECTS  # strict: all five

    def checkpoints(self, s: PrivilegedState) -> dict[str, bool]:
        """placed_k: at least k objects contained at once. Counts, not names: order is free, and
        the paper reports placements out of five per episode."""
        n = self.objects_placed(s)
        return {f"placed_{k}": self.latch(s, f"placed_{k}", n >= k) for k in range(1, self.N_OBJECTS + 1)}

    # -- expert ---------------------------------------------------------------------------------
    def expert(self, s: PrivilegedState):
        yield from expert.to_topdown(s, RIGHT)
        remaining, done = self.names(), {k: 0 for k in KINDS}
        while remaining:
            mats = {n: s.matrix(n) for n in remaining}
            name, heading = self.pick(mats, remaining) or (
                remaining[0],
                self.headings(remaining[0], mats[remaining[0]])[0],
            )
            kind = self.kinds[name]
            group = "bottle" if kind == "pen" else kind  # pens and lying bottles share the lanes
            g = self.grasp_point(name, mats[name])
            yield from expert.move_gc(s, RIGHT, (g[0], g[1], s.gc(RIGHT)[2]), axes="yx")  # travel, then descend
            yield from self._grasp(s, name, heading)
            yield from expert.lift(s, RIGHT, self.LIFT)
            if kind != "upright":  # fingers along x, the slots' finger room
                yield from expert.align_closing_axis(s, RIGHT, 0.0, 180.0)
            target = self.slot(name, done[group]) + s.position(name)[:2] - self.footprint(name, s.matrix(name)).c
            yield from expert.carry_over(s, RIGHT, name, target)
            yield from self._lower(s, name)
            yield {"action": "gripper.open"}
            yield from expert.lift(s, RIGHT, self.CLEAR)
            remaining.remove(name)
            done[group] += 1

    def _grasp(self, s: PrivilegedState, name: str, heading: float):
        """Each kind's atomic skill, as its base expert grasps it."""
        kind = self.kinds[name]
        if kind == "upright":
            yield from grasp_by_the_cap(self, s, name, self.model(name))
        elif kind == "pen":
            yield from expert.grasp_point_from_above(s, RIGHT, lambda: self.grasp_point(name, s.matrix(name)), heading)
        else:  # cube (place_single_cube) and lying bottle (grasp_single_bottle): top-down at the centre
            z = s.position(name)[2]
            yield from expert.grasp_from_above(s, RIGHT, name, heading, grasp_z=z, symmetry_deg=180.0)

    def _lower(self, s: PrivilegedState, name: str):
        """Until the object's bottom is DROP above the floor, the palm staying over the rim."""
        bottom = world_aabb(s.world.bodies[name].spec, s.matrix(name))[0][2]
        gc = s.gc(RIGHT)
        z = max(gc[2] + self.floor_top_z + self.DROP - bottom, self.rim_z + self.PALM_OVER_RIM - self.HAND_ABOVE_GC)
        yield from expert.move_gc(s, RIGHT, (gc[0], gc[1], z), axes="z")
