"""Videos from stored frames: H.264 mp4 through imageio and the ffmpeg binary its wheel carries.

Used for episode videos (from the recording views), demonstration videos (from the demo frames)
and the review app's ``videos`` command. Browsers play what this writes: yuv420p, even sizes,
the index at the front (``+faststart``) so a video starts before it has fully loaded.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from PIL import Image

from .recordfile import VIDEO_NAME, recording_frames

DEMO_VIDEO = "demo.mp4"  # in a demonstration's folder, beside demo.json and its frames


def write_video(
    frames: Iterable[Path | np.ndarray],
    out: Path,
    fps: float,
    size: tuple[int, int] | None = None,
    keyframe_every: int | None = None,
) -> Path:
    """Encode ``frames`` (image files or RGB arrays, in order) into ``out`` at ``fps``.

    Every frame is resized to ``size`` (width, height; default: the first frame's, rounded down to
    even numbers). ``keyframe_every`` frames a keyframe (default: the encoder's), so a reader that
    seeks decodes fewer frames (exported datasets: vabench.export). Written to a temporary file and
    renamed, so ``out`` is whole or absent."""
    import imageio.v2 as imageio  # imageio-ffmpeg provides the encoder binary

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.stem}-", suffix=".mp4", dir=out.parent)
    os.close(fd)
    count = 0
    try:
        writer = imageio.get_writer(
            tmp,
            format="FFMPEG",
            mode="I",
            fps=fps,
            codec="libx264",
            pixelformat="yuv420p",
            macro_block_size=2,
            ffmpeg_log_level="error",
            ffmpeg_params=[
                "-movflags",
                "+faststart",
                "-crf",
                "26",
                *(["-g", str(keyframe_every)] if keyframe_every else []),
            ],
        )
        with writer:
            for frame in frames:
                image = Image.open(frame).convert("RGB") if isinstance(frame, (str, Path)) else Image.fromarray(frame)
                if size is None:
                    size = (image.width // 2 * 2, image.height // 2 * 2)
                if image.size != size:
                    image = image.resize(size, Image.BILINEAR)
                writer.append_data(np.asarray(image))
                count += 1
        if count == 0:
            raise ValueError(f"no frames for {out}")
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def episode_video(folder: Path, fps: float, size: tuple[int, int] | None = None) -> Path | None:
    """``episode.mp4`` of a record folder from its recording views (None when it has none)."""
    frames = recording_frames(folder)
    return write_video(frames, Path(folder) / VIDEO_NAME, fps, size) if frames else None


def demo_video(folder: Path) -> Path:
    """``demo.mp4`` from a demonstration's frames at its frame rate (read from its demo.json). For
    people: models get the frames through the demo tools, never this file."""
    folder = Path(folder)
    meta = json.loads((folder / "demo.json").read_text())
    return write_video([folder / f for f in meta["frames"]], folder / DEMO_VIDEO, meta["fps"])


def read_video(path: Path) -> list[np.ndarray]:
    """Every frame of a video as RGB arrays (for checks: exported datasets, tests)."""
    import imageio.v2 as imageio

    reader = imageio.get_reader(str(path), format="FFMPEG")
    try:
        return [np.asarray(frame) for frame in reader]
    finally:
        reader.close()


def video_info(path: Path) -> dict:
    """Frame count, rate and size of a video (for checks and the review app)."""
    import imageio.v2 as imageio

    reader = imageio.get_reader(str(path), format="FFMPEG")
    try:
        meta = reader.get_meta_data()
        frames = reader.count_frames()
    finally:
        reader.close()
    return {"frames": frames, "fps": meta.get("fps"), "size": tuple(meta.get("size", ())), "codec": meta.get("codec")}
