"""Training samples from a LeRobot export (docs/export.md), read with pyarrow and vabench.results.media
(never lerobot, which needs numpy 2), in the served policy's terms (docs/policy.md):

- the image: the export's one camera (``observation.images.active`` for a run's active episodes,
  ``center_high`` for demonstrations), resized to the policy's input size;
- the state: the controlled arm's 11 numbers of vabench.envs.state (ee position, quaternion w
  first, GC, gripper), picked by name from the export's 40, as the agent sends them;
- the target: the next ``horizon`` robot commands as 7-vectors (m, rad, gripper 0..1), the
  export's mm and degrees converted, which is ``policy_actions.vectors_of`` of the same commands;
  from a ``control=ee_delta`` export (its info.json's ``vabench.control``) the next ``horizon``
  control steps, the seven numbers per arm as the export holds them (m, world rotation vector, 0..1);
- the prompt: the episode's instruction, as hashed word counts (no tokenizer needed).

A frame whose action is not a robot command (a camera action, a refusal, the final stop) is no
sample: the served policy never moves the camera, and those frames have no 7-vector.
"""

from __future__ import annotations

import functools
import json
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from vabench.agents.models.policy_actions import PER_ARM
from vabench.core.errors import VabenchError
from vabench.core.vocab import ACTIVE, ControlMode, StepKind
from vabench.envs.state import FIELDS
from vabench.envs.tasks import task_class
from vabench.export.features import ACTION_KINDS, EE_DELTA_NAMES, VIDEO_PATH
from vabench.results.media import read_video

ROBOT = ACTION_KINDS.index(StepKind.ROBOT)
IMAGE_PREFIX = "observation.images."
PREFERRED_VIEW = IMAGE_PREFIX + ACTIVE.name  # what the served policy sees (the first active view)
STATE_NAMES = {"gripper": "gripper_closed"}  # vabench.envs.state's field -> the export's name
_WORD = re.compile(r"[a-z0-9]+")


class DatasetError(VabenchError, ValueError):
    """An export the trainer cannot use; the message names the fix."""


@dataclass(frozen=True)
class Samples:
    """One sample per robot command of the chosen episodes."""

    images: np.ndarray  # (n, height, width, 3) uint8
    states: np.ndarray  # (n, 11) float32
    prompts: list[str]  # (n) instructions
    targets: np.ndarray  # (n, horizon, 7) float32: this command's vector and the next ones
    mask: np.ndarray  # (n, horizon) bool: False past the episode's last command
    episodes: pd.DataFrame  # the chosen episodes' rows of meta/episodes (task, seed, ...)
    control: str = ControlMode.COMMANDS  # the interface the targets are actions of

    def __len__(self) -> int:
        return len(self.states)


@functools.lru_cache(maxsize=64)  # a run's instructions; a client's odd prompts cannot grow it
def prompt_features(prompt: str, dim: int) -> np.ndarray:
    """The instruction's words hashed into ``dim`` counts (crc32: the same in every process), unit
    norm; read-only and kept per instruction (a served policy is sent the same one every step)."""
    out = np.zeros(dim, dtype=np.float32)
    for word in _WORD.findall(prompt.lower()):
        out[zlib.crc32(word.encode()) % dim] += 1.0
    out /= max(1.0, float(np.linalg.norm(out)))
    out.flags.writeable = False
    return out


def resize(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``image`` (h, w, 3) uint8 at ``size`` (width, height), as training and serving both do it; a
    writable copy (torch refuses to wrap a read-only array)."""
    rgb = np.ascontiguousarray(image[..., :3], dtype=np.uint8)
    if rgb.shape[1::-1] == tuple(size):
        return rgb.copy()
    return np.array(Image.fromarray(rgb).resize(size, Image.BILINEAR))


def vectors_of_actions(
    actions: np.ndarray, names: list[str], arm: str, control: str = ControlMode.COMMANDS
) -> np.ndarray:
    """The export's ``action`` rows (mm, deg, gripper_closed per arm) as ``arm``'s 7-vectors (m, rad,
    0..1); a control=ee_delta export's are those already (picked by name)."""
    if control == ControlMode.EE_DELTA:
        return np.asarray(actions, dtype=np.float64)[:, [names.index(f"{arm}.{n}") for n in EE_DELTA_NAMES]]
    at = [names.index(f"{arm}.{n}") for n in ("move_x_mm", "move_y_mm", "move_z_mm")]
    at += [names.index(f"{arm}.{n}") for n in ("rotate_rx_deg", "rotate_ry_deg", "rotate_rz_deg", "gripper_closed")]
    picked = np.asarray(actions, dtype=np.float64)[:, at]
    return np.concatenate([picked[:, :3] / 1000.0, np.radians(picked[:, 3:6]), picked[:, 6:]], axis=1)


def arm_states(states: np.ndarray, names: list[str], arm: str) -> np.ndarray:
    """The export's ``observation.state`` rows as ``arm``'s vabench.envs.state vectors (11 numbers)."""
    at = [names.index(f"{arm}.{STATE_NAMES.get(f, f)}") for f in FIELDS]
    return np.asarray(states, dtype=np.float32)[:, at]


def chunks(vectors: np.ndarray, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """Per command, it and the next ``horizon - 1`` (zero-padded past the end) and which are real."""
    n = len(vectors)
    out = np.zeros((n, horizon, PER_ARM), dtype=np.float32)
    mask = np.zeros((n, horizon), dtype=bool)
    for k in range(horizon):
        out[: n - k, k] = vectors[k:]
        mask[: n - k, k] = True
    return out, mask


class Export:
    """An exported dataset's tables and videos (docs/export.md's layout)."""

    def __init__(self, root: Path, image_key: str | None = None):
        self.root = Path(root)
        info_path = self.root / "meta" / "info.json"
        if not info_path.is_file():
            raise DatasetError(
                f"{self.root}: not a LeRobot export (no meta/info.json); make one with "
                "python -m vabench.export lerobot RUN --out DIR"
            )
        self.info = json.loads(info_path.read_text())
        self.fps = float(self.info["fps"])
        self.control = str(self.info.get("vabench", {}).get("control") or ControlMode.COMMANDS)  # older: commands
        features = self.info["features"]
        self.state_names = list(features["observation.state"]["names"])
        self.action_names = list(features["action"]["names"])
        views = [k for k, f in features.items() if f["dtype"] == "video"]
        self.image_key = image_key or (PREFERRED_VIEW if PREFERRED_VIEW in views else views[0] if views else None)
        if self.image_key not in views:
            raise DatasetError(f"{self.root}: no video {self.image_key!r}; it has {', '.join(views) or 'none'}")
        self.episodes = pd.read_parquet(self.root / "meta" / "episodes")
        self.frames = pd.read_parquet(self.root / "data")
        self._videos: dict[tuple[int, int], list[np.ndarray]] = {}

    def images(self, episode: pd.Series) -> list[np.ndarray]:
        """The episode's frames of the chosen camera, in order."""
        key = self.image_key
        where = (int(episode[f"videos/{key}/chunk_index"]), int(episode[f"videos/{key}/file_index"]))
        if where not in self._videos:
            path = self.root / VIDEO_PATH.format(video_key=key, chunk_index=where[0], file_index=where[1])
            self._videos = {where: read_video(path)}  # one file at a time: episodes come in file order
        first = round(float(episode[f"videos/{key}/from_timestamp"]) * self.fps)
        return self._videos[where][first : first + int(episode["length"])]


def held_out(episodes: pd.DataFrame, per_task: int) -> set[tuple[str, int]]:
    """The validation split of an export's training episodes: per task, the ``per_task`` successful
    episodes of the highest seeds (a fixed rule, so the split never depends on a result)."""
    if per_task <= 0:
        return set()
    ok = episodes[episodes["success"].fillna(False).astype(bool)] if "success" in episodes else episodes
    out: set[tuple[str, int]] = set()
    for task, rows in ok.groupby("task"):
        seeds = sorted(int(s) for s in rows["seed"])
        if len(seeds) <= per_task:
            raise DatasetError(
                f"{task}: {len(seeds)} successful episode(s), none left to train on after holding out {per_task}"
            )
        out |= {(str(task), s) for s in seeds[-per_task:]}
    return out


def read_export(
    root: Path,
    horizon: int,
    size: tuple[int, int],
    tasks: list[str] | None = None,
    successful_only: bool = True,
    image_key: str | None = None,
    only: set[tuple[str, int]] | None = None,
    without: set[tuple[str, int]] = frozenset(),
) -> Samples:
    """The samples of ``root``'s episodes (of ``tasks``; only successful ones unless told otherwise;
    only the (task, seed) pairs of ``only`` when given, none of ``without``), images at ``size``
    (width, height)."""
    export = Export(root, image_key)
    chosen = export.episodes
    pairs = [(str(t), int(s)) for t, s in zip(chosen["task"], chosen["seed"], strict=True)]
    chosen = chosen[[(only is None or p in only) and p not in without for p in pairs]]
    if tasks:
        unknown = sorted(set(tasks) - set(chosen["task"]))
        if unknown:
            raise DatasetError(
                f"{root}: no episode of {', '.join(unknown)}; it has {', '.join(sorted(set(chosen.task)))}"
            )
        chosen = chosen[chosen["task"].isin(tasks)]
    if successful_only and "success" in chosen:
        chosen = chosen[chosen["success"].fillna(False).astype(bool)]
    parts = [_episode(export, row, horizon, size) for _, row in chosen.sort_values("episode_index").iterrows()]
    parts = [p for p in parts if p is not None]
    if not parts:
        raise DatasetError(f"{root}: no successful episode with a robot command to learn from")
    images, states, prompts, targets, mask = (list(x) for x in zip(*parts, strict=True))
    return Samples(
        np.concatenate(images),
        np.concatenate(states),
        [p for ps in prompts for p in ps],
        np.concatenate(targets),
        np.concatenate(mask),
        chosen.reset_index(drop=True),
        export.control,
    )


def _episode(export: Export, episode: pd.Series, horizon: int, size: tuple[int, int]):
    """One episode's (images, states, prompts, targets, mask), robot commands only; None if it has none."""
    arms = tuple(task_class(str(episode["task"])).arms)
    if len(arms) != 1:
        raise DatasetError(
            f"{episode['task']}: a two-arm task; this baseline learns one-arm tasks only (leave it out with --tasks)"
        )
    lo, hi = int(episode["dataset_from_index"]), int(episode["dataset_to_index"])
    rows = export.frames[(export.frames["index"] >= lo) & (export.frames["index"] < hi)].sort_values("frame_index")
    robot = (rows["complementary_info.action_kind"] == ROBOT).to_numpy()
    if not robot.any():
        return None
    frames = export.images(episode)
    if len(frames) != len(rows):
        raise DatasetError(
            f"{export.root}: episode {episode['episode_index']} has {len(rows)} rows but {len(frames)} frames"
        )
    actions = np.stack(rows["action"].to_numpy())[robot]
    vectors = vectors_of_actions(actions, export.action_names, arms[0], export.control)
    targets, mask = chunks(vectors, horizon)
    images = np.stack([resize(f, size) for f, keep in zip(frames, robot, strict=True) if keep])
    states = arm_states(np.stack(rows["observation.state"].to_numpy())[robot], export.state_names, arms[0])
    prompt = str(list(episode["tasks"])[0])
    return images, states, [prompt] * len(states), targets, mask
