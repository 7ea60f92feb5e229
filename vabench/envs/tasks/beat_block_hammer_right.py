"""beat_block_hammer_right (paper Table 24, row 2): grasp a hammer by its handle, lift it clear and
strike the red block with the hammer's face."""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import RIGHT

from ..objects.common import RED, cube
from ..objects.tools import HAMMER_FACE, HAMMER_FACE_NORMAL, HAMMER_GRIP, HAMMER_HALF_THICKNESS, hammer
from ..privileged import PrivilegedState
from ..sim.scene import TABLE_TOP_Z, World
from . import expert
from .base import SPAWN_Z, Task
from .registry import register_task


@register_task()
class BeatBlockHammerRight(Task):
    name, arms, budget = "beat_block_hammer_right", (RIGHT,), 100
    instruction = (
        "Use the right arm to grasp the hammer by its handle, lift it clear of the table and "
        "touch the red block with the hammer head."
    )
    labels = {"block": "the red block"}
    HAMMER_X, HAMMER_Y = (0.02, 0.06), (-0.10, -0.04)
    BLOCK_X, BLOCK_Y, BLOCK_YAW_RAD = (0.14, 0.22), (0.06, 0.13), 0.5
    BLOCK_HALF = 0.025
    # Fixed, as RoboTwin's hammer pose: grip toward the right arm, face toward the robot. Rolled face-down
    # in the grasp, the gripper then points forward-right, a pose the Panda reaches by straight paths
    # over the whole block range (with the handle along x it needs joint-limit detours).
    HAMMER_YAW_DEG = -45.0
    LIFT_M = 0.040  # latched: hammer lifted > 40 mm while the fingers touch it and the gripper is closed
    XY_TOL_M = 0.020  # hammer face centre within 20 mm of the block's top centre in x and in y
    GRASP_X = HAMMER_GRIP[0] + 0.02  # on the grip's front end, next to the centre of mass
    CARRY_CLEARANCE = 0.04  # the expert carries the face this high above the block top
    PRESS_M = 0.004  # and lowers it this far into the block

    def build(self, world: World, rng: np.random.Generator) -> None:
        hx, hy = rng.uniform(*self.HAMMER_X), rng.uniform(*self.HAMMER_Y)  # hammer first, as in VABench
        bx, by = rng.uniform(*self.BLOCK_X), rng.uniform(*self.BLOCK_Y)
        yaw = rng.uniform(-self.BLOCK_YAW_RAD, self.BLOCK_YAW_RAD)
        h = np.radians(self.HAMMER_YAW_DEG)
        world.add(hammer("hammer"), (hx, hy, SPAWN_Z + HAMMER_HALF_THICKNESS), (np.cos(h / 2), 0.0, 0.0, np.sin(h / 2)))
        # static, as in RoboTwin; resting on the table (a static body does not settle)
        world.add(
            cube("block", self.BLOCK_HALF, RED, mass=None),
            (bx, by, TABLE_TOP_Z + self.BLOCK_HALF),
            (np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)),
        )

    # -- functional points -----------------------------------------------------------------
    def face_point(self, s: PrivilegedState) -> np.ndarray:
        """The hammer's functional point: the centre of its striking face."""
        return (s.matrix("hammer") @ np.append(HAMMER_FACE, 1.0))[:3]

    def block_point(self, s: PrivilegedState) -> np.ndarray:
        """The block's functional point: its top centre."""
        return (s.matrix("block") @ np.array([0.0, 0.0, self.BLOCK_HALF, 1.0]))[:3]

    def on_target(self, s: PrivilegedState) -> bool:
        d = self.face_point(s) - self.block_point(s)
        return bool(abs(d[0]) < self.XY_TOL_M and abs(d[1]) < self.XY_TOL_M)

    # -- predicate -------------------------------------------------------------------------
    def update(self, s: PrivilegedState) -> None:
        grasped = s.closed(RIGHT) and s.touching("hammer", RIGHT)
        self.latch(s, "lifted", s.lift("hammer") > self.LIFT_M and grasped)

    def checkpoints(self, s: PrivilegedState) -> dict[str, bool]:
        lifted = s.flags.get("lifted", False)
        return {
            "grasped": self.latch(s, "grasped", s.held("hammer", RIGHT)),
            "lifted": lifted,
            "over_block": self.latch(s, "over_block", lifted and s.held("hammer", RIGHT) and self.on_target(s)),
            "struck": self.success(s),
        }

    def success(self, s: PrivilegedState) -> bool:
        return s.flags.get("lifted", False) and self.on_target(s) and s.touching("hammer", "block") and s.closed(RIGHT)

    # -- expert ----------------------------------------------------------------------------
    def expert(self, s: PrivilegedState):
        # top-down on the grip, closing across the handle
        m = s.matrix("hammer")
        handle_yaw = float(np.arctan2(m[1, 0], m[0, 0]))
        yield from expert.to_topdown(s, RIGHT)
        yield from expert.align_closing_axis(s, RIGHT, handle_yaw + np.pi / 2, symmetry_deg=180.0)
        grip = (s.matrix("hammer") @ np.array([self.GRASP_X, 0.0, 0.0, 1.0]))[:3]
        yield from expert.move_gc(s, RIGHT, (grip[0], grip[1], grip[2] + 0.09), axes="zxy")
        grip = (s.matrix("hammer") @ np.array([self.GRASP_X, 0.0, 0.0, 1.0]))[:3]
        yield from expert.move_gc(s, RIGHT, grip, axes="xyz")
        yield {"action": "gripper.close"}
        yield from expert.lift(s, RIGHT, 0.12)
        # roll about the handle (the palm normal) until the face points down
        face = s.matrix("hammer")[:3, :3] @ HAMMER_FACE_NORMAL
        rz = s.gripper_rotation(RIGHT)[:, 2]
        yield from expert.rotate(s, RIGHT, "rz", expert.signed_angle_deg(face, expert.DOWN, rz))
        target = self.block_point(s)
        yield from expert.lift(s, RIGHT, target[2] + self.CARRY_CLEARANCE - self.face_point(s)[2])
        for _ in range(3):  # carry the face over the block's top centre (re-measured: the grasp may slip)
            d = target[:2] - self.face_point(s)[:2]
            if np.max(np.abs(d)) < 0.003:
                break
            gc = s.gc(RIGHT)
            yield from expert.move_gc(s, RIGHT, (gc[0] + d[0], gc[1] + d[1], gc[2]), axes="yx")
        gc = s.gc(RIGHT)
        dz = target[2] - self.PRESS_M - self.face_point(s)[2]
        yield from expert.move_gc(s, RIGHT, (gc[0], gc[1], gc[2] + dz), axes="z")
