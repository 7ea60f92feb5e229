"""The camera rig: the active camera with the paper's camera actions (Table 27), and the observer
camera of the passive five-view bundle (Appendix C.7). The "same" view name means different
geometry in the two (reference notes 4.4): the observer has a wider lens, anchors on the control
EE instead of GC, is never clamped, and its topdown is an absolute whole-table view.

Camera poses use SAPIEN's convention: rotation columns are (forward, left, up). Camera actions
only move this camera; they never touch the physics. The pose (calibration) never leaves the
env: feedback for camera actions is qualitative.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
import sapien
from PIL import Image

from vabench.core.errors import ConfigError
from vabench.core.vocab import ACTIVE, LEFT, RIGHT

from .geometry import axis_angle, look_at
from .scene import add_camera
from .shaders import SHADERS

# Offsets from the target GC (right-arm side; x is mirrored for the left arm).
VIEW_OFFSETS = {
    "topdown": (0.00, 0.00, 0.68),
    "side": (0.58, -0.02, 0.06),
    "front_side_45": (0.44, -0.44, 0.18),
    "side_top_45": (0.48, -0.02, 0.48),
    "oblique_45": (0.42, -0.42, 0.42),
}
VIEW_UP_HINT = {"topdown": (0.0, 1.0, 0.0)}  # others: world +z
PASSIVE_ORDER = ("topdown", "side", "front_side_45", "side_top_45", "oblique_45")
CAMERA_BOX_LO = np.array([-0.85, -0.95, 0.78])
CAMERA_BOX_HI = np.array([0.85, 0.35, 1.85])
MOVE_STEP_M = 0.05
ZOOM_STEP_M = 0.08
TURN_STEP_DEG = 10.0
# The first active view is the reference's ``center_high`` (reference notes 4.1), from which its
# demonstrations were recorded too: high above the robot side, centred, looking at
# (0.17 s, gc_y - 0.02, max(0.86, gc_z - 0.05)), s = +1 for a right-arm task, -1 left, 0 both.
INITIAL_VIEW = "center_high"
INITIAL_EYE = np.array([0.0, -0.58, 1.48])
INITIAL_TARGET_X = 0.17
INITIAL_TARGET_BACK = 0.02  # metres behind (-y) the GC
INITIAL_TARGET_DROP, INITIAL_TARGET_MIN_Z = 0.05, 0.86

# The observer (C.7; reference notes 4.4). The reference's poses are used as they are: our world
# is RoboTwin's table frame (table top z = 0.74, centred at the origin, +y to the wall), as it is
# for VIEW_OFFSETS and the camera box above.
OBSERVER_FOVY_DEG, OBSERVER_NEAR, OBSERVER_FAR = 55.0, 0.05, 100.0
OBSERVER_OFFSETS = {  # from the control EE, right-arm side (x times s = -1 for a left-arm task)
    "side": (0.58, -0.02, 0.06),
    "front_side_45": (0.44, -0.44, 0.18),
    "side_top_45": (0.48, -0.02, 0.48),
    "oblique_45": (0.42, -0.42, 0.42),
    "gripper_follow": (0.38, -0.42, 0.32),  # the recording view (evaluator side; never sent to a model)
}
OBSERVER_TARGET_DROP = 0.02  # looks at EE - 2 cm in z
OBSERVER_TOPDOWN = ((0.0, -0.12, 1.72), (0.0, -0.08, 0.80), (0.0, -1.0, 0.0))  # eye, target, up: the whole table

# The wrist camera (control=ee_delta only; policy layouts such as openpi's LIBERO and DROID expect
# one): fixed to the hand, in the hand frame (z: the approach, out between the fingers; x: across
# the palm, normal to the closing axis), beside the palm, looking past the fingertips.
WRIST = "wrist"  # the view's name; on a two-arm task wrist_left and wrist_right
WRIST_FOVY_DEG = 70.0
WRIST_EYE = (0.07, 0.0, 0.02)  # metres from the hand's origin, hand frame
WRIST_TARGET = (0.0, 0.0, 0.16)  # what it looks at: 6 cm beyond the TCP (0.1034 m out on z)


@dataclass(frozen=True)
class CameraConfig:
    width: int = 640
    height: int = 480
    fovy_deg: float = 37.0  # the paper's active head camera (VABench_D435)
    near: float = 0.01
    far: float = 10.0
    shader: str = "lean"  # "lean" (see shaders.py) or SAPIEN's "default"

    def __post_init__(self):
        if not (16 <= self.width <= 4096 and 16 <= self.height <= 4096):
            raise ConfigError(f"camera width and height must be in [16, 4096], got {self.width}x{self.height}")
        if not 5.0 <= self.fovy_deg <= 120.0:
            raise ConfigError(f"camera fovy_deg must be in [5, 120], got {self.fovy_deg}")
        if self.shader not in SHADERS:
            raise ConfigError(f"camera shader must be one of {', '.join(SHADERS)}, got {self.shader!r}")


def _pose(eye, rot) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = rot
    m[:3, 3] = eye
    return m


def semantic_target(view: str, gcs: dict[str, np.ndarray], controlled: tuple[str, ...]) -> tuple[str, np.ndarray, bool]:
    """Resolve a semantic view name to (base view, target point, mirror x?)."""
    if len(controlled) == 1:
        arm = controlled[0]
        return view, gcs[arm], arm == LEFT
    for who in (LEFT, RIGHT, "both"):
        prefix = f"{who}_"
        if view.startswith(prefix) and view[len(prefix) :] in VIEW_OFFSETS:
            base = view[len(prefix) :]
            if who == "both":
                return base, (gcs["left"] + gcs["right"]) / 2, False
            return base, gcs[who], who == LEFT
    return view, (gcs["left"] + gcs["right"]) / 2, False


def view_pose(base: str, target: np.ndarray, mirror: bool) -> tuple[np.ndarray, bool]:
    """Camera pose for a semantic view: offset from ``target``, clamped, looking at ``target``."""
    off = np.array(VIEW_OFFSETS[base])
    if mirror:
        off[0] = -off[0]
    eye = np.asarray(target, dtype=float) + off
    clamped = np.clip(eye, CAMERA_BOX_LO, CAMERA_BOX_HI)
    return _pose(clamped, look_at(clamped, target, VIEW_UP_HINT.get(base, (0.0, 0.0, 1.0)))), not np.allclose(
        clamped, eye
    )


def observer_pose(view: str, ees: dict[str, np.ndarray], controlled: tuple[str, ...]) -> np.ndarray:
    """Observer camera pose for one passive (or recording) view. ``ees`` are the control EE positions (robot
    proprioception, never object poses); a two-arm task anchors on their midpoint, right side."""
    if view == "topdown":
        eye, target, up = (np.array(v) for v in OBSERVER_TOPDOWN)
        return _pose(eye, look_at(eye, target, up))
    ee = np.mean([np.asarray(ees[arm], dtype=float) for arm in controlled], axis=0)
    side = -1.0 if controlled == (LEFT,) else 1.0
    eye = ee + np.array(OBSERVER_OFFSETS[view]) * (side, 1.0, 1.0)
    return _pose(eye, look_at(eye, ee - (0.0, 0.0, OBSERVER_TARGET_DROP), (0.0, 0.0, 1.0)))


def wrist_pose(hand: np.ndarray) -> np.ndarray:
    """The wrist camera's world pose on a hand at ``hand`` (4x4)."""
    rot, origin = hand[:3, :3], hand[:3, 3]
    eye, target = origin + rot @ WRIST_EYE, origin + rot @ WRIST_TARGET
    return _pose(eye, look_at(eye, target, rot[:, 0]))


def initial_pose(gcs: dict[str, np.ndarray], controlled: tuple[str, ...]) -> np.ndarray:
    """The reference's ``center_high`` pose for a task's controlled arms (GC positions ``gcs``)."""
    if len(controlled) == 1:
        side, gc = (1.0 if controlled[0] == RIGHT else -1.0), gcs[controlled[0]]
    else:
        side, gc = 0.0, (gcs["left"] + gcs["right"]) / 2
    target = np.array(
        [INITIAL_TARGET_X * side, gc[1] - INITIAL_TARGET_BACK, max(INITIAL_TARGET_MIN_Z, gc[2] - INITIAL_TARGET_DROP)]
    )
    return _pose(INITIAL_EYE, look_at(INITIAL_EYE, target, (0.0, 0.0, 1.0)))


class CameraRig:
    """The episode's cameras: the model's active camera and the passive observer (C.7).

    ``hold=False`` keeps no camera between renders: each render makes its camera and removes it
    after, so a scene holds no render targets (about 100 bytes per pixel: ~31 MB at 640x480,
    ~120 MB at 1280x960) while its episode waits for a model. A worker hosting many episodes
    uses it; it costs a few ms per render and gives the same pixels."""

    def __init__(
        self,
        scene: sapien.Scene,
        config: CameraConfig,
        hold: bool = True,
        record_size: tuple[int, int] = (320, 240),
        observer_size: tuple[int, int] | None = None,
    ):
        """``config``: the active camera; ``observer_size``: the passive bundle's render size
        (default: the active camera's); ``record_size``: the recording view's."""
        self.config, self.scene, self.hold, self.record_size = config, scene, hold, record_size
        self.observer_size = observer_size or (config.width, config.height)
        self.pose = np.eye(4)
        self.shown: np.ndarray | None = None  # the active camera's latest picture of the world as it is
        self._held: dict[str, object] = {}

    def _make(self, kind: str):
        c = self.config
        if kind == ACTIVE.name:
            return add_camera(
                self.scene, ACTIVE.name, c.width, c.height, np.deg2rad(c.fovy_deg), c.near, c.far, c.shader
            )
        if kind == "recording":  # the observer's lens at the recording size
            w, h = self.record_size
            return add_camera(
                self.scene, "recording", w, h, np.deg2rad(OBSERVER_FOVY_DEG), OBSERVER_NEAR, OBSERVER_FAR, c.shader
            )
        w, h = self.observer_size
        if kind == WRIST:  # the observer's size: the preset's smaller images
            return add_camera(self.scene, WRIST, w, h, np.deg2rad(WRIST_FOVY_DEG), 0.01, 10.0, c.shader)
        # the passive bundle's lens at the preset's observer size (C.7 fixes the lens, not the resolution)
        fovy = np.deg2rad(OBSERVER_FOVY_DEG)
        return add_camera(self.scene, "observer", w, h, fovy, OBSERVER_NEAR, OBSERVER_FAR, c.shader)

    @contextlib.contextmanager
    def lens(self, kind: str):
        """The active or observer camera, made on first use (active episodes never make an observer)."""
        if self.hold:
            if kind not in self._held:
                self._held[kind] = self._make(kind)
            yield self._held[kind]
            return
        camera = self._make(kind)
        try:
            yield camera
        finally:
            self.scene.remove_entity(camera.entity)

    def reset(self, gcs: dict[str, np.ndarray], controlled: tuple[str, ...]) -> None:
        """The first active view (:data:`INITIAL_VIEW`)."""
        self.pose = initial_pose(gcs, controlled)

    def apply(self, name: str, gcs: dict[str, np.ndarray], controlled: tuple[str, ...]) -> str:
        """Carry out one camera action (validated name without the ``camera.`` prefix)."""
        if name.startswith("view_"):
            base, target, mirror = semantic_target(name[len("view_") :], gcs, controlled)
            self.pose, clamped = view_pose(base, target, mirror)
            return f"camera moved to the {name} view" + (
                " (position clamped to the camera workspace)" if clamped else ""
            )
        rot, eye = self.pose[:3, :3].copy(), self.pose[:3, 3].copy()
        fwd, left, up = rot[:, 0], rot[:, 1], rot[:, 2]
        op, _, direction = name.partition("_")
        if op == "move":
            step = {"left": left, "right": -left, "up": up, "down": -up}[direction]
            eye = eye + MOVE_STEP_M * step
        elif op == "zoom":
            eye = eye + ZOOM_STEP_M * (fwd if direction == "in" else -fwd)
        elif op == "yaw":
            rot = axis_angle([0, 0, 1], np.radians(TURN_STEP_DEG if direction == LEFT else -TURN_STEP_DEG)) @ rot
        elif op == "pitch":
            rot = axis_angle(left, np.radians(-TURN_STEP_DEG if direction == "up" else TURN_STEP_DEG)) @ rot
        else:
            raise ValueError(f"unknown camera action {name!r}")
        clamped_eye = np.clip(eye, CAMERA_BOX_LO, CAMERA_BOX_HI)
        self.pose = _pose(clamped_eye, rot)
        note = " (position clamped to the camera workspace)" if not np.allclose(clamped_eye, eye) else ""
        return f"camera {name.replace('_', ' ')} done{note}"

    def render(self, pose: np.ndarray | None = None, kind: str = ACTIVE.name) -> np.ndarray:
        """RGB uint8 image (H, W, 3) from ``pose`` (default: the active pose) with the ``active``
        or the ``observer`` camera."""
        with self.lens(kind) as camera:
            rgb = self._picture(camera, self.pose if pose is None else pose)
        if pose is None and kind == ACTIVE.name:
            self.shown = rgb  # the active view now (the env clears it before the world moves)
        return rgb

    def _picture(self, camera, pose: np.ndarray) -> np.ndarray:
        camera.entity.set_pose(sapien.Pose(pose))
        self.scene.update_render()
        camera.take_picture()
        rgba = camera.get_picture("Color")  # uint8: see scene._process_setup
        return np.ascontiguousarray(rgba[..., :3])

    def recording(
        self, ees: dict[str, np.ndarray], controlled: tuple[str, ...], shown: bool = False
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """The evaluator's recording view (reference notes 4.4, ``gripper_follow``): the image, and
        the camera pose and vertical field of view (radians) it was taken with (for the debug
        overlay). Never part of an Observation. ``shown`` (control=ee_delta): the active camera's
        picture of now instead (a copy, at the recording size), when the active protocol took one
        and the recording size has its aspect ratio: a policy never moves that camera, and a
        control step then renders no third picture."""
        w, h = self.record_size
        now = self.shown
        if shown and now is not None and now.shape[1] * h == now.shape[0] * w:
            rgb = now.copy() if now.shape[:2] == (h, w) else np.asarray(Image.fromarray(now).resize((w, h)))
            return rgb, self.pose, float(np.deg2rad(self.config.fovy_deg))
        pose = observer_pose("gripper_follow", ees, controlled)
        with self.lens("recording") as camera:
            return self._picture(camera, pose), pose, float(np.deg2rad(OBSERVER_FOVY_DEG))

    def wrist_views(self, hands: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The wrist camera's view per arm (``hands``: arm -> its hand's 4x4 world pose), named
        ``wrist`` for one arm, ``wrist_<arm>`` for two (control=ee_delta only)."""
        with self.lens(WRIST) as camera:
            return {
                WRIST if len(hands) == 1 else f"{WRIST}_{arm}": self._picture(camera, wrist_pose(hand))
                for arm, hand in hands.items()
            }

    def passive_bundle(self, ees: dict[str, np.ndarray], controlled: tuple[str, ...]) -> dict[str, np.ndarray]:
        """The five observer views (C.7) in the paper's order, anchored on the control EE positions ``ees``."""
        with self.lens("observer") as camera:
            return {view: self._picture(camera, observer_pose(view, ees, controlled)) for view in PASSIVE_ORDER}
