"""place_shoe (paper Table 25, row 1): with the arm on the shoe's side, put the shoe flat on the blue
mat, toe toward -x. The other arm is never needed (robotwin-task-notes sections 4.5 and 7.3)."""

from __future__ import annotations

import math

import numpy as np

from vabench.core.vocab import LEFT, RIGHT

from ..objects.shoe import MAT_HALF, SHOE_MODELS, SOLE_HALF_THICKNESS, grasp_point, shoe, shoe_mat
from ..privileged import PrivilegedState
from ..sim.geometry import axis_angle, matrix_to_quat
from ..sim.robot import BASE_X, BASE_Y
from ..sim.scene import TABLE_TOP_Z, World
from . import expert
from .base import SPAWN_Z, Task
from .registry import register_task

# The shoe's frame follows RoboTwin's model frame (local y up, local z toward the toe), so the
# reference's target quaternion applies unchanged: flat, toe toward world -x, local x toward -y.
TARGET_QUAT = np.array([0.5, 0.5, -0.5, -0.5])
LYING = axis_angle([1, 0, 0], np.pi / 2)  # RoboTwin's base quaternion (0.707, 0.707, 0, 0): local y up
TOE_GOAL = np.array([-1.0, 0.0, 0.0])
WRIST_FOLLOWS_AZIMUTH = 0.8  # see PlaceShoe._wrist_margin
WRIST_SAFETY_RAD = 0.2  # keep joint 7 this far inside its limits ...
SHORT_TURN_DEG = 8.0  # ... by stopping the turn at most this early (yaw error 8 deg: |dq| <= 0.036 < 0.07)


MAX_TURN_DEG = 210.0  # the held shoe turns the long way round only if that is at most this far


def _both_ways(angle_deg: float) -> tuple[float, float]:
    """A turn and the same turn the other way round."""
    return angle_deg, angle_deg - math.copysign(360.0, angle_deg)


def _shoe_turns(angle_deg: float) -> list[float]:
    """The ways round for the held shoe: the short one (<= 180 deg), the long one if <= MAX_TURN_DEG."""
    return [t for t in _both_ways(angle_deg) if abs(t) <= MAX_TURN_DEG]


@register_task()
class PlaceShoe(Task):
    name, arms, budget = "place_shoe", (LEFT, RIGHT), 100
    instruction = (
        "Pick the arm on the shoe's side of the table (left if the shoe lies at -x, right if at +x) and place "
        "the shoe flat and centred on the blue mat, toe toward -x and heel toward +x."
    )
    labels = {"mat": "the blue mat"}
    X, Y = (-0.25, 0.25), (-0.10, 0.05)
    Y_NEAR_CENTRE = (-0.10, 0.0)  # RoboTwin's ylim_prop: y is redrawn here if |x| < 0.15 and y > 0
    NEAR_CENTRE_X = 0.15
    MIN_RADIUS = 0.15  # poses with x^2 + y^2 < 0.15^2 are redrawn
    YAW_RAD = np.pi
    MAT_XY = (0.0, -0.08)
    X_TOL_M = 0.05  # |shoe x - mat x| < 50 mm
    Y_TOL_M = 0.02  # |shoe y - mat y| < 20 mm
    QUAT_TOL = 0.07  # every component of the (w >= 0) quaternion within 0.07 of TARGET_QUAT
    MASS = 0.05  # RoboTwin's 0.01 kg, five times heavier: steadier in the grasp and on release
    LIFT_M = 0.03  # checkpoint "lifted": held and raised more than 30 mm
    EXPERT_LIFT_M = 0.07  # RoboTwin lifts 7 cm before placing
    RELEASE_ABOVE_M = 0.015  # the expert opens with the sole this far above the mat

    # -- layout ---------------------------------------------------------------------------
    def spawn_xy(self, rng) -> tuple[float, float]:
        """RoboTwin's draw: x, y; y redrawn near the centre line; redraw both if too near the origin."""
        while True:
            x, y = rng.uniform(*self.X), rng.uniform(*self.Y)
            if abs(x) < self.NEAR_CENTRE_X and y > 0:
                y = rng.uniform(*self.Y_NEAR_CENTRE)
            if x * x + y * y >= self.MIN_RADIUS**2:
                return float(x), float(y)

    def build(self, world: World, rng: np.random.Generator) -> None:
        x, y = self.spawn_xy(rng)
        yaw = rng.uniform(-self.YAW_RAD, self.YAW_RAD)
        self.model_id = int(rng.integers(len(SHOE_MODELS)))  # drawn after the pose, as in RoboTwin
        self.arm = LEFT if x < 0 else RIGHT
        self.spec = shoe("shoe", self.model_id, self.MASS)
        rot = axis_angle([0, 0, 1], yaw) @ LYING
        world.add(self.spec, (x, y, SPAWN_Z + SOLE_HALF_THICKNESS), matrix_to_quat(rot))
        world.add(shoe_mat("mat"), (*self.MAT_XY, TABLE_TOP_Z + MAT_HALF[2]))

    # -- predicate ------------------------------------------------------------------------
    def conditions(self, s: PrivilegedState) -> dict[str, bool]:
        """The paper's predicate, part by part: the sole centre over the mat centre, the
        orientation, both grippers open (commanded)."""
        d = s.position("shoe")[:2] - s.position("mat")[:2]
        q = matrix_to_quat(s.matrix("shoe")[:3, :3])  # sign-normalised, w >= 0
        return {
            "x": bool(abs(d[0]) < self.X_TOL_M),
            "y": bool(abs(d[1]) < self.Y_TOL_M),
            "orientation": bool(np.all(np.abs(q - TARGET_QUAT) < self.QUAT_TOL)),
            "open": not s.closed(LEFT) and not s.closed(RIGHT),
        }

    def success(self, s: PrivilegedState) -> bool:
        return all(self.conditions(s).values())

    def update(self, s: PrivilegedState) -> None:
        held = s.held("shoe", self.arm)
        lifted = self.latch(s, "lifted", held and s.lift("shoe") > self.LIFT_M)
        # turned to the target while held, or lying so on the mat, after the lift (not as spawned)
        self.latch(s, "aligned", lifted and self.conditions(s)["orientation"] and (held or s.touching("shoe", "mat")))

    def checkpoints(self, s: PrivilegedState) -> dict[str, bool]:
        return {
            "grasped": self.latch(s, "grasped", s.held("shoe", self.arm)),
            "lifted": s.flags.get("lifted", False),
            "aligned": s.flags.get("aligned", False),
            "placed": self.success(s),
        }

    # -- expert ---------------------------------------------------------------------------
    def grasp_world(self, s: PrivilegedState) -> np.ndarray:
        return (s.matrix("shoe") @ np.append(grasp_point(self.spec, self.model_id), 1.0))[:3]

    def _wrist_margin(self, s: PrivilegedState, arm: str, steps) -> float:
        """Joint 7's smallest distance to its limits along ``steps``: (turn about rx in degrees,
        hand moved to this world point) in order. Top-down, joint 7 turns with rx, and with the
        hand's yaw held it follows WRIST_FOLLOWS_AZIMUTH of the change in the hand's azimuth
        about the arm's base (measured: 0.5-1 of it)."""
        base = np.array([BASE_X[arm], BASE_Y])
        az = math.atan2(*(s.gc(arm)[:2] - base)[::-1])
        wrist = s.world.arms[arm].wrist  # the last arm joint (the Panda's joint 7)
        q7 = float(s.world.arms[arm].qpos[wrist])
        lo, hi = (float(v) for v in s.world.arms[arm].robot.get_qlimits()[wrist])
        margin = min(q7 - lo, hi - q7)
        for turn_deg, point in steps:
            to = math.atan2(*(np.asarray(point)[:2] - base)[::-1])
            q7 += math.radians(turn_deg) + WRIST_FOLLOWS_AZIMUTH * (to - az)
            az = to
            margin = min(margin, q7 - lo, hi - q7)
        return margin

    def _plan_grasp(self, s: PrivilegedState, arm: str) -> float:
        """The yaw (degrees about the downward rx) that closes the jaw across the shoe: of the two
        symmetric grasps, each reached by turning either way, the one whose wrist stays furthest
        inside its limits through the grasp, the turn of the toe to -x and the carry to the mat."""
        rot, m = s.gripper_rotation(arm), s.matrix("shoe")[:3, :3]
        turn = expert.signed_angle_deg(m[:, 2], TOE_GOAL, rot[:, 0])
        g, mat = self.grasp_world(s), s.position("mat")
        options = []
        for across in (m[:, 0], -m[:, 0]):
            yaw = expert.signed_angle_deg(rot[:, 1], across, rot[:, 0])
            for y in _both_ways(yaw):
                margin = max(
                    self._wrist_margin(s, arm, [(y, s.gc(arm)), (0.0, g), (t, g), (0.0, mat)])
                    for t in _shoe_turns(turn)
                )
                options.append((min(margin, WRIST_SAFETY_RAD), -abs(y), y))
        return max(options)[2]

    def _plan_turn(self, s: PrivilegedState, arm: str) -> float:
        """The turn (degrees about rx) that points the held shoe's toe to -x: either way round,
        whichever keeps the wrist inside its limits on the way to the mat. For some yaws (right
        arm, a turn near 150 deg) both ways end near joint 7's limit; then the turn stops up to
        SHORT_TURN_DEG early, inside the paper's orientation tolerance (about 15 deg of yaw)."""
        turn = expert.signed_angle_deg(s.matrix("shoe")[:3, 2], TOE_GOAL, s.gripper_rotation(arm)[:, 0])
        gc, mat = s.gc(arm), s.position("mat")
        margin, t = max((self._wrist_margin(s, arm, [(t, gc), (0.0, mat)]), t) for t in _shoe_turns(turn))
        short = min(math.degrees(max(WRIST_SAFETY_RAD - margin, 0.0)), SHORT_TURN_DEG, abs(t))
        return t - math.copysign(short, t)

    def expert(self, s: PrivilegedState):
        arm = self.arm  # the other arm never moves
        yield from expert.to_topdown(s, arm)
        g = self.grasp_world(s)
        yield from expert.move_gc(s, arm, (g[0], g[1], g[2] + 0.09), axes="zxy")
        yield from expert.rotate(s, arm, "rx", self._plan_grasp(s, arm))  # over the shoe: far from the table edge
        yield from expert.move_gc(s, arm, self.grasp_world(s), axes="xyz")
        yield {"action": "gripper.close", "arm": arm}
        yield from expert.lift(s, arm, self.EXPERT_LIFT_M)
        yield from expert.rotate(s, arm, "rx", self._plan_turn(s, arm))
        yield from expert.rotate(s, arm, "rx", self._plan_turn(s, arm))  # re-measured: the grasp may slip
        yield from expert.carry_over(s, arm, "shoe", s.position("mat")[:2])
        mat_top = s.position("mat")[2] + MAT_HALF[2]
        yield from expert.lower_body_to(s, arm, "shoe", mat_top + SOLE_HALF_THICKNESS + self.RELEASE_ABOVE_M)
        yield {"action": "gripper.open", "arm": arm}
        yield from expert.lift(s, arm, 0.05)
