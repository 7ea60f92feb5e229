"""Named adapter configs of the policy agent (``model.extra.layout``): the keys, the state and the
action convention a published policy's server expects, so that it is evaluated with no code change.

``default``: vabench's own (vabench.agents.models.policy: its image, state and prompt keys, the
named state vector of vabench.envs.state, each vector as the env reads it).

``libero``: openpi's LIBERO example (``examples/libero/main.py`` in Physical-Intelligence/openpi),
under ``control=ee_delta`` on single-arm tasks. The request holds exactly

    observation/image        the active camera, uint8 HxWx3 as rendered
    observation/wrist_image  the wrist camera (ee_delta's wrist view), uint8 HxWx3
    observation/state        8 float32: end-effector position (3, world frame, metres), its
                             orientation as an axis-angle vector (3, radians), the two finger
                             joints' positions (2, metres; the right one negative, as robosuite's
                             Panda reports them)
    prompt                   the instruction

and the reply's ``actions`` is a chunk of 7 numbers per step in LIBERO's controller units:
translation and rotation in -1..1, scaled as LIBERO's OSC_POSE controller scales them (0.05 m,
0.5 rad at 1), and the gripper -1 (open) .. +1 (closed), mapped to the env's 0..1. The env then
clips each step to its own limits (vabench.envs.control). The images keep the render preset's size
(openpi's model transforms resize them to 224x224).
"""

from __future__ import annotations

import numpy as np

from vabench.core.boundary import Observation
from vabench.core.vocab import ACTIVE
from vabench.envs.sim.camera import WRIST

DEFAULT, LIBERO = "default", "libero"
LAYOUTS = (DEFAULT, LIBERO)
LIBERO_POSITION_M, LIBERO_ROTATION_RAD = 0.05, 0.5  # LIBERO's OSC_POSE output_max at an input of 1
LIBERO_IMAGE, LIBERO_WRIST, LIBERO_STATE, LIBERO_PROMPT = (
    "observation/image",
    "observation/wrist_image",
    "observation/state",
    "prompt",
)


def axis_angle(quat_wxyz) -> np.ndarray:
    """The rotation vector (axis times angle, radians, angle in 0..pi) of a unit quaternion."""
    w, *xyz = (float(v) for v in quat_wxyz)
    xyz = np.asarray(xyz)
    if w < 0:
        w, xyz = -w, -xyz
    s = float(np.linalg.norm(xyz))
    if s < 1e-12:
        return np.zeros(3)
    return xyz / s * 2.0 * np.arctan2(s, w)


def libero_observation(obs: Observation, arm: str) -> dict:
    """The request of openpi's LIBERO example for one arm; ValueError names what the observation lacks."""
    views = {f.view: f.pixels for f in obs.images}
    missing = [v for v in (ACTIVE.name, WRIST) if v not in views]
    if missing:
        raise ValueError(f"the observation has no {' or '.join(missing)} image (the wrist view is control=ee_delta's)")
    p = obs.arms[arm]
    state = np.concatenate([p.ee_position, axis_angle(p.ee_quat_wxyz), [p.fingers[0], -p.fingers[1]]])
    return {
        LIBERO_IMAGE: views[ACTIVE.name],
        LIBERO_WRIST: views[WRIST],
        LIBERO_STATE: state.astype(np.float32),
        LIBERO_PROMPT: obs.instruction,
    }


def libero_control(vector) -> tuple[float, ...]:
    """One LIBERO action (7 numbers) as the env's control step: metres, radians, gripper 0..1."""
    v = np.asarray(vector, dtype=float)
    gripper = float(np.clip((v[6] + 1.0) / 2.0, 0.0, 1.0))
    return (*(v[:3] * LIBERO_POSITION_M), *(v[3:6] * LIBERO_ROTATION_RAD), gripper)
