"""Episode records: an append-only JSONL event log and the model-facing frames.

Events are written one line at a time and flushed, so a crash keeps everything up to the crash.
Requests are logged with image file references, never image bytes; keys never reach a record
(the model layer reads them from the environment at call time and nothing here sees them).
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from PIL import Image

from vabench.core.errors import PathTaken, VabenchError
from vabench.results.recordfile import FRAMES, RECORDING, Event, checked, read_events

__all__ = ["RECORD_FORMAT", "EpisodeRecord", "RecordComplete", "read_events", "result_of", "set_aside"]

RECORD_FORMAT = "vabench.episode_record.v1"


class EpisodeRecord:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.frames = self.root / FRAMES
        self.frames.mkdir(parents=True, exist_ok=True)
        self.path = self.root / "events.jsonl"
        try:  # one record per episode: a second episode in the same folder would corrupt replay
            self._file = self.path.open("x", encoding="utf-8")
        except FileExistsError:
            raise PathTaken(f"{self.path} already holds an episode record; use a new folder") from None
        self._seq = 0

    def event(self, kind: Event, /, **data) -> None:
        """Append one event: ``data`` are the fields of ``kind``'s dataclass
        (:data:`vabench.results.recordfile.FIELDS`), written in the order given; an undeclared kind, an
        unknown or a missing field is an error here, before anything is written."""
        kind = checked(kind, data)
        self._seq += 1
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        line = {"seq": self._seq, "time": now, "type": kind, **data}
        self._file.write(json.dumps(line, default=_jsonable) + "\n")  # ASCII: lone surrogates cannot break it
        self._file.flush()

    def save_frame(self, step: int, name: str, rgb: np.ndarray, encoding) -> Path:
        """Store a model-facing frame as the bytes it is sent as (``encoding``: the render preset's
        :class:`vabench.envs.render.Encoding` for the protocol)."""
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:60]
        path = self.frames / f"step_{step:03d}_{safe}{encoding.suffix}"
        path.write_bytes(encoding.encode(rgb))
        return path

    def save_recording(self, step: int, rgb: np.ndarray, quality: int = 85) -> Path:
        """Store the evaluator's recording view of a step (D.4: apart from the model's frames)."""
        folder = self.root / RECORDING
        folder.mkdir(exist_ok=True)
        path = folder / f"step_{step:03d}.jpg"
        Image.fromarray(rgb).save(path, "JPEG", quality=quality)
        return path

    def keep(self, path: Path) -> Path:
        """A copy inside this record of an image shown to the model (e.g. a demo frame from the cache)."""
        path = Path(path)
        if path.is_relative_to(self.root):
            return path
        copy = self.frames / "shown" / f"{path.parent.name}_{path.name}"
        if not copy.exists():
            copy.parent.mkdir(exist_ok=True)
            shutil.copyfile(path, copy)
        return copy

    def rel(self, path: Path) -> str:
        return str(Path(path).relative_to(self.root))

    def interrupted(self, exc: BaseException, wall_s: float) -> None:
        """Close the record of an episode that ends without a result (Ctrl-C, exit): it says so."""
        self.event(Event.INTERRUPTED, error=type(exc).__name__, wall_s=round(wall_s, 3))
        self.close()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


class RecordComplete(VabenchError, FileExistsError):
    """A record whose attempt completed (it holds a ``result`` event) is never set aside or renamed:
    its row is the result (:mod:`vabench.run.folder.recover`), and rows point at it by name."""


def result_of(folder: Path) -> dict | None:
    """The ``result`` event of the record in ``folder``: None where there is no record, or its
    attempt never completed (cut short by Ctrl-C, a kill, a cost limit)."""
    path = Path(folder) / "events.jsonl"
    if not path.is_file():
        return None
    return next((e for e in reversed(read_events(path)) if e.get("type") == Event.RESULT), None)


def set_aside(folder: Path) -> Path | None:
    """Move a stale record folder (an attempt its driver never finished: Ctrl-C, kill -9) to
    ``<name>.interrupted-<n>`` and return where it went, or None when there is none. The attempt is
    run again in a fresh folder: an interruption is not a failure of the episode, and the old
    events stay for inspection (readers of outcome rows never look at them). A record whose attempt
    completed is refused (:class:`RecordComplete`): it was not interrupted."""
    folder = Path(folder)
    if not folder.exists():
        return None
    if result_of(folder) is not None:
        raise RecordComplete(f"{folder} holds a completed attempt's record (a result event): it is never set aside")
    n = 1
    while folder.with_name(f"{folder.name}.interrupted-{n}").exists():
        n += 1
    return folder.rename(folder.with_name(f"{folder.name}.interrupted-{n}"))  # one driver per run folder: no race


def _jsonable(value):
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
