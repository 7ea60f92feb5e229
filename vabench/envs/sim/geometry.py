"""Small rigid-body helpers shared by the env modules.

Conventions used everywhere in vabench:
* quaternions are (w, x, y, z), as SAPIEN and mplib use;
* the *gripper frame* has columns rx (approach, wrist -> fingertips), ry (finger-closing axis)
  and rz = rx x ry (palm normal), the paper's local axes;
* Euler angles reported to the model are roll-pitch-yaw, static x-y-z (transforms3d 'sxyz').
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

AXES = {"x": np.array([1.0, 0.0, 0.0]), "y": np.array([0.0, 1.0, 0.0]), "z": np.array([0.0, 0.0, 1.0])}

# Panda hand frame (z approach, y finger axis) -> gripper frame: rx = hand z, ry = -hand y,
# rz = hand x. This choice puts "palm up, pointing forward" at joint 7 = pi/4, the middle of
# its range, so yaw about rx has room both ways.
HAND_TO_GRIPPER = np.array([[0.0, 0.0, 1.0], [0.0, -1.0, 0.0], [1.0, 0.0, 0.0]])


def matrix_to_quat(m) -> np.ndarray:
    return _wxyz(Rotation.from_matrix(np.asarray(m, dtype=float)))


def matrix_to_quat_rpy_deg(m) -> tuple[np.ndarray, np.ndarray]:
    """The quaternion and roll-pitch-yaw (degrees) from one conversion (the robot state, every
    step: a conversion costs ~0.3 ms)."""
    r = Rotation.from_matrix(np.asarray(m, dtype=float))
    # 'xyz' (lower case) is scipy's extrinsic x-y-z, identical to transforms3d 'sxyz'.
    return _wxyz(r), r.as_euler("xyz", degrees=True)


def _wxyz(r: Rotation) -> np.ndarray:
    x, y, z, w = r.as_quat()
    q = np.array([w, x, y, z])
    return q if q[0] >= 0 else -q  # canonical sign: w >= 0


def axis_angle(axis, angle_rad: float) -> np.ndarray:
    axis = np.asarray(axis, dtype=float)
    return Rotation.from_rotvec(axis / np.linalg.norm(axis) * angle_rad).as_matrix()


def frame_from_axes(rx, rz) -> np.ndarray:
    """Gripper rotation whose approach axis is ``rx`` and palm normal is close to ``rz``."""
    rx = np.asarray(rx, dtype=float)
    rx = rx / np.linalg.norm(rx)
    rz = np.asarray(rz, dtype=float)
    rz = rz - rx * (rz @ rx)
    rz = rz / np.linalg.norm(rz)
    return np.stack([rx, np.cross(rz, rx), rz], axis=1)


def look_at(eye, target, up_hint) -> np.ndarray:
    """SAPIEN camera rotation (columns forward, left, up) looking from ``eye`` at ``target``."""
    fwd = np.asarray(target, dtype=float) - np.asarray(eye, dtype=float)
    fwd /= np.linalg.norm(fwd)
    up = np.asarray(up_hint, dtype=float)
    if abs(fwd @ up) > 0.999:  # degenerate hint: fall back to world +y, then +x
        up = np.array([0.0, 1.0, 0.0]) if abs(fwd[1]) < 0.9 else np.array([1.0, 0.0, 0.0])
    left = np.cross(up, fwd)
    left /= np.linalg.norm(left)
    return np.stack([fwd, left, np.cross(fwd, left)], axis=1)


def angle_between_deg(r_a, r_b) -> float:
    """Geodesic angle between two rotation matrices, in degrees."""
    c = (np.trace(np.asarray(r_a).T @ np.asarray(r_b)) - 1.0) / 2.0
    return float(np.degrees(np.arccos(np.clip(c, -1.0, 1.0))))
