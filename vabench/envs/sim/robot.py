"""The two arms (the Franka Panda, or another robot carrying its hand: vabench.envs.sim.embodiments):
placement, drives, gripper and proprioception.

Layout (world frame, see docs/design.md): both arms face +y from pedestals at the robot side,
``left`` at x = -0.30 and ``right`` at x = +0.30. The pedestal tops sit 0.37 m below the table
top. Why so low: the Panda cannot hold its gripper horizontal, pointing forward, near its own
base below shoulder height (joint 6 runs out of range), yet the paper's embodiment starts
exactly so. With the base lowered the home pose is natural (all joints well inside their
limits) while top-down reach still covers every spawn range of the paper's tables; the
reachability test in tests/test_reachability.py proves it.

Home: GC 0.32 m above the table, 0.26 m in front of the base, approach +y, palm normal +z,
closing axis along world x; local ``ry +90 deg`` turns it top-down, as in the paper.
"""

from __future__ import annotations

import numpy as np
import sapien

from vabench.core.boundary import ArmProprio
from vabench.core.vocab import LEFT, RIGHT

from .embodiments import PANDA, Embodiment
from .geometry import HAND_TO_GRIPPER, matrix_to_quat_rpy_deg

ARMS = (LEFT, RIGHT)
BASE_Y = -0.46
BASE_Z = PANDA.base_z
BASE_X = {"left": -0.30, "right": 0.30}
BASE_QUAT = (np.cos(np.pi / 4), 0.0, 0.0, np.sin(np.pi / 4))  # yaw +90 deg: base x -> world +y
PEDESTAL_HALF = (0.10, 0.10, BASE_Z / 2)

# Same joint vector for both arms: each home is straight in front of its own base. Parked: turned
# outward and folded low beside the pedestal, out of the workspace and mostly out of the default
# camera views (single-arm tasks park the left arm). Other robots: vabench.envs.sim.embodiments.
HOME_QPOS = np.asarray(PANDA.home)
PARK_QPOS = np.asarray(PANDA.park)
FINGER_OPEN = 0.04  # per finger, 8 cm jaw
FINGER_CLOSED = 0.0  # drive target when closed; an object in between stops the fingers

ARM_STIFFNESS, ARM_DAMPING = 1.0e4, 1.0e3
FINGER_STIFFNESS, FINGER_DAMPING, FINGER_FORCE_LIMIT = 1.0e3, 1.0e2, 30.0
ROBOT_FRICTION = 1.0

# Finger pad centres in each finger link's frame (the "rubber tip" collision boxes).
PAD_LEFT = np.array([0.0, 0.00758, 0.04525])
PAD_RIGHT = np.array([0.0, -0.00758, 0.04525])


_PARSED: dict[str, object] = {}  # URDF path -> its articulation builder, parsed once per process


def _load(scene: sapien.Scene, urdf: str) -> sapien.physx.PhysxArticulation:
    """The robot of ``urdf`` built into ``scene``. Parsing the URDF is most of building an arm (about
    7 ms of a reset per arm), and its builder holds only the description, so it is parsed once per
    process and built into each new scene (what ``URDFLoader.load`` does, less the parse)."""
    if urdf not in _PARSED:
        loader = scene.create_urdf_loader()
        loader.fix_root_link = True
        loader.set_material(ROBOT_FRICTION, ROBOT_FRICTION, 0.0)
        articulations, actors, cameras = loader.parse(urdf)
        if len(articulations) != 1 or actors or cameras:
            raise ValueError(f"{urdf}: a robot description must hold one articulation and nothing else")
        _PARSED[urdf] = articulations[0]
    return _PARSED[urdf].set_scene(scene).build()


def base_pose(arm: str, z: float = BASE_Z) -> sapien.Pose:
    """Where ``arm``'s base stands (``z``: its robot's pedestal height)."""
    return sapien.Pose([BASE_X[arm], BASE_Y, z], list(BASE_QUAT))


def pedestal_half(z: float = BASE_Z) -> tuple[float, float, float]:
    return (PEDESTAL_HALF[0], PEDESTAL_HALF[1], z / 2)


class Arm:
    """One arm with the Panda hand in a SAPIEN scene (``body``: which robot), driven by joint PD
    targets with gravity compensation."""

    def __init__(self, scene: sapien.Scene, urdf: str, name: str, collision_id: int, body: Embodiment = PANDA):
        self.name, self.body, self.dof, self.wrist = name, body, body.dof, body.wrist
        self.robot = _load(scene, urdf)
        self.robot.set_name(f"{name}_{body.name}")
        self.robot.set_root_pose(base_pose(name, body.base_z))
        self.joints = self.robot.get_active_joints()
        for j, lim in zip(self.joints[: self.dof], body.force_limit, strict=True):
            j.set_drive_properties(ARM_STIFFNESS, ARM_DAMPING, float(lim), "force")
        for j in self.joints[self.dof :]:
            j.set_drive_properties(FINGER_STIFFNESS, FINGER_DAMPING, FINGER_FORCE_LIMIT, "force")
        self.links = {link.name: link for link in self.robot.get_links()}
        # No self-collision inside one arm (mplib keeps planned paths self-collision free and the
        # convex hulls of neighbouring links overlap), but the two arms do collide: same id group
        # (g3) plus a shared ignore bit (g2) switches a pair off.
        for link in self.links.values():
            for shape in link.get_collision_shapes():
                g = shape.get_collision_groups()
                shape.set_collision_groups([g[0], g[1], 1, collision_id])
        self.hand = self.links["panda_hand"]
        self.tcp = self.links["panda_hand_tcp"]
        self.fingers = (self.links["panda_leftfinger"], self.links["panda_rightfinger"])
        self.closed = False  # the commanded gripper state, as RoboTwin reports it
        self._proprio: tuple | None = None  # (the poses and command it was read from, the ArmProprio)
        self.compensated = True  # gravity is cancelled by set_qf before every step (else the links feel none)
        self.set_qpos(body.home, closed=False)

    # -- state -------------------------------------------------------------------------
    @property
    def qpos(self) -> np.ndarray:
        return np.asarray(self.robot.get_qpos(), dtype=float)

    def set_qpos(self, arm_q, closed: bool) -> None:
        """Teleport (at reset only) and hold there."""
        finger = FINGER_CLOSED if closed else FINGER_OPEN
        q = np.concatenate([np.asarray(arm_q, dtype=float), [finger, finger]])
        self.robot.set_qpos(q)
        self.robot.set_qvel(np.zeros_like(q))
        self.closed = closed
        self.set_arm_target(q[: self.dof])
        self.set_finger_target(finger)

    def set_arm_target(self, q, qd=None) -> None:
        qd = np.zeros(self.dof) if qd is None else qd
        for j, qi, vi in zip(self.joints[: self.dof], q, qd, strict=True):
            j.set_drive_target(float(qi))
            j.set_drive_velocity_target(float(vi))

    def set_finger_target(self, width_per_finger: float) -> None:
        for j in self.joints[self.dof :]:
            j.set_drive_target(float(width_per_finger))

    def finger_target(self) -> float:
        return float(np.asarray(self.joints[self.dof].get_drive_target()).reshape(-1)[0])

    def without_gravity(self) -> None:
        """Let PhysX leave gravity off this arm's links instead of cancelling it from Python before
        every step (control=ee_delta: one control period costs no per-step passive-force call)."""
        for link in self.robot.get_links():
            link.disable_gravity = True
        self.compensated = False

    def apply_gravity_compensation(self) -> None:
        # set_qf persists across steps, so it is refreshed before every step.
        self.robot.set_qf(self.robot.compute_passive_force(gravity=True, coriolis_and_centrifugal=True))

    # -- geometry ----------------------------------------------------------------------
    def hand_matrix(self) -> np.ndarray:
        return self.hand.entity_pose.to_transformation_matrix()

    def gripper_rotation(self) -> np.ndarray:
        return self.hand_matrix()[:3, :3] @ HAND_TO_GRIPPER

    def pad_centres(self) -> tuple[np.ndarray, np.ndarray]:
        left = self.fingers[0].entity_pose.to_transformation_matrix()
        right = self.fingers[1].entity_pose.to_transformation_matrix()
        return left[:3, :3] @ PAD_LEFT + left[:3, 3], right[:3, :3] @ PAD_RIGHT + right[:3, 3]

    def gc(self) -> np.ndarray:
        """The physical finger midpoint (midpoint of the two pad centres)."""
        a, b = self.pad_centres()
        return (a + b) / 2

    def finger_opening(self) -> float:
        """Measured jaw width in metres (privileged: shows whether something blocks the fingers)."""
        return float(self.qpos[self.dof] + self.qpos[self.dof + 1])

    def proprio(self) -> ArmProprio:
        """The robot state a model is told, kept while the poses it is read from (the hand's and the
        fingers') and the gripper command stay the same: an observation, the record's state and the
        recording overlay each read it every control step, and a reading costs a rotation conversion."""
        poses = (self.hand.entity_pose, *(f.entity_pose for f in self.fingers))
        key = (*(v.tobytes() for pose in poses for v in (pose.p, pose.q)), self.closed)
        if self._proprio is None or self._proprio[0] != key:
            self._proprio = (key, self._measured(poses[0].to_transformation_matrix()))
        return self._proprio[1]

    def _measured(self, hand: np.ndarray) -> ArmProprio:
        rot = hand[:3, :3] @ HAND_TO_GRIPPER
        quat, rpy = matrix_to_quat_rpy_deg(rot)
        return ArmProprio(
            ee_position=tuple(float(v) for v in hand[:3, 3]),
            ee_quat_wxyz=tuple(float(v) for v in quat),
            ee_rpy_deg=tuple(float(v) for v in rpy),
            gripper_closed=self.closed,
            gc=tuple(float(v) for v in self.gc()),
            rx=tuple(float(v) for v in rot[:, 0]),
            ry=tuple(float(v) for v in rot[:, 1]),
            rz=tuple(float(v) for v in rot[:, 2]),
        )

    def fingers_open(self) -> tuple[float, float]:
        """The two finger joints' positions in metres (what ``ArmProprio.fingers`` carries under ee_delta)."""
        return float(self.qpos[self.dof]), float(self.qpos[self.dof + 1])
