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

from .actions import DualGripper, DualMoveWorld, Gripper, MoveWorld, RotateLocal
from .geometry import AXES, HAND_TO_GRIPPER, axis_angle
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
    moved: bool = False
    kind: str = ""  # straight | detour | gripper | none


def _fmt_axis(axis: str, sign: int) -> str:
    return f"{'+' if sign > 0 else '-'}{axis}"


class Executor:
    def __init__(self, planners: dict[str, ArmPlanner]):
        self.planners = planners
        self.world: World | None = None
        self.obstacle_labels: dict[str, str] = {}

    # -- episode set-up ------------------------------------------------------------------
    def bind(self, world: World, labels: dict[str, str]) -> None:
        """Attach to a freshly built world; static bodies become planner obstacles."""
        self.world = world
        self.obstacle_labels = labels
        obstacles = [
            Obstacle(name, _fixture_label(name), spec, m, padded=not name.endswith("_pedestal"))
            for name, spec, m in world.fixture_obstacles()
        ]
        for body in world.bodies.values():
            if body.static:
                obstacles.append(Obstacle(body.name, labels.get(body.name, "an object"), body.spec, body.matrix()))
        for planner in self.planners.values():
            planner.set_static_obstacles(obstacles)
            planner.set_dynamic_obstacles([])

    def _other(self, arm: str) -> str:
        return "left" if arm == "right" else "right"

    def _sync(self, arm: str) -> ArmPlanner:
        planner = self.planners[arm]
        planner.sync_other_arm(self.world.arms[self._other(arm)].qpos)
        return planner

    def _dynamic_obstacles(self, arm: str, goal_gc: np.ndarray) -> list[Obstacle]:
        """Dynamic bodies for detours, except those touching this arm's fingers (held or pushed)
        and those next to the target (what the gripper is going for)."""
        touching = set()
        finger_entities = {f.entity for f in self.world.arms[arm].fingers}
        for c in self.world.contacts():
            a, b = c.bodies[0].entity, c.bodies[1].entity
            if a in finger_entities:
                touching.add(b.name)
            elif b in finger_entities:
                touching.add(a.name)
        return [
            Obstacle(body.name, self.obstacle_labels.get(body.name, "an object"), body.spec, body.matrix())
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

    # -- helpers -------------------------------------------------------------------------
    def _tcp_and_gc(self, arm: str) -> tuple[np.ndarray, np.ndarray]:
        a = self.world.arms[arm]
        return self.planners[arm].fk_tcp(a.qpos), a.gc()

    def _plan_to(self, arm: str, goal_tcp: np.ndarray, goal_gc: np.ndarray, seed: int) -> tuple[Plan, Plan | None]:
        """Straight first, then a detour. Returns (straight plan, detour or None)."""
        planner = self._sync(arm)
        q = self.world.arms[arm].qpos
        straight = planner.plan_straight(goal_tcp, q)
        if straight.ok:
            return straight, None
        return straight, self._detour(arm, goal_tcp, goal_gc, seed)

    def _detour(self, arm: str, goal_tcp: np.ndarray, goal_gc: np.ndarray, seed: int) -> Plan:
        planner = self.planners[arm]
        planner.set_dynamic_obstacles(self._dynamic_obstacles(arm, goal_gc))
        try:
            return planner.plan_detour(goal_tcp, self.world.arms[arm].qpos, seed)
        finally:
            planner.set_dynamic_obstacles([])

    def _failure_text(self, arm: str, straight: Plan, detour: Plan | None) -> str:
        planner = self.planners[arm]
        if detour is not None and detour.reason == "unreachable":
            return (
                "the target is out of the arm's reach "
                "(no inverse-kinematics solution for that position and orientation)"
            )
        if detour is not None and detour.reason == "collision":
            return f"at the target the arm would collide with {planner.describe(detour.blockers)}"
        if straight.reason == "collision":
            why = f"the straight path collides with {planner.describe(straight.blockers)}"
        else:
            why = "the straight path runs into the arm's joint limits"
        return f"{why} and no collision-free detour was found"

    def _success_text(self, arm: str, plan: Plan, straight: Plan) -> str:
        if plan.kind == "detour":
            blocked = (
                f"the straight path collides with {self.planners[arm].describe(straight.blockers)}"
                if straight.reason == "collision"
                else "the straight path runs into joint limits"
            )
            return f"executed via a detour ({blocked})"
        return "executed"

    # -- actions -------------------------------------------------------------------------
    def move_world(self, act: MoveWorld, seed: int) -> Outcome:
        tcp, gc = self._tcp_and_gc(act.arm)
        wanted = gc + act.sign * act.distance_mm / 1000.0 * AXES[act.axis]
        target = np.clip(wanted, WORKSPACE_LO, WORKSPACE_HI)
        clamp_note = _clamp_note(wanted, target, act)
        shift = target - gc
        if np.linalg.norm(shift) * 1000 < NO_MOTION_MM:
            return Outcome(True, f"not moved: {clamp_note}; GC is already at the workspace limit", kind="none")
        goal = tcp.copy()
        goal[:3, 3] += shift
        plan, detour = self._plan_to(act.arm, goal, target, seed)
        chosen = plan if plan.ok else detour
        if chosen is None or not chosen.ok:
            text = f"not executed: {self._failure_text(act.arm, plan, detour)}; the arm did not move"
            return Outcome(False, text + (f" ({clamp_note})" if clamp_note else ""), kind="none")
        self._run({act.arm: (chosen.positions, chosen.velocities)})
        new_gc = self.world.arms[act.arm].gc()
        moved = (new_gc - gc) @ AXES[act.axis] * 1000.0
        text = f"{self._success_text(act.arm, chosen, plan)}: GC moved {moved:+.1f} mm along {act.axis}"
        if clamp_note:
            text += f" ({clamp_note})"
        text += _tracking_note(new_gc, target)
        return Outcome(True, text, moved=True, kind=chosen.kind)

    def rotate_local(self, act: RotateLocal, seed: int) -> Outcome:
        arm = self.world.arms[act.arm]
        tcp, gc = self._tcp_and_gc(act.arm)
        hand = arm.hand_matrix()
        grip = hand[:3, :3] @ HAND_TO_GRIPPER
        axis = grip[:, {"rx": 0, "ry": 1, "rz": 2}[act.axis]]
        n = max(1, math.ceil(act.angle_deg / ROTATION_WAYPOINT_DEG - 1e-9))
        goals = []
        for k in range(1, n + 1):
            rot = axis_angle(axis, math.radians(act.sign * act.angle_deg * k / n))
            hand_k = gc + rot @ (hand[:3, 3] - gc)
            if np.any(hand_k < WORKSPACE_LO - 1e-9) or np.any(hand_k > WORKSPACE_HI + 1e-9):
                side = _outside(hand_k)
                return Outcome(
                    False,
                    f"not executed: waypoint {k} of {n} would put the hand outside the workspace ({side}); "
                    "the arm did not move",
                    kind="none",
                )
            goal = np.eye(4)
            goal[:3, :3] = rot @ tcp[:3, :3]
            goal[:3, 3] = gc + rot @ (tcp[:3, 3] - gc)
            goals.append(goal)
        planner = self._sync(act.arm)
        path = [arm.qpos[:7]]
        q = arm.qpos
        straight = Plan(False, "straight")
        for goal in goals:
            seg = planner.screw_path(goal, q)
            if seg is None:
                straight = Plan(False, "straight", reason="joint_limits")
                break
            path.append(seg[1:])
            q = seg[-1]
        else:
            full = np.vstack(path)
            hits = planner.check_path(full, frozenset(planner.collisions(full[0])))
            if hits:
                straight = Plan(False, "straight", reason="collision", blockers=tuple(sorted(hits)))
            else:
                timed = planner.timed(full)
                if timed is not None:
                    straight = Plan(True, "straight", positions=timed[0], velocities=timed[1])
        chosen = straight
        detour = None
        if not straight.ok:
            detour = self._detour(act.arm, goals[-1], gc, seed)
            chosen = detour
        if not chosen.ok:
            return Outcome(
                False,
                f"not executed: {self._failure_text(act.arm, straight, detour)}; the arm did not move",
                kind="none",
            )
        self._run({act.arm: (chosen.positions, chosen.velocities)})
        new_grip = arm.gripper_rotation()
        turned = math.degrees(math.acos(np.clip((np.trace(grip.T @ new_grip) - 1) / 2, -1, 1)))
        drift = np.linalg.norm(arm.gc() - gc) * 1000
        text = f"{self._success_text(act.arm, chosen, straight)}: rotated {turned:.1f} deg about {act.axis}"
        if chosen.kind == "detour":
            text += "; GC was not held fixed during the detour"
        if drift > TRACKING_NOTE_MM:
            text += f"; GC is {drift:.1f} mm from where it started"
        return Outcome(True, text, moved=True, kind=chosen.kind)

    def gripper(self, act: Gripper) -> Outcome:
        return self._grip((act.arm,), act.close)

    def dual_gripper(self, act: DualGripper) -> Outcome:
        return self._grip(("left", "right"), act.close)

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
        return Outcome(True, "executed: " + ", ".join(notes), moved=True, kind="gripper")

    def dual_move_world(self, act: DualMoveWorld, seed: int) -> Outcome:
        plans, targets, starts, notes, failures = {}, {}, {}, [], []
        for side, mv in (("left", act.left), ("right", act.right)):
            tcp, gc = self._tcp_and_gc(side)
            wanted = gc + mv.sign * mv.distance_mm / 1000.0 * AXES[mv.axis]
            target = np.clip(wanted, WORKSPACE_LO, WORKSPACE_HI)
            note = _clamp_note(wanted, target, mv)
            if note:
                notes.append(f"{side}: {note}")
            goal = tcp.copy()
            goal[:3, 3] += target - gc
            planner = self._sync(side)
            path = planner.screw_path(goal, self.world.arms[side].qpos)
            if path is None:
                failures.append(f"the {side} arm's straight path runs into its joint limits")
                continue
            exempt = frozenset(planner.collisions(path[0])) | {planner.other_name}
            hits = planner.check_path(path, exempt)
            if hits:
                failures.append(f"the {side} arm's straight path collides with {planner.describe(hits)}")
                continue
            timed = planner.timed(path)
            if timed is None:
                failures.append(f"the {side} arm's path could not be timed")
                continue
            plans[side], targets[side], starts[side] = timed, target, gc
        if not failures:
            plans = _time_align(plans)
            if self._arms_collide(plans):
                failures.append("the two arms would collide with each other")
        if failures:
            text = (
                "not executed: " + "; ".join(failures) + "; neither arm moved (synchronized moves are all-or-nothing)"
            )
            return Outcome(False, text + (f" ({'; '.join(notes)})" if notes else ""), kind="none")
        self._run(plans)
        parts = []
        for side, mv in (("left", act.left), ("right", act.right)):
            new_gc = self.world.arms[side].gc()
            moved = (new_gc - starts[side]) @ AXES[mv.axis] * 1000.0
            parts.append(f"{side} GC moved {moved:+.1f} mm along {mv.axis}" + _tracking_note(new_gc, targets[side]))
        text = "executed: " + "; ".join(parts) + (f" ({'; '.join(notes)})" if notes else "")
        return Outcome(True, text, moved=True, kind="straight")

    def _arms_collide(self, plans: dict[str, tuple[np.ndarray, np.ndarray]]) -> bool:
        """Check the time-aligned paths of both arms against each other (every 2nd step)."""
        right, left = self.planners["right"], self.world.arms["left"]
        n = len(plans["right"][0])
        fingers = left.qpos[7:]
        for i in range(0, n, 2):
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
            np.stack([np.interp(dst, src, pos[:, j]) for j in range(7)], axis=1),
            np.stack([np.interp(dst, src, vel[:, j]) * scale for j in range(7)], axis=1),
        )
    return out


def _clamp_note(wanted: np.ndarray, target: np.ndarray, act: MoveWorld) -> str:
    if np.allclose(wanted, target):
        return ""
    asked = act.distance_mm
    got = abs((target - (wanted - act.sign * asked / 1000.0 * AXES[act.axis])) @ AXES[act.axis]) * 1000.0
    i = "xyz".index(act.axis)
    limit = WORKSPACE_HI[i] if act.sign > 0 else WORKSPACE_LO[i]
    bound = "<=" if act.sign > 0 else ">="
    return (
        f"clamped to the workspace ({act.axis} {bound} {limit:.2f} m): "
        f"{got:.1f} of the {asked:g} mm asked along {_fmt_axis(act.axis, act.sign)}"
    )


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
