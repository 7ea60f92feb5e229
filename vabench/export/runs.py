"""Model episodes from a run folder: one clip per attempt whose record has a result
(``_records/<episode key>/attempt<N>/``), its frames the model-facing images in ``frames/`` and
its row the record's ``result`` event, which is the outcome row the driver wrote for that attempt."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from vabench.core.condition import KEYS
from vabench.core.vocab import ControlMode, EndReason, Split, Status
from vabench.envs.control import CONTROL_HZ
from vabench.results.layout import RECORDS, RUN_INFO, read_run_info
from vabench.results.recordfile import EVENTS, FRAMES, Event, read_events

from .clips import Clip, ExportError, columns
from .features import NO_ACTION

ATTEMPT = re.compile(r"attempt(\d+)")
FRAME = re.compile(r"step_(\d+)_(.+)\.(?:jpg|jpeg|png)")
# the outcome row's columns each episode keeps in meta/episodes (with outcome_key and record, to join back)
ROW_COLUMNS = (
    "run_id",
    "condition",
    "model",
    "task",
    "seed",
    "run_index",
    "attempt",
    "protocol",
    *KEYS,  # every condition key (vabench.core.condition)
    "status",
    "success",
    "end_reason",
    "steps",
    "privileged",
)


def is_run(path: Path) -> bool:
    return (Path(path) / RECORDS).is_dir() or (Path(path) / RUN_INFO).is_file()


def run_fps(run: Path, control: str = ControlMode.COMMANDS) -> float | None:
    """The dataset's frame rate of a run's episodes played under ``control``: the paper's commands at
    the run's recording rate (``recording.fps``: the episode videos' one frame per step), control
    steps at their own rate (:data:`~vabench.envs.control.CONTROL_HZ`: a frame is one control period)."""
    if control == ControlMode.EE_DELTA:
        return float(CONTROL_HZ)
    info = read_run_info(run)
    return info.fps if info else None


def run_split(run: Path) -> str:
    """Whose seeds the run played (``eval`` or ``train``; vabench.envs.seeds), as its run info says."""
    info = read_run_info(run)
    return info.split if info else Split.EVAL.value


def attempts(run: Path) -> list[Path]:
    """Every attempt's record folder, in key order (an interrupted attempt's, set aside, is not one)."""
    root = Path(run) / RECORDS
    found = [p.parent for p in root.rglob(EVENTS) if ATTEMPT.fullmatch(p.parent.name)]
    return sorted(found, key=lambda p: (str(p.parent), int(ATTEMPT.fullmatch(p.name).group(1))))


def selected(
    run: Path, where: dict[str, str], unjudged: bool, tasks: tuple[str, ...] = ()
) -> Iterator[tuple[Path, list[dict], dict]]:
    """(record folder, events, row) of each attempt with a result that ``where`` (column -> value, as
    text) and ``tasks`` (when named) select; unjudged attempts (infra_error) only when asked."""
    for folder in attempts(run):
        events = read_events(folder / EVENTS)
        row = next((e for e in reversed(events) if e.get("type") == Event.RESULT), None)
        if row is None or (row.get("status") != Status.OK and not unjudged):
            continue
        if all(str(row.get(k)) == v for k, v in where.items()) and (not tasks or row.get("task") in tasks):
            yield folder, events, row


def record_clip(run: Path, folder: Path, events: list[dict], row: dict) -> Clip:
    """The clip of one attempt's record."""
    where = folder.relative_to(run).as_posix()
    images = _frames(folder, where)
    start = next((e for e in events if e.get("type") == Event.EPISODE_START), None)
    if start is None:
        raise ExportError(f"{where} has no episode_start event")
    steps = len(next(iter(images.values())))
    states = {e["step"]: e for e in events if e.get("type") == Event.STATE}
    actions = {e["step"]: e for e in events if e.get("type") == Event.ACTION}
    ending = EndReason.STOP if row.get("end_reason") == EndReason.STOP else NO_ACTION
    control = row.get("control") or ControlMode.COMMANDS  # a row written before the key: the paper's commands
    table, dof = columns(states, actions, steps, ending, tuple(start["arms"]), where, control)
    key = folder.parent.relative_to(Path(run) / RECORDS).as_posix()
    meta = {**{c: row.get(c) for c in ROW_COLUMNS}, "outcome_key": key, "record": f"{where}/{EVENTS}"}  # split: a key
    return Clip(start["instruction"], images, table, meta, dof, row.get("robot") or "", str(control))


def _frames(folder: Path, where: str) -> dict[str, list[Path]]:
    """view -> the model-facing image of every observation, in step order (steps 0..n-1, every view
    at every step, as the harness saves them)."""
    by_view: dict[str, dict[int, Path]] = {}
    for path in (folder / FRAMES).iterdir() if (folder / FRAMES).is_dir() else ():
        m = FRAME.fullmatch(path.name)
        if m and path.is_file():
            by_view.setdefault(m.group(2), {})[int(m.group(1))] = path
    if not by_view:
        raise ExportError(f"{where} has no model-facing frames (frames/); a bundle packed without them cannot export")
    steps = sorted(next(iter(by_view.values())))
    for view, frames in by_view.items():
        if sorted(frames) != steps or steps != list(range(len(steps))):
            raise ExportError(f"{where}: the {view} frames do not cover steps 0..{len(steps) - 1} once each")
    return {view: [frames[s] for s in steps] for view, frames in sorted(by_view.items())}
