"""The feature mapping of an exported LeRobot dataset, declared once (as LeRobot's own
``LeRobotDatasetMetadata.features`` drives its writers): :class:`Layout` gives info.json, the
frame table's Arrow schema, the statistics' shapes and the videos' settings, so none of them can
disagree with another.

Frames are decisions: frame t is the observation a model (or the expert) acted on at step t, with
the action it took there. Every arm of the scene is in ``observation.state`` and ``action``, the
parked one of a one-arm task included, so one-arm and two-arm episodes share one layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from vabench.core.vocab import LEFT, RIGHT, ControlMode, EndReason, StepKind
from vabench.envs.actions import MOVE_AXES, camera_action_names

CODEBASE_VERSION = "v3.0"  # the LeRobot dataset format written
CHUNKS_SIZE = 1000  # LeRobot's defaults: files per chunk folder, MB per data and per video file
DATA_FILE_MB = 100
VIDEO_FILE_MB = 200
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
CODEC, PIX_FMT, GOP = "h264", "yuv420p", 2  # a keyframe every 2 frames, as LeRobot encodes: cheap random access

ARMS = (LEFT, RIGHT)  # the scene's two arms (vabench.envs.sim.robot.ARMS), in this order
AXES = MOVE_AXES  # the world axes of a position
NO_ACTION = "no_action"  # the last frame of an episode that ended without a decision (repairs, call limit)
# per frame, what followed the observation: an index into this tuple (complementary_info.action_kind)
ACTION_KINDS = (StepKind.ROBOT, StepKind.CAMERA, StepKind.INVALID, EndReason.STOP, NO_ACTION)
# complementary_info.camera_action: 0 when the frame's action was not a camera action, else 1 + an index here
CAMERA_ACTIONS = camera_action_names(ARMS)
IMAGE_NAMES = ["height", "width", "channels"]
DEFAULT_FEATURES = {  # every LeRobot frame has these (lerobot.datasets.utils.DEFAULT_FEATURES)
    "timestamp": ("float32", "seconds since the episode's first frame: frame_index / fps"),
    "frame_index": ("int64", "the frame's place in its episode, from 0"),
    "episode_index": ("int64", "the episode's place in the dataset, from 0"),
    "index": ("int64", "the frame's place in the dataset, from 0"),
    "task_index": ("int64", "row of meta/tasks.parquet: the instruction"),
}
_ARROW = {"float32": pa.float32(), "int64": pa.int64(), "bool": pa.bool_()}


@dataclass(frozen=True)
class Feature:
    key: str
    dtype: str  # float32 | int64 | bool | video
    shape: tuple[int, ...]
    names: tuple[str, ...] | None
    about: str  # what it holds, in the units it holds it (docs/export.md)

    @property
    def video(self) -> bool:
        return self.dtype == "video"

    def spec(self, fps: int) -> dict:
        """The feature as info.json declares it."""
        out = {"dtype": self.dtype, "shape": list(self.shape), "names": list(self.names) if self.names else None}
        if self.video:
            h, w, c = self.shape
            out["info"] = {
                "video.height": h,
                "video.width": w,
                "video.codec": CODEC,
                "video.pix_fmt": PIX_FMT,
                "video.is_depth_map": False,
                "video.fps": fps,
                "video.channels": c,
                "has_audio": False,
            }
        return out

    def scalar(self) -> pa.DataType:
        return _ARROW[self.dtype]

    def arrow(self) -> pa.DataType:
        """The frame table's column type (LeRobot's: a scalar for shape (1,), else a fixed-size list)."""
        return self.scalar() if self.shape == (1,) else pa.list_(self.scalar(), self.shape[0])


def state_names(dof: int) -> tuple[str, ...]:
    """Per arm: joint positions (rad; the fingers' in m), the end-effector pose a model is told
    (hand origin in m, gripper orientation as a wxyz quaternion), GC (m), the gripper command."""
    per_arm = (
        *(f"joint{i}" for i in range(1, dof + 1)),
        "finger_left",
        "finger_right",
        *(f"ee_{a}" for a in AXES),
        *(f"ee_q{c}" for c in "wxyz"),
        *(f"gc_{a}" for a in AXES),
        "gripper_closed",
    )
    return tuple(f"{arm}.{n}" for arm in ARMS for n in per_arm)


# per arm under control=ee_delta: the seven numbers the controller tracked (vabench.envs.control)
EE_DELTA_NAMES = (*(f"d{a}_m" for a in AXES), *(f"r{a}_rad" for a in AXES), "gripper")


def action_names(control: str = ControlMode.COMMANDS) -> tuple[str, ...]:
    """Per arm, the paper's metric robot action: a world-frame move (mm), a turn about the gripper's
    own axes (deg), and the gripper command in force after the action (1 closed, 0 open); under
    ``control=ee_delta`` the control step as the controller tracked it (after its clipping): the
    TCP's translation (world frame, m), a world rotation vector (rad) and the gripper target 0..1."""
    if control == ControlMode.EE_DELTA:
        per_arm = EE_DELTA_NAMES
    else:
        per_arm = (*(f"move_{a}_mm" for a in AXES), *(f"rotate_r{a}_deg" for a in AXES), "gripper_closed")
    return tuple(f"{arm}.{n}" for arm in ARMS for n in per_arm)


@dataclass(frozen=True)
class Layout:
    """A dataset's whole feature mapping: its cameras (view -> (height, width)), the robot's joint
    count, the frame rate, the robot type and the action interface its episodes were played under."""

    views: tuple[tuple[str, tuple[int, int]], ...]
    dof: int
    fps: int
    robot_type: str
    control: str = ControlMode.COMMANDS

    @property
    def features(self) -> tuple[Feature, ...]:
        cameras = tuple(
            Feature(f"observation.images.{v}", "video", (h, w, 3), tuple(IMAGE_NAMES), f"the {v} image the agent saw")
            for v, (h, w) in self.views
        )
        state, action = state_names(self.dof), action_names(self.control)
        kinds = ", ".join(f"{i} {k}" for i, k in enumerate(ACTION_KINDS))
        return (
            *cameras,
            Feature("observation.state", "float32", (len(state),), state, "robot state when the frame was seen"),
            Feature("action", "float32", (len(action),), action, "the robot action taken (zero motion otherwise)"),
            Feature("complementary_info.action_kind", "int64", (1,), ("action_kind",), f"what followed: {kinds}"),
            Feature("complementary_info.camera_action", "int64", (1,), ("camera_action",), "0, or 1 + camera index"),
            Feature("complementary_info.action_valid", "bool", (1,), ("action_valid",), "the env accepted it"),
            Feature("complementary_info.planner_success", "bool", (1,), ("planner_success",), "the planner ran it"),
            Feature("next.success", "bool", (1,), None, "the task was done after this frame's action"),
            Feature("next.done", "bool", (1,), None, "the episode's last frame"),
            *(Feature(k, dtype, (1,), None, about) for k, (dtype, about) in DEFAULT_FEATURES.items()),
        )

    @property
    def video_keys(self) -> tuple[str, ...]:
        return tuple(f.key for f in self.features if f.video)

    @property
    def columns(self) -> tuple[Feature, ...]:
        """The features stored in the frame table (all but the videos), in its column order."""
        return tuple(f for f in self.features if not f.video)

    def data_schema(self) -> pa.Schema:
        return pa.schema([(f.key, f.arrow()) for f in self.columns])

    def info(self, episodes: int, frames: int, tasks: int, vocabularies: dict) -> dict:
        """meta/info.json (lerobot.datasets.utils.create_empty_dataset_info, filled in); ``vabench``
        carries the vocabularies the integer features index into."""
        return {
            "codebase_version": CODEBASE_VERSION,
            "robot_type": self.robot_type,
            "total_episodes": episodes,
            "total_frames": frames,
            "total_tasks": tasks,
            "chunks_size": CHUNKS_SIZE,
            "data_files_size_in_mb": DATA_FILE_MB,
            "video_files_size_in_mb": VIDEO_FILE_MB,
            "fps": self.fps,
            "splits": {"train": f"0:{episodes}"},
            "data_path": DATA_PATH,
            "video_path": VIDEO_PATH if self.video_keys else None,
            "features": {f.key: f.spec(self.fps) for f in self.features},
            "vabench": vocabularies,
        }


ACTION_UNITS = {
    ControlMode.COMMANDS: "mm, deg, 1 = closed",
    ControlMode.EE_DELTA: "m (world frame), rad (world rotation vector), gripper target 0 open .. 1 closed",
}


def vocabularies(control: str = ControlMode.COMMANDS) -> dict:
    """What the integer features index into, the units of the vector ones and the action interface
    (``control``), for info.json."""
    return {
        "complementary_info.action_kind": [str(k) for k in ACTION_KINDS],
        "complementary_info.camera_action": ["(not a camera action)", *CAMERA_ACTIONS],
        "units": {"state": "rad (joints), m (fingers, positions), wxyz quaternion", "action": ACTION_UNITS[control]},
        "control": str(control),
    }
