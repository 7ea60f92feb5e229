"""The robot state as one named float vector: what the Gym env's ``agent_pos`` and a policy server's
``state`` carry. Only an Observation's proprioception goes in (docs/design.md: the env API is the
privilege boundary), in a fixed order per controlled arm (left before right):

    <arm>.ee_x, ee_y, ee_z           end-effector position, world frame, metres
    <arm>.ee_qw, ee_qx, ee_qy, ee_qz end-effector orientation, world frame (unit quaternion, w first)
    <arm>.gc_x, gc_y, gc_z           GC, the midpoint of the finger pads, metres
    <arm>.gripper                    0 open, 1 closed (the commanded aperture)

Eight numbers per arm are the common VLA state (position, orientation, gripper); GC is added
because the paper's rotations keep it fixed. A single-arm task's names carry no arm prefix.
Reads any object with ArmProprio's field names (the env's, or one parsed from a request's text).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

FIELDS = ("ee_x", "ee_y", "ee_z", "ee_qw", "ee_qx", "ee_qy", "ee_qz", "gc_x", "gc_y", "gc_z", "gripper")
POSITION_LIMIT_M = 4.0  # the space's bound on positions: the workspace is about 1.5 m across


def state_names(arms: tuple[str, ...]) -> tuple[str, ...]:
    """The vector's names, in order, for a task controlling ``arms``."""
    if len(arms) == 1:
        return FIELDS
    return tuple(f"{arm}.{f}" for arm in arms for f in FIELDS)


def arm_vector(p) -> np.ndarray:
    """One arm's part of the vector, from an object with ArmProprio's fields."""
    closed = 1.0 if p.gripper_closed else 0.0
    return np.array([*p.ee_position, *p.ee_quat_wxyz, *p.gc, closed], dtype=np.float32)


def state_vector(proprio: Mapping, arms: tuple[str, ...]) -> np.ndarray:
    """The named vector of ``proprio`` (arm -> ArmProprio-like) for ``arms``, float32."""
    return np.concatenate([arm_vector(proprio[arm]) for arm in arms]).astype(np.float32)


def state_bounds(arms: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per entry: positions within +-POSITION_LIMIT_M, quaternion parts within +-1,
    the gripper in [0, 1]."""
    low = np.array([-POSITION_LIMIT_M] * 3 + [-1.0] * 4 + [-POSITION_LIMIT_M] * 3 + [0.0], dtype=np.float32)
    high = np.array([POSITION_LIMIT_M] * 3 + [1.0] * 4 + [POSITION_LIMIT_M] * 3 + [1.0], dtype=np.float32)
    return np.tile(low, len(arms)), np.tile(high, len(arms))
