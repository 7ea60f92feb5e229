"""The privileged view of an episode: object poses, contacts, lift history, checker inputs.

Only the evaluator (success predicates, checkpoints), the seed screener and the scripted expert
read this. The env exposes it solely through ``VABenchEnv.privileged()``; nothing here is ever
copied into an Observation.
"""

from __future__ import annotations

import numpy as np
import sapien

from .sim.scene import TOUCH_SEPARATION_M, World

PEAK_SAMPLE_STEPS = 5  # how often (physics steps) lift peaks are sampled during motions


class PrivilegedState:
    def __init__(self, world: World, controlled: tuple[str, ...]):
        self.world = world
        self.controlled = controlled
        self.start: dict[str, np.ndarray] = {}
        self.peak_z: dict[str, float] = {}
        self.flags: dict[str, bool] = {}  # latched task flags
        world.step_hooks.append(self._sample)

    # -- bookkeeping ---------------------------------------------------------------------
    def record_start(self) -> None:
        """Called once the scene has settled: lifts are measured from here."""
        for name, body in self.world.bodies.items():
            self.start[name] = body.matrix()
            self.peak_z[name] = float(self.start[name][2, 3])

    def _sample(self, step: int) -> None:
        if step % PEAK_SAMPLE_STEPS == 0 and self.start:
            self.update_peaks()

    def update_peaks(self) -> None:
        for name, body in self.world.bodies.items():
            if not body.static:
                self.peak_z[name] = max(self.peak_z[name], float(body.entity.pose.p[2]))

    # -- object state --------------------------------------------------------------------
    def matrix(self, name: str) -> np.ndarray:
        return self.world.bodies[name].matrix()

    def position(self, name: str) -> np.ndarray:
        return self.matrix(name)[:3, 3]

    def lift(self, name: str) -> float:
        """Current height above the settled start, metres."""
        return float(self.position(name)[2] - self.start[name][2, 3])

    def peak_lift(self, name: str) -> float:
        return float(self.peak_z[name] - self.start[name][2, 3])

    def displacement(self, name: str) -> float:
        return float(np.linalg.norm(self.position(name) - self.start[name][:3, 3]))

    # -- robot state ---------------------------------------------------------------------
    def closed(self, arm: str) -> bool:
        """The commanded gripper state (RoboTwin's predicate)."""
        return self.world.arms[arm].closed

    def gc(self, arm: str) -> np.ndarray:
        return self.world.arms[arm].gc()

    def gripper_rotation(self, arm: str) -> np.ndarray:
        return self.world.arms[arm].gripper_rotation()

    def jaw_width(self, arm: str) -> float:
        return self.world.arms[arm].finger_opening()

    # -- contacts --------------------------------------------------------------------------
    def _entities(self, who: str) -> set[sapien.Entity]:
        if who in self.world.arms:
            return {f.entity for f in self.world.arms[who].fingers}
        if who.endswith("_arm") and who[:-4] in self.world.arms:
            return {link.entity for link in self.world.arms[who[:-4]].links.values()}
        return {self.world.bodies[who].entity}

    def touching(self, a: str, b: str) -> bool:
        """True if ``a`` and ``b`` are in contact (an arm name means that arm's fingers)."""
        return self.world.touching(self._entities(a), self._entities(b))

    def contact_points(self, a: str, b: str) -> list[np.ndarray]:
        """World positions of the touching contact points between ``a`` and ``b`` (an arm name
        means that arm's fingers), e.g. where a finger presses a button."""
        ea, eb = self._entities(a), self._entities(b)
        out = []
        for c in self.world.scene.get_contacts():
            x, y = c.bodies[0].entity, c.bodies[1].entity
            if (x in ea and y in eb) or (x in eb and y in ea):
                out += [np.array(p.position, dtype=float) for p in c.points if p.separation < TOUCH_SEPARATION_M]
        return out

    def fingers_touching(self, name: str, arm: str) -> tuple[bool, bool]:
        hits = {i for i, body in self.world.finger_contacts(arm) if body == name}
        return 0 in hits, 1 in hits

    def snapshot(self) -> dict:
        """The evaluator-side state of this instant as plain JSON data (metres, radians, wxyz
        quaternions): every body's pose and lift, each controlled gripper's GC, command, opening and
        the bodies its fingers touch, and every arm's robot state (``robot``: joint positions, the
        fingers' last; the end-effector pose a model is told; GC; the gripper command), which
        datasets exported from the record need (vabench.export)."""
        objects = {}
        for name, body in self.world.bodies.items():
            pose = body.entity.pose
            objects[name] = {
                "p": [round(float(v), 5) for v in pose.p],
                "q": [round(float(v), 5) for v in pose.q],
                "lift": round(self.lift(name), 5) if name in self.start else None,
                "static": bool(body.static),
            }
        arms = {}
        for arm in self.controlled:
            touching = sorted({body for _, body in self.world.finger_contacts(arm) if body is not None})
            arms[arm] = {
                "gc": [round(float(v), 5) for v in self.gc(arm)],
                "closed": bool(self.closed(arm)),
                "jaw_m": round(float(self.jaw_width(arm)), 5),
                "touching": touching,
            }
        return {"objects": objects, "arms": arms, "robot": {arm: _robot(a) for arm, a in self.world.arms.items()}}

    def held(self, name: str, arm: str) -> bool:
        """Gripper closed with both fingers on the body."""
        return self.closed(arm) and all(self.fingers_touching(name, arm))


def _robot(arm) -> dict:
    p = arm.proprio()
    rounded = lambda values: [round(float(v), 5) for v in values]  # noqa: E731
    return {
        "qpos": rounded(arm.qpos),
        "ee_p": rounded(p.ee_position),
        "ee_q": rounded(p.ee_quat_wxyz),
        "gc": rounded(p.gc),
        "closed": bool(p.gripper_closed),
    }
