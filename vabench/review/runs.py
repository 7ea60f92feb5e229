"""What the review app reads from a run folder: the outcome table, an episode's record as a
timeline, and files, every path resolved inside the run folder.

Read-only: nothing here writes (labels go through :mod:`vabench.analysis.labels`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from vabench.core.condition import KEYS
from vabench.core.errors import VabenchError
from vabench.results.layout import read_run_info
from vabench.results.outcometable import refresh, run_folders, to_pandas
from vabench.results.recordfile import ENDINGS, EVENTS, VIDEO_NAME, Event, read_events, recording_frames

TABLE_COLUMNS = [  # the run page's columns, in order (all from the outcome schema)
    "model", "protocol", "summary_source", "task", "arms", "seed", "run_index", "status", "success", "end_reason",
    "steps", "budget", "checkpoints_done", "checkpoints_total", "objects_placed", "camera_actions",
    "camera_chain_over", "invalid_actions", "planner_failures", "repairs", "cost_usd", "wall_s", "condition", "track",
    *KEYS, "privileged", "record",
]  # fmt: skip


class NotInRun(VabenchError, LookupError):
    """A path outside the run folder, or nothing there."""


def inside(root: Path, rel: str) -> Path:
    """``root/rel`` if it stays inside ``root`` after resolving links and ``..``; else NotInRun."""
    if not rel or "\x00" in rel or Path(rel).is_absolute():
        raise NotInRun(f"not a path inside the run folder: {rel!r}")
    root = root.resolve()
    path = (root / rel).resolve()
    if not path.is_relative_to(root):
        raise NotInRun(f"not a path inside the run folder: {rel!r}")
    return path


def outcomes(root: Path, stats: dict | None = None) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """One row per episode of a run folder, from its outcome table (:mod:`vabench.results.outcometable`,
    checked against the episode files), and the episode files that could not be read, set aside
    or not (:mod:`vabench.results.unreadable`; path relative to the run folder, reason): the run is shown
    without them, with a note naming them."""
    got = refresh(root, stats=stats)
    df = to_pandas(got.rows)
    order = ["model", "protocol", "task", "seed", "run_index"]
    return df.sort_values(order, kind="stable").reset_index(drop=True), got.unreadable + got.set_aside


def expand_folders(folders: list[Path]) -> list[Path]:
    """Each folder given as the run folders it holds: a run folder is itself, a folder of runs
    (a results folder) its runs; a folder with neither stays (a run whose episodes are to come)."""
    out: list[Path] = []
    for folder in folders:
        found = run_folders(folder) if folder.is_dir() else []
        out += [p.resolve() for p in found] or [folder.resolve()]
    return list(dict.fromkeys(out))


def jsonable_rows(df: pd.DataFrame) -> list[dict]:
    """The table's rows as JSON-ready dicts (NaN and NA become null)."""
    rows = []
    for raw in df[TABLE_COLUMNS].to_dict(orient="records"):
        row = {}
        for key, value in raw.items():
            if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
                value = None
            elif hasattr(value, "item"):
                value = value.item()
            row[key] = value
        rows.append(row)
    return rows


@dataclass
class Step:
    """One decision point: the observation sent at step ``index``, the model exchange about it,
    the action it led to and the evaluator's state afterwards."""

    index: int
    observation: dict | None = None  # the turn event: text and images as sent
    exchange: list[dict] = field(default_factory=list)  # request, reply, rejected, decision, tool_result, turns
    action: dict | None = None
    state: dict | None = None  # after the action (its recording view)


@dataclass
class Episode:
    record: str  # the outcome row's record path (events.jsonl) relative to the run folder
    folder: str  # the record's folder relative to the run folder
    start: dict
    system: str
    initial: dict | None  # the state after reset
    steps: list[Step]
    result: dict | None
    end: list[dict]  # stop, crash, timeout, interrupted events
    video: str | None
    poster: str | None = None  # the video's first frame as an image (shown before it plays)

    @property
    def checkpoints(self) -> dict:
        actions = [s.action for s in self.steps if s.action]
        return actions[-1].get("checkpoints", {}) if actions else {}

    @property
    def final_state(self) -> dict | None:
        states = [s.state for s in self.steps if s.state]
        return states[-1] if states else self.initial


EXCHANGE = {
    Event.REQUEST,
    Event.REPLY,
    Event.ANSWER,
    Event.REJECTED,
    Event.DECISION,
    Event.TOOL_RESULT,
    Event.MODEL_ERROR,
    Event.COMPACTION,
}


def episode(root: Path, record: str, events: list[dict] | None = None) -> Episode:
    """The timeline of the episode whose events are at ``record`` (inside ``root``); ``events``:
    the record's events when the caller has read them already (the results site)."""
    path = inside(root, record)
    if path.name != EVENTS or not path.is_file():
        raise NotInRun(f"no episode record at {record!r}")
    events = read_events(path) if events is None else events
    folder = path.parent.relative_to(root.resolve()).as_posix()
    steps: dict[int, Step] = {}

    def at(i: int) -> Step:
        return steps.setdefault(i, Step(i))

    start, system, initial, result, end = {}, "", None, None, []
    for e in events:
        kind, i = e.get("type"), int(e.get("step") or 0)
        if kind == Event.EPISODE_START:
            start = e
        elif kind == Event.TURN and e.get("kind") == "system":
            system = e.get("text", "")
        elif kind == Event.TURN and e.get("kind") == "observation":
            at(i).observation = e
        elif kind == Event.TURN or kind in EXCHANGE:
            at(i).exchange.append(e)
        elif kind == Event.ACTION:
            at(i - 1).action = e
        elif kind == Event.STATE:
            if i == 0 and initial is None:
                initial = e
            else:
                at(i - 1).state = e
        elif kind == Event.RESULT:
            result = e
        elif kind in ENDINGS:
            end.append(e)
    video = f"{folder}/{VIDEO_NAME}" if (path.parent / VIDEO_NAME).is_file() else None
    frames = recording_frames(path.parent) if video else []
    poster = f"{folder}/{frames[0].relative_to(path.parent).as_posix()}" if frames else None
    timeline = [steps[k] for k in sorted(steps)]
    return Episode(record, folder, start, system, initial, timeline, result, end, video, poster)


def overview(root: Path, df: pd.DataFrame, unreadable: list) -> dict:
    """A run on the index page: its models, conditions, counts, success and date."""
    judged = df[df["status"] == "ok"]
    wins = int(judged["success"].astype("boolean").fillna(False).sum())
    info = read_run_info(root)
    date = str(info.written_at)[:16].replace("T", " ") if info else ""
    return {
        "name": root.name,
        "path": str(root),
        "models": sorted(set(df["model"].dropna())),
        "conditions": sorted(set(df["condition"].dropna())),
        "episodes": len(df),
        "judged": len(judged),
        "wins": wins,
        "rate": f"{100 * wins / len(judged):.1f}%" if len(judged) else "–",
        "infra": int((df["status"] != "ok").sum()),
        "unreadable": len(unreadable),
        "date": date,
    }
