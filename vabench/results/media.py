"""Videos from stored frames: H.264 mp4 encoded in-process by PyAV (libx264); read back through
imageio and the ffmpeg binary its wheel carries.

Used for episode videos (from the recording views), demonstration videos (from the demo frames)
and the review app's ``videos`` command. Browsers play what this writes: yuv420p, even sizes,
the index at the front (``+faststart``) so a video starts before it has fully loaded.
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from collections.abc import Iterable
from fractions import Fraction
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

    Every frame is resized to ``size`` (width, height; default: the first frame's), rounded down to
    even numbers. ``keyframe_every`` frames a keyframe (default: the encoder's), so a reader that
    seeks decodes fewer frames (exported datasets: vabench.export). Encoded in this process (PyAV's
    libx264): an encoder process per video cost about 60 ms of CPU an episode more. Written to a
    temporary file and renamed, so ``out`` is whole or absent."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.stem}-", suffix=".mp4", dir=out.parent)
    os.close(fd)
    try:
        images = (Image.open(f).convert("RGB") if isinstance(f, str | Path) else Image.fromarray(f) for f in frames)
        first = next(images, None)
        if first is None:
            raise ValueError(f"no frames for {out}")
        width, height = size or first.size
        size = (width // 2 * 2, height // 2 * 2)  # H.264 in yuv420p takes even sizes only
        _encode(itertools.chain([first], images), tmp, fps, size, keyframe_every)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def _encode(images: Iterable[Image.Image], path: str, fps: float, size: tuple[int, int], gop: int | None) -> None:
    """H.264 (CRF 26, yuv420p) in mp4 with the index at the front (``+faststart``)."""
    import av

    with av.open(path, "w", format="mp4", options={"movflags": "+faststart"}) as container:
        stream = container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1001))
        stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv420p"
        stream.options = {"crf": "26"}
        if gop:
            stream.codec_context.gop_size = gop
        for image in images:
            if image.size != size:
                image = image.resize(size, Image.BILINEAR)
            container.mux(stream.encode(av.VideoFrame.from_image(image)))
        container.mux(stream.encode())


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
