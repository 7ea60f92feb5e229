"""The control-rate controller of ``control=ee_delta`` (vabench.envs.control states the interface):
one :class:`~vabench.envs.control.EEDelta` becomes joint position targets by damped-least-squares
IK on the arm's pinocchio model (mplib's, the planner's own), tracked for one control period.

The delta is applied to the controller's target pose, the TCP pose of the last joint target it
commanded, so steps add up exactly while the arm tracks; the target restarts from the measured
pose at the first step and whenever the measured TCP is :data:`RESYNC_M` or :data:`RESYNC_RAD`
away from it (the arm was blocked). In :data:`RAMP_STEPS` steps of the period the joint target
ramps from the old target to the new, with the ramp's velocity as the drive's velocity target; the fingers
get their target at once. No motion planning, no collision check (contacts are physics), no settle.

An IK that leaves a residual above :data:`IK_TOL_M` / :data:`IK_TOL_RAD` (out of reach, a
singularity) or a solution outside the joint limits holds that arm where its target was, and the
feedback says so (planner_success false); the other arm, and the gripper, still act.
"""

from __future__ import annotations

import numpy as np

from ..control import CONTROL_HZ, GRIPPER_CLOSED_AT, EEDelta, clipped
from .executor import WORKSPACE_HI, WORKSPACE_LO, Outcome
from .planner import ArmPlanner
from .robot import FINGER_CLOSED, FINGER_OPEN
from .scene import TIMESTEP, World

PERIOD_STEPS = round(1.0 / (CONTROL_HZ * TIMESTEP))  # physics steps per control step (25 at 250 Hz)
RAMP_STEPS = 5  # joint-target updates per period (50 Hz), each held for PERIOD_STEPS / RAMP_STEPS physics steps
IK_ITERATIONS = 8
IK_DAMPING = 0.02  # lambda of the damped least squares (metres / radians scale)
IK_TOL_M, IK_TOL_RAD = 0.002, 0.02
RESYNC_M, RESYNC_RAD = 0.02, 0.2


def rotvec(r: np.ndarray) -> np.ndarray:
    """The rotation matrix of a rotation vector (Rodrigues)."""
    angle = float(np.linalg.norm(r))
    if angle < 1e-12:
        return np.eye(3)
    k = r / angle
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * kx + (1 - np.cos(angle)) * kx @ kx


def rotation_error(target: np.ndarray, now: np.ndarray) -> np.ndarray:
    """The rotation vector that turns ``now`` into ``target`` (world axes)."""
    m = target @ now.T
    cos = np.clip((np.trace(m) - 1) / 2, -1.0, 1.0)
    angle = float(np.arccos(cos))
    axis = np.array([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]])
    if angle < 1e-9:
        return axis / 2
    return axis * angle / (2 * np.sin(angle)) if angle < np.pi - 1e-6 else _half_turn(m)


def spd_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x = b`` for a small symmetric positive definite ``a``, by elimination without pivoting, in
    numpy's elementwise operations: LAPACK's solve wakes OpenBLAS's threads, which on a busy machine
    cost milliseconds per call (measured: a 6x6 solve 24 ms median under load, 0.02 ms on one thread)."""
    m = np.column_stack([a, b]).astype(float)
    n = len(b)
    for i in range(n):
        m[i] /= m[i, i]
        for k in range(n):
            if k != i:
                m[k] -= m[k, i] * m[i]
    return m[:, n]


def _half_turn(m: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh((m + m.T) / 2)
    return v[:, int(np.argmax(w))] * np.pi


class Controller:
    """Tracks ee_delta steps on one episode's world with the env's planners' kinematics."""

    def __init__(self, planners: dict[str, ArmPlanner]):
        self.planners = planners
        self.world: World | None = None
        self.targets: dict[str, np.ndarray] = {}

    def bind(self, world: World) -> None:
        self.world, self.targets = world, {}

    def jacobian(self, arm: str, q: np.ndarray) -> np.ndarray:
        """6 x dof: the TCP's linear and angular velocity in world axes per joint velocity."""
        p = self.planners[arm]
        model, q9 = p.free.pinocchio_model, p._full(q)
        model.compute_forward_kinematics(q9)
        model.compute_full_jacobian(q9)
        local = model.get_link_jacobian(p.tcp_index, local=True)[:, : p.dof]
        rot = p.base[:3, :3] @ model.get_link_pose(p.tcp_index).to_transformation_matrix()[:3, :3]
        return np.vstack([rot @ local[:3], rot @ local[3:]])

    def solve(self, arm: str, q: np.ndarray, goal: np.ndarray) -> tuple[np.ndarray, float, float]:
        """Damped-least-squares IK from ``q`` to the world TCP pose ``goal``: (q, metres, radians left)."""
        p, q = self.planners[arm], np.asarray(q, dtype=float).copy()
        for _ in range(IK_ITERATIONS):
            now = p.fk_tcp(q)
            err = np.concatenate([goal[:3, 3] - now[:3, 3], rotation_error(goal[:3, :3], now[:3, :3])])
            if np.linalg.norm(err[:3]) < IK_TOL_M / 10 and np.linalg.norm(err[3:]) < IK_TOL_RAD / 10:
                break
            j = self.jacobian(arm, q)
            q = q + j.T @ spd_solve(j @ j.T + IK_DAMPING**2 * np.eye(6), err)
        now = p.fk_tcp(q)
        left = np.linalg.norm(goal[:3, 3] - now[:3, 3]), np.linalg.norm(rotation_error(goal[:3, :3], now[:3, :3]))
        return q, float(left[0]), float(left[1])

    def _reference(self, arm: str) -> np.ndarray:
        """The joint target the delta starts from (see the module docstring)."""
        p, body = self.planners[arm], self.world.arms[arm]
        measured = body.qpos[: p.dof]
        target = self.targets.get(arm)
        if target is None:
            return measured
        a, b = p.fk_tcp(target), p.fk_tcp(measured)
        far = np.linalg.norm(a[:3, 3] - b[:3, 3]) > RESYNC_M
        return measured if far or np.linalg.norm(rotation_error(a[:3, :3], b[:3, :3])) > RESYNC_RAD else target

    def _arm_target(self, arm: str, v: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, str]:
        """(start target, new target or None: hold, feedback) of one arm's clipped vector."""
        p = self.planners[arm]
        start = self._reference(arm)
        goal = p.fk_tcp(start)
        wanted = goal[:3, 3] + v[:3]
        goal[:3, 3] = np.clip(wanted, WORKSPACE_LO, WORKSPACE_HI)
        goal[:3, :3] = rotvec(v[3:6]) @ goal[:3, :3]
        note = "; the target was clamped to the workspace" if np.abs(goal[:3, 3] - wanted).max() > 1e-9 else ""
        q, left_m, left_rad = self.solve(arm, start, goal)
        if left_m > IK_TOL_M or left_rad > IK_TOL_RAD:
            why = f"the target is out of reach (IK leaves {left_m * 1000:.1f} mm, {np.degrees(left_rad):.1f} deg)"
            return start, None, f"{arm} arm held: {why}{note}"
        if not p.in_limits(q):
            return start, None, f"{arm} arm held: the target needs a joint beyond its limits{note}"
        return start, q, f"{arm} arm tracking{note}"

    def step(self, act: EEDelta) -> Outcome:
        """One control step: IK per arm, then one control period of physics."""
        ramps, notes, held = {}, [], False
        for arm, raw in act.deltas.items():
            v, clips = clipped(raw)
            start, q, text = self._arm_target(arm, v)
            held |= q is None
            ramps[arm] = (start, start if q is None else q)
            notes.append(text + "".join(f"; {c}" for c in clips))
            body = self.world.arms[arm]
            body.set_finger_target(FINGER_OPEN + (FINGER_CLOSED - FINGER_OPEN) * float(v[6]))
            body.closed = bool(v[6] >= GRIPPER_CLOSED_AT)
        self._run(ramps)
        return Outcome(not held, ("held: " if held else "executed: ") + "; ".join(notes))

    def _run(self, ramps: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        period, n = PERIOD_STEPS * TIMESTEP, PERIOD_STEPS // RAMP_STEPS
        for i in range(1, RAMP_STEPS + 1):
            for arm, (a, b) in ramps.items():
                self.world.arms[arm].set_arm_target(a + (b - a) * i / RAMP_STEPS, (b - a) / period)
            self.world.step(n)
        for arm, (_, b) in ramps.items():
            self.world.arms[arm].set_arm_target(b)
            self.targets[arm] = b
