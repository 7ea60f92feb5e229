"""The fixed, model-agnostic executor: carries out exactly the paper's robot actions (Table 26)
and says what happened and why.

Semantics (all targets refer to GC, the finger midpoint):
* ``move_world``: GC moves ``distance_mm`` along a world axis, orientation unchanged. The target
  is clamped to the gripper workspace box and the clamp is reported. Straight line first; if
  that is blocked, a collision-free detour (RRT) to the same target.
* ``rotate_local``: rotation about the current local rx/ry/rz (right-hand rule) through GC, in
  waypoints of at most 10 deg, GC held fixed. If any waypoint would put the hand outside the
  workspace the whole rotation is rejected without motion.
* ``gripper open/close``: physical fingers; the reported state is the commanded one, so
  "closed" stays true when an object blocks the fingers (RoboTwin's convention).
* ``dual move``: both arms' straight paths are planned, checked against each other and run in
  one time-aligned motion. If either arm cannot plan, *neither* moves (all-or-nothing, unlike
  RoboTwin, whose surviving arm moves alone and can tilt a shared object): the feedback names
  the arm that failed and why.

Feedback never mentions task objects' positions or contacts; it names fixtures (table, wall,
pedestals), the other arm, and static task bodies by their display names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vabench.core.vocab import LEFT, RIGHT

from ..actions import DualGripper, DualMoveWorld, Gripper, MoveWorld, RotateLocal
from .geometry import AXES, HAND_TO_GRIPPER, angle_between_deg, axis_angle
from .planner import DETOUR_GOAL_CLEARANCE, ArmPlanner, Obstacle, Plan
from .robot import FINGER_CLOSED, FINGER_OPEN
from .scene import World

WORKSPACE_LO = np.array([-0.55, -0.45, 0.74])
WORKSPACE_HI = np.array([0.55, 0.35, 1.35])
ROTATION_WAYPOINT_DEG = 10.0
SETTLE_STEPS = 20
GRIPPER_RAMP_STEPS = 60
GRIPPER_HOLD_STEPS = 40
TRACKING_NOTE_MM = 3.0  # report the remaining GC error above this
NO_MOTION_MM = 0.5


@dataclass
class Outcome:
    planner_success: bool
    feedback: str


class Executor:
    def __init__(self, planners: dict[str, ArmPlanner]):
        self.planners = planners
        self.world: World | None = None
        self.labels: dict[str, str] = {}

    # -- episode set-up ------------------------------------------------------------------
    def bind(self, world: World, labels: dict[str, str]) -> None:
        """Attach to a freshly built world; fixtures and static bodies become planner obstacles."""
        self.world = world
        self.labels = labels
        obstacles = [
            Obstacle(name, _fixture_label(name), spec, m, padded=not name.endswith("_pedestal"))
            for name, spec, m in world.fixture_obstacles()
        ]
        for body in world.bodies.values():
            if body.static:
                obstacles.append(Obstacle(body.name, labels.get(body.name), body.spec, body.matrix()))
        for planner in self.planners.values():
            planner.set_static_obstacles(obstacles)
            planner.set_dynamic_obstacles([])

    def _sync(self, arm: str) -> ArmPlanner:
        planner = self.planners[arm]
        other = LEFT if arm == RIGHT else RIGHT
        planner.sync(self.world.arms[arm].qpos, self.world.arms[other].qpos)
        return planner

    def _dynamic_obstacles(self, arm: str, goal_gc: np.ndarray) -> list[Obstacle]:
        """Dynamic bodies for detours, except those touching this arm's fingers (held or pushed)
        and those next to the target (what the gripper is going for). They stay unnamed in
        feedback: naming them would tell the model where they are."""
        touching = {name for _, name in self.world.finger_contacts(arm)}
        return [
            Obstacle(body.name, None, body.spec, body.matrix())
            for body in self.world.bodies.values()
            if not body.static
            and body.name not in touching
            and np.linalg.norm(body.matrix()[:3, 3] - goal_gc) > DETOUR_GOAL_CLEARANCE
        ]

    # -- physics -------------------------------------------------------------------------
    def _run(self, trajectories: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        arms = self.world.arms
        n = max(len(p) for p, _ in trajectories.values())
        for i in range(n):
            for arm, (pos, vel) in trajectories.items():
                if i < len(pos):
                    arms[arm].set_arm_target(pos[i], vel[i])
            self.world.step()
        for arm, (pos, _) in trajectories.items():
            arms[arm].set_arm_target(pos[-1])
        self.world.step(SETTLE_STEPS)

    # -- planning ------------------------------------------------------------------------
    def _move_target(self, mv: MoveWorld) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
        """(TCP goal, GC target, GC now, clamp note) for a world move. Only the moved axis is
        clamped: a GC that physics left a hair outside the box on another axis stays put."""
        arm = self.world.arms[mv.arm]
        gc = arm.gc()
        i = "xyz".index(mv.axis)
        wanted = gc[i] + mv.sign * mv.distance_mm / 1000.0
        target = gc.copy()
        target[i] = min(max(wanted, WORKSPACE_LO[i]), WORKSPACE_HI[i])
        note = ""
        if abs(target[i] - wanted) > 1e-9:
            bound = "<=" if mv.sign > 0 else ">="
            note = (
                f"clamped to the workspace ({mv.axis} {bound} {target[i]:.2f} m): "
                f"{abs(target[i] - gc[i]) * 1000.0:.1f} of the {mv.distance_mm:g} mm asked along "
                f"{'+' if mv.sign > 0 else '-'}{mv.axis}"
            )
        goal = self.planners[mv.arm].fk_tcp(arm.qpos)
        goal[:3, 3] += target - gc
        return goal, target, gc, note

    def _plan(self, arm: str, goals: list[np.ndarray], goal_gc: np.ndarray, seed: int) -> tuple[Plan, Plan | None]:
        """Straight first, then a detour to the last goal. Returns (straight, detour or None)."""
        planner = self._sync(arm)
        straight = planner.plan_straight(goals, self.world.arms[arm].qpos)
        if straight.ok:
            return straight, None
        planner.set_dynamic_obstacles(self._dynamic_obstacles(arm, goal_gc))
        try:
            return straight, planner.plan_detour(goals[-1], self.world.arms[arm].qpos, seed)
        finally:
            planner.set_dynamic_obstacles([])

    def _why_straight_failed(self, arm: str, straight: Plan) -> str:
        if straight.reason == "collision":
            what = self.planners[arm].describe(straight.blockers)
            return f"the straight path collides with {what}" if what else "the straight path is blocked"
        return "the straight path runs into the arm's joint limits"

    def _failure_text(self, arm: str, straight: Plan, detour: Plan | None) -> str:
        if detour is not None and detour.reason == "unreachable":
            return (
                "the target is out of the arm's reach "
                "(no inverse-kinematics solution for that position and orientation)"
            )
        if detour is not None and detour.reason == "collision":
            what = self.planners[arm].describe(detour.blockers)
            return (
                f"at the target the arm would collide with {what}"
                if what
                else "no collision-free arm configuration reaches the target"
            )
        return f"{self._why_straight_failed(arm, straight)} and no collision-free detour was found"

    def _planned(self, arm: str, straight: Plan, detour: Plan | None) -> tuple[Plan | None, str]:
        """The plan to run (None if none) and the opening of the feedback text."""
        if straight.ok:
            return straight, "executed"
        if detour is not None and detour.ok:
            return detour, f"executed via a detour ({self._why_straight_failed(arm, straight)})"
        return None, f"not executed: {self._failure_text(arm, straight, detour)}; the arm did not move"

    # -- actions -------------------------------------------------------------------------
    def move_world(self, act: MoveWorld, seed: int) -> Outcome:
        goal, target, gc, note = self._move_target(act)
        suffix = f" ({note})" if note else ""
        if np.linalg.norm(target - gc) * 1000 < NO_MOTION_MM:
            return Outcome(True, f"not moved: GC is already at the workspace limit{suffix}")
        plan, text = self._planned(act.arm, *self._plan(act.arm, [goal], target, seed))
        if plan is None:
            return Outcome(False, text + suffix)
        self._run({act.arm: (plan.positions, plan.velocities)})
        new_gc = self.world.arms[act.arm].gc()
        moved = (new_gc - gc) @ AXES[act.axis] * 1000.0
        return Outcome(
            True, f"{text}: GC moved {moved:+.1f} mm along {act.axis}{suffix}" + _tracking_note(new_gc, target)
        )

    def rotate_local(self, act: RotateLocal, seed: int) -> Outcome:
        arm = self.world.arms[act.arm]
        tcp, gc = self.planners[act.arm].fk_tcp(arm.qpos), arm.gc()
        hand = arm.hand_matrix()
        grip = hand[:3, :3] @ HAND_TO_GRIPPER
        axis = grip[:, {"rx": 0, "ry": 1, "rz": 2}[act.axis]]
        n = max(1, math.ceil(act.angle_deg / ROTATION_WAYPOINT_DEG - 1e-9))
        goals = []
        for k in range(1, n + 1):
            rot = axis_angle(axis, math.radians(act.sign * act.angle_deg * k / n))
            hand_k = gc + rot @ (hand[:3, 3] - gc)
            if np.any(hand_k < WORKSPACE_LO - 1e-9) or np.any(hand_k > WORKSPACE_HI + 1e-9):
                return Outcome(
                    False,
                    f"not executed: waypoint {k} of {n} would put the hand outside the workspace "
                    f"({_outside(hand_k)}); the arm did not move",
                )
            goal = np.eye(4)
            goal[:3, :3] = rot @ tcp[:3, :3]
            goal[:3, 3] = gc + rot @ (tcp[:3, 3] - gc)
            goals.append(goal)
        plan, text = self._planned(act.arm, *self._plan(act.arm, goals, gc, seed))
        if plan is None:
            return Outcome(False, text)
        self._run({act.arm: (plan.positions, plan.velocities)})
        turned = angle_between_deg(grip, arm.gripper_rotation())
        text += f": rotated {turned:.1f} deg about {act.axis}"
        if plan.kind == "detour":
            text += "; GC was not held fixed during the detour"
        drift = np.linalg.norm(arm.gc() - gc) * 1000
        if drift > TRACKING_NOTE_MM:
            text += f"; GC is {drift:.1f} mm from where it started"
        return Outcome(True, text)

    def gripper(self, act: Gripper) -> Outcome:
        return self._grip((act.arm,), act.close)

    def dual_gripper(self, act: DualGripper) -> Outcome:
        return self._grip((LEFT, RIGHT), act.close)

    def _grip(self, arms: tuple[str, ...], close: bool) -> Outcome:
        world = self.world
        target = FINGER_CLOSED if close else FINGER_OPEN
        start = {a: world.arms[a].finger_target() for a in arms}
        for i in range(1, GRIPPER_RAMP_STEPS + 1):
            for a in arms:
                world.arms[a].set_finger_target(start[a] + (target - start[a]) * i / GRIPPER_RAMP_STEPS)
            world.step()
        world.step(GRIPPER_HOLD_STEPS)
        notes = []
        for a in arms:
            was = world.arms[a].closed
            world.arms[a].closed = close
            state = "closed" if close else "opened"
            notes.append(f"{a} gripper {state}" + (" (it already was)" if was == close else ""))
        return Outcome(True, "executed: " + ", ".join(notes))

    def dual_move_world(self, act: DualMoveWorld, seed: int) -> Outcome:
        plans, targets, starts, notes, failures = {}, {}, {}, [], []
        for mv in (act.left, act.right):
            goal, target, gc, note = self._move_target(mv)
            if note:
                notes.append(f"{mv.arm}: {note}")
            planner = self._sync(mv.arm)
            # the other arm moves too: it is checked against this one below, time-aligned
            plan = planner.plan_straight([goal], self.world.arms[mv.arm].qpos, ignore=frozenset({planner.other_name}))
            if not plan.ok:
                failures.append(f"for the {mv.arm} arm {self._why_straight_failed(mv.arm, plan)}")
                continue
            plans[mv.arm], targets[mv.arm], starts[mv.arm] = (plan.positions, plan.velocities), target, gc
        if not failures:
            plans = _time_align(plans)
            if self._arms_collide(plans):
                failures.append("the two arms would collide with each other")
        suffix = f" ({'; '.join(notes)})" if notes else ""
        if failures:
            return Outcome(
                False,
                "not executed: "
                + "; ".join(failures)
                + "; neither arm moved (synchronized moves are all-or-nothing)"
                + suffix,
            )
        self._run(plans)
        parts = []
        for mv in (act.left, act.right):
            new_gc = self.world.arms[mv.arm].gc()
            moved = (new_gc - starts[mv.arm]) @ AXES[mv.axis] * 1000.0
            parts.append(f"{mv.arm} GC moved {moved:+.1f} mm along {mv.axis}" + _tracking_note(new_gc, targets[mv.arm]))
        return Outcome(True, "executed: " + "; ".join(parts) + suffix)

    def _arms_collide(self, plans: dict[str, tuple[np.ndarray, np.ndarray]]) -> bool:
        """Check the time-aligned paths of both arms against each other (every 2nd step and the end)."""
        right = self.planners["right"]
        left = self.world.arms["left"]
        fingers = left.qpos[left.dof :]
        n = len(plans["right"][0])
        for i in sorted(set(range(0, n, 2)) | {n - 1}):
            right.sync_other_arm(np.concatenate([plans["left"][0][i], fingers]))
            if right.other_name in right.collisions(plans["right"][0][i]):
                return True
        return False


def _time_align(plans: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Stretch the shorter trajectory so both arms start and finish together."""
    n = max(len(p) for p, _ in plans.values())
    out = {}
    for side, (pos, vel) in plans.items():
        if len(pos) == n:
            out[side] = (pos, vel)
            continue
        src = np.linspace(0.0, 1.0, len(pos))
        dst = np.linspace(0.0, 1.0, n)
        scale = (len(pos) - 1) / max(n - 1, 1)
        out[side] = (
            np.stack([np.interp(dst, src, pos[:, j]) for j in range(pos.shape[1])], axis=1),
            np.stack([np.interp(dst, src, vel[:, j]) * scale for j in range(vel.shape[1])], axis=1),
        )
    return out


def _tracking_note(gc: np.ndarray, target: np.ndarray) -> str:
    err = np.linalg.norm(gc - target) * 1000.0
    return f"; GC stopped {err:.1f} mm from the target" if err > TRACKING_NOTE_MM else ""


def _outside(p: np.ndarray) -> str:
    out = []
    for i, axis in enumerate("xyz"):
        if p[i] < WORKSPACE_LO[i]:
            out.append(f"{axis} {p[i]:.2f} < {WORKSPACE_LO[i]:.2f} m")
        elif p[i] > WORKSPACE_HI[i]:
            out.append(f"{axis} {p[i]:.2f} > {WORKSPACE_HI[i]:.2f} m")
    return ", ".join(out)


def _fixture_label(name: str) -> str:
    if name.startswith("table"):
        return "the table"
    if name.endswith("_pedestal"):
        return f"the {name.split('_')[0]} arm's pedestal"
    return f"the {name}"
