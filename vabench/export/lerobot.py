"""Write clips as a LeRobot dataset v3.0 (layout: lerobot 0.4's ``lerobot/datasets/utils.py``) with
the project's own tools: pyarrow for the tables, vabench.results.media (PyAV's libx264) for H.264 videos.
LeRobot itself is never imported here (it needs numpy 2; the simulator pins numpy 1).

Many episodes share a data file and a video file, as LeRobot writes them: a file takes whole
episodes until its size estimate reaches LeRobot's limit (100 MB of frame rows, 200 MB of video,
the video estimated by its source images' bytes), 1,000 files to a chunk folder. The dataset is
written beside ``out`` and renamed into place, so ``out`` is whole or absent.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image
from tqdm import tqdm

from vabench.core.vocab import Split
from vabench.results.media import write_video
from vabench.results.outcomes import SCHEMA

from . import stats
from .clips import Clip, ExportError
from .features import (
    CHUNKS_SIZE,
    DATA_FILE_MB,
    DATA_PATH,
    EPISODES_PATH,
    GOP,
    VIDEO_FILE_MB,
    VIDEO_PATH,
    Layout,
    vocabularies,
)

MB = 1024 * 1024
_BYTES = {"float32": 4, "int64": 8, "bool": 1}


@dataclass(frozen=True)
class Placed:
    """Where one clip lands: its episode and first global frame index, its task's index."""

    episode: int
    first: int
    task: int


def layout_of(clips: list[Clip], fps: int) -> Layout:
    """The one layout every clip fits, or an ExportError naming how to export them apart."""
    first = clips[0]
    views = tuple((v, _size(paths[0])) for v, paths in first.images.items())
    for clip in clips:
        where = clip.meta.get("record") or clip.meta.get("task")
        mine = tuple((v, _size(paths[0])) for v, paths in clip.images.items())
        if mine != views:
            raise ExportError(
                f"{where} shows {_views(mine)}, an earlier episode {_views(views)}: a dataset has one set of cameras; "
                "export one protocol, render preset or intervention at a time (e.g. --where protocol=active)"
            )
        if (clip.dof, clip.robot) != (first.dof, first.robot):
            raise ExportError(f"{where} is a {clip.robot}, an earlier episode a {first.robot}: use --where robot=NAME")
        if clip.control != first.control:
            raise ExportError(
                f"{where} was played under control={clip.control}, an earlier episode under control={first.control}: "
                "a dataset has one action interface; use --where control=NAME"
            )
    return Layout(views, first.dof, fps, first.robot, first.control)


def _size(path: Path) -> tuple[int, int]:
    with Image.open(path) as image:
        return image.height, image.width


def _views(views) -> str:
    return ", ".join(f"{v} {w}x{h}" for v, (h, w) in views)


def write(clips: list[Clip], out: Path, fps: int, repo_id: str, progress: bool = True) -> Layout:
    """Write ``clips`` as one dataset at ``out`` (which must not exist); returns its layout."""
    if not clips:
        raise ExportError("nothing to export: no episode matched")
    layout, out = layout_of(clips, fps), Path(out)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tasks = list(dict.fromkeys(c.task for c in clips))
        starts = itertools.accumulate((c.length for c in clips[:-1]), initial=0)
        placed = [Placed(i, s, tasks.index(c.task)) for i, (c, s) in enumerate(zip(clips, starts, strict=True))]
        rows = [{} for _ in clips]
        _data(tmp, layout, clips, placed, rows)
        _videos(tmp, layout, clips, rows, progress)
        episode_stats = [_clip_stats(layout, clip, p) for clip, p in zip(clips, placed, strict=True)]
        _episodes(tmp, clips, placed, rows, episode_stats, tasks)
        _meta(tmp, layout, clips, tasks, episode_stats, repo_id)
        out.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return layout


def _files(sizes: list[float], limit: float) -> list[tuple[int, int]]:
    """(chunk, file) of each episode: a file takes whole episodes until the next would pass ``limit``."""
    out, n, used = [], 0, 0.0
    for size in sizes:
        if used and used + size > limit:
            n, used = n + 1, 0.0
        used += size
        out.append(divmod(n, CHUNKS_SIZE))
    return out


def _columns(layout: Layout, clip: Clip, p: Placed) -> dict[str, np.ndarray]:
    n = clip.length
    defaults = {
        "timestamp": (np.arange(n) / layout.fps).astype(np.float32),
        "frame_index": np.arange(n, dtype=np.int64),
        "episode_index": np.full(n, p.episode, dtype=np.int64),
        "index": np.arange(p.first, p.first + n, dtype=np.int64),
        "task_index": np.full(n, p.task, dtype=np.int64),
    }
    return {**clip.columns, **defaults}


def frame_table(layout: Layout, clip: Clip, p: Placed) -> pa.Table:
    """One clip's rows of the frame table, in the layout's schema."""
    values, arrays = _columns(layout, clip, p), []
    for f in layout.columns:
        v = np.asarray(values[f.key])
        if v.shape[1:] not in ((), f.shape) or len(v) != clip.length:
            raise ExportError(f"{clip.meta.get('record')}: {f.key} has shape {v.shape}, the layout {f.shape}")
        flat = pa.array(v.reshape(-1)).cast(f.scalar())
        arrays.append(flat if f.shape == (1,) else pa.FixedSizeListArray.from_arrays(flat, f.shape[0]))
    return pa.Table.from_arrays(arrays, schema=layout.data_schema())


def _data(root: Path, layout: Layout, clips: list[Clip], placed: list[Placed], rows: list[dict]) -> None:
    row_bytes = sum(_BYTES[f.dtype] * f.shape[0] for f in layout.columns)
    where = _files([c.length * row_bytes for c in clips], DATA_FILE_MB * MB)
    for (chunk, file), group in itertools.groupby(range(len(clips)), key=lambda i: where[i]):
        group = list(group)
        path = root / DATA_PATH.format(chunk_index=chunk, file_index=file)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.concat_tables(frame_table(layout, clips[i], placed[i]) for i in group), path)
        for i in group:
            rows[i].update(
                {
                    "data/chunk_index": chunk,
                    "data/file_index": file,
                    "dataset_from_index": placed[i].first,
                    "dataset_to_index": placed[i].first + clips[i].length,
                }
            )


def _videos(root: Path, layout: Layout, clips: list[Clip], rows: list[dict], progress: bool) -> None:
    frames = sum(c.length for c in clips) * len(layout.views)
    with tqdm(total=frames, desc="encoding videos", unit="frame", disable=not progress or None) as bar:
        for view, (height, width) in layout.views:
            key = f"observation.images.{view}"
            sizes = [sum(p.stat().st_size for p in c.images[view]) for c in clips]
            where = _files(sizes, VIDEO_FILE_MB * MB)
            for (chunk, file), group in itertools.groupby(range(len(clips)), key=lambda i: where[i]):
                group = list(group)
                paths = [p for i in group for p in clips[i].images[view]]
                out = root / VIDEO_PATH.format(video_key=key, chunk_index=chunk, file_index=file)
                write_video(_counted(paths, bar), out, layout.fps, (width, height), keyframe_every=GOP)
                out.chmod(0o644)  # readable by whoever the dataset is shared with, as the tables are
                done = 0
                for i in group:
                    rows[i].update(
                        {
                            f"videos/{key}/chunk_index": chunk,
                            f"videos/{key}/file_index": file,
                            f"videos/{key}/from_timestamp": done / layout.fps,
                            f"videos/{key}/to_timestamp": (done + clips[i].length) / layout.fps,
                        }
                    )
                    done += clips[i].length


def _counted(paths: list[Path], bar):
    for p in paths:
        yield p
        bar.update()


def _clip_stats(layout: Layout, clip: Clip, p: Placed) -> dict[str, dict[str, np.ndarray]]:
    values = _columns(layout, clip, p)
    out = {}
    for f in layout.features:
        out[f.key] = (
            stats.image_stats(clip.images[f.key.rsplit(".", 1)[1]]) if f.video else stats.vector_stats(values[f.key])
        )
    return out


def _episodes(root, clips, placed, rows, episode_stats, tasks) -> None:
    """meta/episodes: LeRobot's columns, the clip's own (success, condition, ..., outcome_key) and
    its per-episode statistics, one row per episode."""
    records = []
    for clip, p, row, st in zip(clips, placed, rows, episode_stats, strict=True):
        flat = {f"stats/{k}/{s}": np.asarray(v).tolist() for k, ks in st.items() for s, v in ks.items()}
        records.append(
            {
                "episode_index": p.episode,
                "tasks": [tasks[p.task]],
                "length": clip.length,
                **clip.meta,
                **row,
                "meta/episodes/chunk_index": 0,
                "meta/episodes/file_index": 0,
                **flat,
            }
        )
    table = pa.Table.from_pylist(records)
    for name in clips[0].meta:
        kind = SCHEMA.field(name).type if name in SCHEMA.names else pa.string()
        table = table.set_column(table.schema.get_field_index(name), name, table[name].cast(kind))
    path = root / EPISODES_PATH.format(chunk_index=0, file_index=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def _meta(root: Path, layout: Layout, clips: list[Clip], tasks: list[str], episode_stats, repo_id: str) -> None:
    """meta/info.json, meta/stats.json, meta/tasks.parquet and the dataset card."""
    frames = sum(c.length for c in clips)
    splits = sorted({str(c.meta.get("split") or Split.EVAL) for c in clips})  # whose seeds: eval, train or demo
    info = layout.info(len(clips), frames, len(tasks), {**vocabularies(layout.control), "split": "+".join(splits)})
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=4) + "\n")
    pooled = {f.key: stats.pooled([s[f.key] for s in episode_stats]) for f in layout.features}
    (root / "meta" / "stats.json").write_text(json.dumps(stats.as_json(pooled), indent=4) + "\n")
    pd.DataFrame({"task_index": range(len(tasks))}, index=pd.Index(tasks, name="task")).to_parquet(
        root / "meta" / "tasks.parquet"
    )
    (root / "README.md").write_text(_card(repo_id, len(clips), frames))


def _card(repo_id: str, episodes: int, frames: int) -> str:
    return f"""---
task_categories:
- robotics
tags:
- LeRobot
- vabench
configs:
- config_name: default
  data_files: data/*/*.parquet
---
# {repo_id}

A LeRobot dataset v3.0 exported from vabench ({episodes} episodes, {frames} frames): see vabench's
docs/export.md for its feature mapping. Open it with

```python
from lerobot.datasets.lerobot_dataset import LeRobotDataset
ds = LeRobotDataset("{repo_id}", root="PATH/TO/THIS/FOLDER", video_backend="pyav")
```
"""
