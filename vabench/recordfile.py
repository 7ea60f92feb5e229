"""The on-disk layout of an episode record, shared by the harness that writes it and everything
that reads it (the review app, the diagnostic proxies, replay): one place for the names and for
reading the event log.

A record folder holds ``events.jsonl`` (append-only, one JSON object per line), ``frames/`` (the
model-facing images as sent), ``recording/step_NNN.jpg`` (the evaluator's recording views, never
sent to a model) and ``episode.mp4`` (made from the recording views).
"""

from __future__ import annotations

import json
from pathlib import Path

EVENTS = "events.jsonl"
RECORDING = "recording"
VIDEO_NAME = "episode.mp4"


def read_events(path: Path) -> list[dict]:
    """All events of a record; a torn last line (a crash mid-write) or a line that is not a JSON
    object is skipped."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            out.append(event)
    return out


def recording_frames(folder: Path) -> list[Path]:
    """The recording views of a record folder, in step order."""
    return sorted((Path(folder) / RECORDING).glob("step_*.jpg"))
