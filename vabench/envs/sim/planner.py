"""mplib motion planning for one arm: straight Cartesian paths first, RRT detours second,
and every path re-checked against the real obstacle geometry before it is executed.

Two mplib planners per arm share the URDF:
* ``free`` knows only the robot (self-collision and joint limits). It generates straight
  screw paths and IK candidates.
* ``world`` also holds the obstacles: fixtures (table, wall, pedestals), static task bodies and
  the other arm. Straight paths are checked against it; RRT plans run in it.

Why not let plan_screw check obstacles itself: it fails as soon as the *start* state touches
something (a gripper resting on the table could then never move away), and it cannot say what
was hit. Checking the path ourselves lets the executor tell the model why a motion failed and
lets a gripper in contact move away from the contact.

Dynamic task bodies (a cube) are not obstacles for straight moves, as in the paper's executor:
the model may push, touch and grasp them. RRT detours, whose shape the model did not ask for,
avoid every body except those touching this arm's fingers and those within 8 cm of the target
(what the gripper is going for).

Contacts present when a motion starts may be kept only until the arm has left them (a gripper
resting on the table can lift off, but no path may push on into the table), and every motion
must end collision-free.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import mplib
import mplib.collision_detection.fcl as fcl
import numpy as np

from .assets import RobotFiles
from .bodies import BodySpec
from .embodiments import PANDA, Embodiment
from .geometry import matrix_to_quat
from .robot import base_pose
from .scene import TIMESTEP

MOVE_GROUP = "panda_hand_tcp"
JOINT_VEL = 2.0  # rad/s per arm joint, below the Panda's rated 2.1-2.6 (xArm7 3.14, UR5 3.15)
JOINT_ACC = 6.0  # rad/s^2; the Panda allows 10-20
FINGER_JOINTS = ["panda_finger_joint1", "panda_finger_joint2"]  # every robot carries the Panda hand
SCREW_QPOS_STEP = 0.02  # rad; mplib's default 0.1 leaves ~10 mm endpoint error, 0.02 ~2 mm
# Obstacle inflation (m) of each RRT try, each with its own seed. Every path is re-checked
# unpadded, so the last, unpadded try is accepted only if it does not graze.
RRT_PADDINGS = (0.01, 0.003, 0.0)
# Per try. RRTConnect stops on wall-clock time, so a budget near the solve time makes outcomes
# depend on how busy the machine is (at 0.5 s a UR5 hammer seed passed under load and failed idle:
# a timed-out padded try hands over to the next padding, another path). Solves here take 0.01-1 s
# of wall time (TOPP included); 10 s keeps them found at 10x oversubscription, and only a try that
# finds nothing pays it (none of 114 UR5 detours did; tests/test_determinism.py).
RRT_TIME_S = 10.0
MAX_PATH_STEPS = 2500  # 10 s of motion, as RoboTwin's limit
TOPP_MAX_POINTS = 40  # toppra's cost grows with the path's points; the dense screw path is smooth
DETOUR_GOAL_CLEARANCE = 0.08  # dynamic bodies this close to the target GC are what the gripper goes for


def _quiet_toppra() -> None:
    """mplib's plan_screw calls toppra.setup_logging, which adds a console handler every time
    (a slow leak and a flood of duplicated warnings); keep the logger bare and quiet."""
    logger = logging.getLogger("toppra")
    logger.handlers.clear()
    logger.setLevel(logging.ERROR)


@dataclass(frozen=True)
class Obstacle:
    """A collision body for the planner. ``label`` is what feedback may call it; None for bodies
    whose whereabouts the model must not learn from feedback (dynamic task objects)."""

    name: str
    label: str | None
    spec: BodySpec
    matrix: np.ndarray
    padded: bool = True  # False for bodies the robot rests on (its pedestal)


@dataclass
class Plan:
    ok: bool
    kind: str = ""  # "straight" or "detour"
    positions: np.ndarray | None = None  # (N, dof) one row per physics step
    velocities: np.ndarray | None = None
    reason: str = ""  # why not, for feedback: "unreachable", "collision", "joint_limits", "no_path"
    blockers: tuple[str, ...] = field(default_factory=tuple)


def _mpose(m: np.ndarray) -> mplib.Pose:
    return mplib.Pose(m[:3, 3], matrix_to_quat(m[:3, :3]))


def _fcl_object(name: str, spec: BodySpec, matrix: np.ndarray, pad: float) -> fcl.FCLObject:
    shapes, poses = [], []
    for part in spec.parts:
        if part.kind == "box":
            geom = fcl.Box(2.0 * np.asarray(part.size) + 2.0 * pad)
        elif part.kind == "sphere":
            geom = fcl.Sphere(part.size[0] + pad)
        elif part.kind == "cylinder":
            geom = fcl.Cylinder(part.size[0] + pad, 2.0 * part.size[1] + 2.0 * pad)
        elif part.kind == "capsule":
            geom = fcl.Capsule(part.size[0] + pad, 2.0 * part.size[1])
        else:
            raise ValueError(f"unknown part kind {part.kind!r}")
        shapes.append(fcl.CollisionObject(geom))
        poses.append(mplib.Pose(list(part.p), list(part.q)))
    return fcl.FCLObject(name, _mpose(matrix), shapes, poses)


class _PathPlanner(mplib.Planner):
    """mplib.Planner whose plan_screw returns the raw joint path: we append an exact endpoint and
    time-parameterise once, instead of paying for TOPP twice."""

    raw_paths = False

    def TOPP(self, path, step=0.1, verbose=False):  # noqa: N802 (mplib's name)
        if self.raw_paths:
            return None, np.asarray(path), None, None, None
        return super().TOPP(path, step, verbose)


def _new_planner(files: RobotFiles, arm: str, body: Embodiment) -> _PathPlanner:
    planner = _PathPlanner(
        str(files.urdf),
        MOVE_GROUP,
        srdf=str(files.srdf),
        use_convex=True,
        joint_vel_limits=np.full(body.dof, JOINT_VEL),
        joint_acc_limits=np.full(body.dof, JOINT_ACC),
    )
    bp = base_pose(arm, body.base_z)
    planner.set_base_pose(mplib.Pose(list(bp.p), list(bp.q)))
    return planner


class ArmPlanner:
    """Planning for one arm of ``body`` (its joints, then the hand's two fingers). Kept for the life
    of the env; obstacles are reset per episode."""

    def __init__(self, files: RobotFiles, arm: str, other_arm: str | None, body: Embodiment = PANDA):
        self.arm, self.dof = arm, body.dof
        self.free = _new_planner(files, arm, body)
        self.world = _new_planner(files, arm, body)
        dof = body.dof
        names = self.free.user_joint_names
        if len(names) != dof + 2 or list(names[dof:]) != FINGER_JOINTS:
            raise RuntimeError(f"unexpected mplib joint order {names}")
        self.tcp_index = self.free.link_name_2_idx[MOVE_GROUP]
        self._robot_name = self.world.robot.get_name()
        self.base = base_pose(arm, body.base_z).to_transformation_matrix()
        self.base_inv = np.linalg.inv(self.base)
        self._fingers = np.array([0.04, 0.04])  # this arm's finger joints, synced before planning
        self.limits = self.free.joint_limits[: self.dof]
        self.other_name = None
        if other_arm is not None:
            self.other_name = f"{other_arm}_arm"
            other = mplib.ArticulatedModel(str(files.urdf), str(files.srdf), name=self.other_name, convex=True)
            bp = base_pose(other_arm, body.base_z)
            other.set_base_pose(mplib.Pose(list(bp.p), list(bp.q)))
            self.world.planning_world.add_articulation(other, False)
        self.labels: dict[str, str | None] = {}
        if self.other_name:
            self.labels[self.other_name] = f"the {other_arm} arm"
        self._static: list[Obstacle] = []
        self._dynamic: list[str] = []
        self._pad = 0.0

    # -- world state -------------------------------------------------------------------
    def set_static_obstacles(self, obstacles: list[Obstacle]) -> None:
        pw = self.world.planning_world
        for ob in self._static:
            pw.remove_object(ob.name)
        self._static = list(obstacles)
        self.labels = {k: v for k, v in self.labels.items() if k == self.other_name}
        for ob in obstacles:
            pw.add_object(_fcl_object(ob.name, ob.spec, ob.matrix, 0.0))
            self.labels[ob.name] = ob.label
        self._pad = 0.0

    def _set_padding(self, pad: float) -> None:
        if pad == self._pad:
            return
        pw = self.world.planning_world
        for ob in self._static:
            if ob.padded:
                pw.remove_object(ob.name)
                pw.add_object(_fcl_object(ob.name, ob.spec, ob.matrix, pad))
        self._pad = pad

    def set_dynamic_obstacles(self, obstacles: list[Obstacle]) -> None:
        pw = self.world.planning_world
        for name in self._dynamic:
            pw.remove_object(name)
        self._dynamic = []
        for ob in obstacles:
            pw.add_object(_fcl_object(ob.name, ob.spec, ob.matrix, 0.0))
            self.labels[ob.name] = ob.label
            self._dynamic.append(ob.name)

    def sync(self, own_q9, other_q9) -> None:
        """Mirror the real fingers of this arm and the full state of the other arm."""
        self._fingers = np.asarray(own_q9, dtype=float)[self.dof : self.dof + 2].copy()
        self.sync_other_arm(other_q9)

    def sync_other_arm(self, qpos9) -> None:
        if self.other_name:
            self.world.planning_world.get_articulation(self.other_name).set_qpos(np.asarray(qpos9, float), True)

    # -- kinematics ----------------------------------------------------------------------
    def fk_tcp(self, q) -> np.ndarray:
        q9 = self._full(q)
        self.free.pinocchio_model.compute_forward_kinematics(q9)
        return self.base @ self.free.pinocchio_model.get_link_pose(self.tcp_index).to_transformation_matrix()

    def _full(self, q) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        return q if len(q) == self.dof + 2 else np.concatenate([q[: self.dof], self._fingers])

    def _to_base(self, m_world: np.ndarray) -> mplib.Pose:
        return _mpose(self.base_inv @ m_world)

    def collisions(self, q, exempt: frozenset[str] = frozenset()) -> set[str]:
        """Names of world objects (or "self") the arm collides with at ``q`` (arm joints, or with the fingers)."""
        pw = self.world.planning_world
        self.world.robot.set_qpos(self._full(q), True)
        hits = set()
        for c in pw.check_collision():
            if c.collision_type == "self":
                hits.add("self")
                continue
            other = c.object_name2 if c.object_name1 == self._robot_name else c.object_name1
            if other not in exempt:
                hits.add(other)
        return hits

    def describe(self, names) -> str | None:
        """Feedback words for what was hit; None when nothing hit may be named."""
        parts = sorted({"itself" if n == "self" else self.labels.get(n) for n in names} - {None})
        return " and ".join(parts) if parts else None

    def in_limits(self, q7) -> bool:
        q7 = np.asarray(q7)[: self.dof]
        return bool(np.all(q7 >= self.limits[:, 0] - 1e-6) and np.all(q7 <= self.limits[:, 1] + 1e-6))

    def ik_candidates(self, goal_tcp: np.ndarray, q9, n: int = 20) -> list[np.ndarray]:
        """Self-collision-free IK solutions (obstacles ignored), nearest first."""
        status, sols = self.free.IK(self._to_base(goal_tcp), self._full(q9), n_init_qpos=n)
        if sols is None:
            return []
        q0 = self._full(q9)[: self.dof]
        return sorted(sols, key=lambda s: float(np.linalg.norm(np.asarray(s)[: self.dof] - q0)))

    def refine(self, goal_tcp: np.ndarray, q_near) -> np.ndarray | None:
        """Exact IK from a nearby configuration (fixes the screw integrator's endpoint error)."""
        q, ok, _ = self.free.pinocchio_model.compute_IK_CLIK(
            self.tcp_index, self._to_base(goal_tcp), self._full(q_near), [], eps=1e-6, max_iter=200
        )
        if not ok or not self.in_limits(q):
            return None
        if np.max(np.abs(q[: self.dof] - np.asarray(q_near)[: self.dof])) > 0.1:
            return None
        return np.asarray(q[: self.dof])

    def timed(self, path: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        if np.max(np.abs(path - path[0])) < 1e-6:  # nothing to do: hold
            return path[-1:].copy(), np.zeros((1, self.dof))
        if len(path) > TOPP_MAX_POINTS:
            path = path[np.unique(np.linspace(0, len(path) - 1, TOPP_MAX_POINTS).round().astype(int))]
        try:
            _, pos, vel, _, _ = self.free.TOPP(path, TIMESTEP)
        except RuntimeError:
            return None
        finally:
            _quiet_toppra()
        if len(pos) == 0:
            return None
        return np.asarray(pos), np.asarray(vel)

    # -- plans ---------------------------------------------------------------------------
    def screw_path(self, goal_tcp: np.ndarray, q_start) -> np.ndarray | None:
        """Joint path (N, dof) whose TCP moves on the screw from its pose to ``goal_tcp``."""
        q_start = self._full(q_start)
        goal = _mpose(goal_tcp)
        start_tcp = self.fk_tcp(q_start)
        if np.linalg.norm(start_tcp[:3, 3] - goal_tcp[:3, 3]) < 1e-5 and np.allclose(
            start_tcp[:3, :3], goal_tcp[:3, :3], atol=1e-6
        ):
            return np.stack([q_start[: self.dof], q_start[: self.dof]])
        self.free.raw_paths = True
        try:
            for step in (SCREW_QPOS_STEP, SCREW_QPOS_STEP * 1.07):  # ~1% spurious "residual" failures
                r = self.free.plan_screw(goal, q_start, qpos_step=step, time_step=TIMESTEP)
                if r["status"] == "Success":
                    break
            else:
                return None
        finally:
            self.free.raw_paths = False
            _quiet_toppra()
        path = np.asarray(r["position"])
        exact = self.refine(goal_tcp, path[-1])
        if exact is None:
            return None
        return np.vstack([path, exact])

    def check_path(self, path: np.ndarray, ignore: frozenset[str] = frozenset()) -> set[str]:
        """Obstacles hit along ``path`` (names in ``ignore`` are not checked). What the arm touches
        at the start may stay touched until the arm has left it, never re-entered, and the last
        configuration must be free."""
        exempt = self.collisions(path[0]) - ignore
        hits: set[str] = set()
        for q in path:
            now = self.collisions(q) - ignore
            hits |= now - exempt
            if exempt and not now & exempt:
                exempt = set()
        return hits | (self.collisions(path[-1]) - ignore)

    def plan_straight(self, goals: list[np.ndarray], q9, ignore: frozenset[str] = frozenset()) -> Plan:
        """Screw segments through ``goals`` (a move's target, or a rotation's <= 10 deg waypoints),
        checked as one path and timed once."""
        q = self._full(q9)
        path = [q[: self.dof][None]]
        for goal in goals:
            seg = self.screw_path(goal, q)
            if seg is None:  # the screw ran into joint limits or self-collision
                return Plan(False, "straight", reason="joint_limits")
            path.append(seg[1:])
            q = self._full(seg[-1])
        full = np.vstack(path)
        hits = self.check_path(full, ignore)
        if hits:
            return Plan(False, "straight", reason="collision", blockers=tuple(sorted(hits)))
        timed = self.timed(full)
        if timed is None:  # TOPP finds no feasible timing: a path through a singularity
            return Plan(False, "straight", reason="joint_limits")
        return Plan(True, "straight", positions=timed[0], velocities=timed[1])

    def plan_detour(self, goal_tcp: np.ndarray, q9, seed: int) -> Plan:
        """RRTConnect to any collision-free IK solution, padded, then re-checked unpadded."""
        q9 = self._full(q9)
        mplib.set_global_seed(int(seed) % 2_000_000_000 + 1)  # IK restarts and RRT are random
        cands = self.ik_candidates(goal_tcp, q9)
        if not cands:
            return Plan(False, "detour", reason="unreachable")
        start_hits = frozenset(self.collisions(q9))
        nearest_hits: set[str] = set()
        goals = []
        for c in cands:  # nearest first: its collisions are the ones worth reporting
            h = self.collisions(c)
            if not h:
                goals.append(np.asarray(c, dtype=float))
            elif not nearest_hits:
                nearest_hits = h
        if not goals:
            return Plan(False, "detour", reason="collision", blockers=tuple(sorted(nearest_hits)))
        acm = self.world.planning_world.get_allowed_collision_matrix()
        allowed: list[str] = []
        try:
            for i, pad in enumerate(RRT_PADDINGS):
                self._set_padding(pad)
                # An arm that starts in contact (with the inflated obstacles too) must be allowed to
                # leave it; (re-)adding an object resets its matrix entry, so this follows the padding.
                for n in allowed:
                    acm.remove_default_entry(n)
                allowed = sorted(n for n in self.collisions(q9) | start_hits if n != "self")
                for n in allowed:
                    acm.set_default_entry(n, True)
                mplib.set_global_seed((int(seed) * 7 + i) % 2_000_000_000 + 1)
                try:
                    r = self.world.plan_qpos(goals, q9, time_step=TIMESTEP, planning_time=RRT_TIME_S)
                except RuntimeError:  # toppra cannot time this path (mplib raises): no path, as in plan_straight
                    r = {"status": "untimed"}
                _quiet_toppra()
                if r["status"] != "Success":
                    continue
                pos = np.asarray(r["position"])
                if len(pos) > MAX_PATH_STEPS:
                    continue
                for n in allowed:  # the re-check must see every contact again
                    acm.remove_default_entry(n)
                allowed = []
                self._set_padding(0.0)
                if not self.check_path(np.vstack([pos[::2], pos[-1:]])):
                    return Plan(True, "detour", positions=pos, velocities=np.asarray(r["velocity"]))
        finally:
            self._set_padding(0.0)
            for n in allowed:
                acm.remove_default_entry(n)
        return Plan(False, "detour", reason="no_path")
