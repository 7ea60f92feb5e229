"""What ``verify`` compares: a row against its own record (the record's digest, the ``result``
event the harness wrote beside the row), and an original episode against its re-simulation (the
judged columns, the simulation-side events in order, the final evaluator state). Plain data in,
one-line reasons out."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from vabench.core.vocab import Status
from vabench.results.outcomes import COLUMNS
from vabench.results.recordfile import FRAMES, Event, frames_index, read_events, record_digest

# the row's columns a re-simulation must reproduce (what was judged and what the episode did)
JUDGED = (
    "status",
    "success",
    "end_reason",
    "steps",
    "camera_actions",
    "robot_actions",
    "invalid_actions",
    "planner_failures",
    "repairs",
    "tool_calls",
    "checkpoints_done",
    "checkpoints_total",
    "objects_placed",
)
# the events that say what the simulation did (what the model saw and said is the replayed input)
SIM_EVENTS = (Event.DECISION, Event.REJECTED, Event.TOOL_RESULT, Event.ACTION, Event.STATE, Event.STOP)
VOLATILE = ("seq", "time", "recording")  # differ between any two runs of the same episode
ADDED = ("robot",)  # state event fields added after some records were written: compared where the original has them


def plain(value):
    """A row value as JSON has it (null for NA/NaN, Python scalars)."""
    if hasattr(value, "item"):
        value = value.item()
    try:
        if value is None or (not isinstance(value, str | bool) and math.isnan(value)):
            return None
    except TypeError:  # pd.NA and friends
        return None
    return value


def sim_events(events: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k not in VOLATILE} for e in events if e.get("type") in SIM_EVENTS]


def state_digest(events: list[dict]) -> str | None:
    """Digest of the last evaluator state (bodies, contacts, arms) of a record; None without one."""
    states = [e for e in sim_events(events) if e["type"] == Event.STATE]
    if not states:
        return None
    return hashlib.sha256(json.dumps(states[-1], sort_keys=True).encode()).hexdigest()[:16]


def first_difference(a: list[dict], b: list[dict]) -> str | None:
    """The first simulation event where two records part: its type, step and first differing key."""
    sa, sb = sim_events(a), sim_events(b)
    for n, (x, y) in enumerate(zip(sa, sb, strict=False)):
        if x != y:
            key = next((k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)), "?")
            was, now = _short(x.get(key)), _short(y.get(key))
            return f"event {n + 1} ({x.get('type')}, step {x.get('step')}): {key} {was} -> {now}"
    if len(sa) != len(sb):
        return f"{len(sa)} simulation events recorded, {len(sb)} re-simulated"
    return None


def as_recorded(events: list[dict], new_events: list[dict]) -> list[dict]:
    """The re-simulation's events without the state fields (``ADDED``) that the original record predates."""
    had = {k for e in events if e.get("type") == Event.STATE for k in e}
    drop = [k for k in ADDED if k not in had]
    if not drop:
        return new_events
    return [{k: v for k, v in e.items() if e.get("type") != Event.STATE or k not in drop} for e in new_events]


def _short(value, n: int = 80) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= n else text[: n - 3] + "..."


def check_record(run_dir: Path, row: dict) -> tuple[list[str], list[dict]]:
    """A row against its record: the record exists, its digest is the row's, and its ``result``
    event is the row (so a flipped or copied row shows even where the physics agrees). Returns
    the reasons it does not hold, each naming the file, column and frame, and the record's events."""
    rel = plain(row.get("record"))
    if rel is None and row.get("status") == Status.INFRA_ERROR:
        return [], []  # an episode that never ran (a lost worker, no summary): nothing recorded, nothing judged
    path = Path(run_dir) / rel if rel else None
    if path is None or not path.is_file():
        return [f"its record {rel} is missing"], []
    events, reasons = read_events(path), []
    expected, actual = plain(row.get("record_digest")), record_digest(path.parent)
    if expected is None:
        reasons.append("the row has no record_digest (written before schema 6)")
    elif expected != actual:
        why = "; ".join(frame_differences(path.parent, events)) or "an event line or a frame's content changed"
        reasons.append(f"{Path(rel).parent.as_posix()}: record digest {actual} != the row's {expected}: {why}")
    result = recorded_result(events)
    if result is None:
        return reasons + [f"{rel} has no result event"], events
    # the record's row names its events file inside the record; the run's row, inside the run folder; a
    # rescored row keeps its source's identity and usage, and only its judged columns are the record's
    columns = (*JUDGED, "record_digest") if plain(row.get("rescored_from")) else COLUMNS
    differ = [c for c in columns if c != "record" and plain(row.get(c)) != plain(result.get(c))]
    if differ:
        shown = ", ".join(
            f"{c} {_short(plain(row.get(c)), 30)} (record: {_short(result.get(c), 30)})" for c in differ[:4]
        )
        more = f" and {len(differ) - 4} more columns" if len(differ) > 4 else ""
        where = f"outcomes/{row['_file']}" if row.get("_file") else "the row"
        reasons.append(f"{where} differs from the result event of {rel}: {shown}{more}")
    return reasons, events


def recorded_result(events: list[dict]) -> dict | None:
    """The record's own row (its last ``result`` event), or None."""
    return next((e for e in reversed(events) if e.get("type") == Event.RESULT), None)


def frame_differences(folder: Path, events: list[dict]) -> list[str]:
    """The model-facing frames that make a record's digest differ, as far as its events tell:
    a frame an event names that is gone, a frame no event names. A frame or an event line edited
    in place cannot be told apart: the record keeps one digest over both."""
    named: dict[str, dict] = {}
    for e in events:
        for image in e.get("images") or []:
            if isinstance(image, str) and image.startswith(f"{FRAMES}/"):
                named.setdefault(image, e)
    present = set(frames_index(folder))
    out = [
        f"{name} is missing (shown at step {e.get('step')}, {e.get('type')} event {e.get('seq')})"
        for name, e in sorted(named.items())
        if name not in present
    ]
    return out + [f"{name} is named by no event" for name in sorted(present - set(named))]


def compare(row: dict, events: list[dict], new_row: dict, new_events: list[dict]) -> list[str]:
    """An original episode against its re-simulation: the judged columns, the final evaluator
    state, and the first event where the two part (leaving out what the original record predates).
    ``row``: the episode as recorded (its record's result event; a row edited since is the row
    check's finding, not counted twice)."""
    new_events = as_recorded(events, new_events)
    reasons = [
        f"{c} {_short(plain(row.get(c)), 30)} -> {_short(plain(new_row.get(c)), 30)}"
        for c in JUDGED
        if plain(row.get(c)) != plain(new_row.get(c))
    ]
    if state_digest(events) != state_digest(new_events):
        reasons.append(f"final evaluator state {state_digest(events)} -> {state_digest(new_events)}")
    first = first_difference(events, new_events)
    if first:
        reasons.append(f"first differing event: {first}")
    if new_row.get("error") and plain(row.get("error")) != new_row.get("error"):
        reasons.append(f"re-simulation error: {new_row['error'][:160]}")
    return reasons
