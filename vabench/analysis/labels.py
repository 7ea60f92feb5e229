"""Annotation labels (paper C.9): the one definition of the label format, its rubric, and its files.

Labels live in a run folder as ``_annotations/<annotator>.jsonl``, append-only, one JSON object
per save::

    {"record": "<the outcome row's record path>", "annotator": "ann1", "time": "<ISO-8601>",
     "gates": {"error": true|false|null, "ambiguity": true|false|null},
     "labels": {"TL": 0|1|null, ..., "PF": 0|1|null}, "notes": "",
     "steps": {"TL": 3, ...}}

``steps`` (optional, left out when empty) names the env step each 0/1 label rests on; a judge
(``vabench.judge``) writes it, people may. An annotator whose name starts with :data:`JUDGE_PREFIX`
is a judge, not a person (:func:`is_judge`).

The latest line per (annotator, record) is that annotator's judgment; null means not applicable
or not yet judged. The review app writes these files (:func:`append`); the analysis reads them
(:func:`read`, :func:`latest`). Nothing here imports the simulator.
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from vabench.core.errors import NotFound, VabenchError
from vabench.results.layout import ANNOTATIONS

CRITERIA = ("TL", "AE", "SR", "MS", "MP", "FG", "ED", "OC", "PF")
MODULES = {"SPU": ("TL", "AE", "SR"), "RM": ("MS", "MP", "FG"), "ER": ("ED", "OC", "PF")}
GATES = ("error", "ambiguity")
GATED = {"ED": "error", "OC": "error", "PF": "error", "AE": "ambiguity"}  # others: always applicable
RUBRIC = {  # C.9.2-C.9.4, one line each (what a positive label means)
    "TL": ("Target localisation", "Motion and views are directed at the task-relevant object, not a distractor."),
    "AE": (
        "Informative exploration",
        "A view is chosen for an ambiguity, it exposes the fact, and later actions use it.",
    ),
    "SR": (
        "Spatial relations",
        "Moves reduce the visible gripper-object offset; contact/grasp/release at a plausible pose.",
    ),
    "MS": ("Manipulation semantics", "Purposeful use of translations, rotations, aperture and dual-arm commands."),
    "MP": ("Manipulation planning", "Coherent phase order (approach, align, grasp, lift, carry, place, release)."),
    "FG": (
        "Fine pre-contact analysis",
        "Task-specific checks of fingertip placement, orientation, height before contact.",
    ),
    "ED": (
        "Error detection",
        "After an observable error it stops treating the action as successful (re-view, recheck).",
    ),
    "OC": ("Online correction", "It corrects a developing deviation before it becomes an explicit failure."),
    "PF": (
        "Post-failure adjustment",
        "After a failure it retries with a materially revised view, estimate or approach.",
    ),
}
GATE_TEXT = {
    "error": "The episode contains an observable execution error (miss, drop, planner rejection, unstable placement).",
    "ambiguity": "Some task-relevant geometric fact is underdetermined from the current view (assessable ambiguity).",
}
JUDGE_PREFIX = "judge-"  # judge-<model>-<sample>: a model's (or the proxies') labels, never a person's
ANNOTATOR_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
NOTES_MAX = 4000


class LabelError(VabenchError, ValueError):
    """A label object that does not follow the format; the message names the field."""


def _flag(value, field: str, allowed: tuple, what: str):
    if value is None or (type(value) in (type(a) for a in allowed if a is not None) and value in allowed):
        return value
    raise LabelError(f"{field} must be {what}, got {value!r}")


def validate(obj, now: datetime | None = None) -> dict:
    """A normalised copy of a label object, or :class:`LabelError` naming the bad field.

    ``time`` is set here (the server's clock) when ``now`` is given; unknown fields are refused so
    a typo never silently drops a judgment."""
    if not isinstance(obj, dict):
        raise LabelError(f"a label must be a JSON object, got {type(obj).__name__}")
    unknown = set(obj) - {"record", "annotator", "time", "gates", "labels", "notes", "steps"}
    if unknown:
        raise LabelError(
            f"unknown field(s) {', '.join(sorted(unknown))}; allowed: record, annotator, time, gates, labels, notes, "
            "steps"
        )
    record, annotator = obj.get("record"), obj.get("annotator")
    if not isinstance(record, str) or not record or record.startswith("/") or ".." in Path(record).parts:
        raise LabelError(f"record must be a relative record path inside the run folder, got {record!r}")
    if not isinstance(annotator, str) or not ANNOTATOR_RE.fullmatch(annotator):
        raise LabelError(f"annotator must match {ANNOTATOR_RE.pattern} (letters, digits, _ . -), got {annotator!r}")
    gates, labels, notes = obj.get("gates", {}), obj.get("labels", {}), obj.get("notes", "")
    if not isinstance(gates, dict) or set(gates) - set(GATES):  # never `or {}`: a 0 or [] is an error, not "none"
        raise LabelError(f"gates must be an object with keys among {', '.join(GATES)}, got {gates!r}")
    if not isinstance(labels, dict) or set(labels) - set(CRITERIA):
        raise LabelError(f"labels must be an object with keys among {', '.join(CRITERIA)}, got {labels!r}")
    if not isinstance(notes, str) or len(notes) > NOTES_MAX:
        raise LabelError(f"notes must be a string of at most {NOTES_MAX} characters")
    steps = _steps(obj.get("steps", {}))
    if now is not None:
        time = now.astimezone(UTC).isoformat(timespec="milliseconds")
    else:
        time = obj.get("time")
        try:
            datetime.fromisoformat(time)
        except (TypeError, ValueError):
            raise LabelError(f"time must be an ISO-8601 timestamp, got {time!r}") from None
    return {
        "record": record,
        "annotator": annotator,
        "time": time,
        "gates": {g: _flag(gates.get(g), f"gates.{g}", (True, False), "true, false or null") for g in GATES},
        "labels": {c: _flag(labels.get(c), f"labels.{c}", (0, 1), "0, 1 or null") for c in CRITERIA},
        "notes": notes,
        **({"steps": steps} if steps else {}),
    }


def _steps(steps) -> dict:
    """``steps`` without its nulls: criterion -> a step number >= 0."""
    if not isinstance(steps, dict) or set(steps) - set(CRITERIA):
        raise LabelError(f"steps must be an object with keys among {', '.join(CRITERIA)}, got {steps!r}")
    for c, k in steps.items():
        if k is not None and (type(k) is not int or k < 0):
            raise LabelError(f"steps.{c} must be a step number >= 0 or null, got {k!r}")
    return {c: steps[c] for c in CRITERIA if steps.get(c) is not None}


def judge_annotator(model: str, sample: int) -> str:
    """The annotator name of a judge's sample: ``judge-<model>-<k>``, the model's name with every
    character a name may not hold as ``_`` (``openai/gpt-4o`` -> ``judge-openai_gpt-4o-1``)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", model)[: 64 - len(JUDGE_PREFIX) - 4]
    return f"{JUDGE_PREFIX}{name}-{sample}"


def is_judge(annotator: str) -> bool:
    return annotator.startswith(JUDGE_PREFIX)


def judge_of(annotator: str) -> str:
    """The judge an annotator is a sample of (``judge-openai_gpt-4o-2`` -> ``judge-openai_gpt-4o``)."""
    return annotator.rsplit("-", 1)[0] if is_judge(annotator) else annotator


def append(run_folder: Path, label: dict) -> dict:
    """Validate ``label``, stamp it with the current time and append it to its annotator's file.

    One ``write`` of one line on a file opened for appending, then fsync: a crash leaves at most a
    torn last line, which :func:`read` skips."""
    line = validate(label, now=datetime.now(UTC))
    folder = Path(run_folder) / ANNOTATIONS
    folder.mkdir(exist_ok=True)
    fd = os.open(folder / f"{line['annotator']}.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return line


def files(*sources: Path) -> list[Path]:
    """Label files from run folders (their ``_annotations/*.jsonl``), folders of label files, or files."""
    out: list[Path] = []
    for source in map(Path, sources):
        if source.is_file():
            out.append(source)
        elif (source / ANNOTATIONS).is_dir():
            out += sorted((source / ANNOTATIONS).glob("*.jsonl"))
        elif source.is_dir():
            out += sorted(source.glob("*.jsonl"))
        else:
            raise NotFound(f"no label file or folder at {source}")
    return out


COLUMNS = [
    "record", "annotator", "time", *(f"gate_{g}" for g in GATES), *CRITERIA, "notes", "steps", "source", "run", "line",
]  # fmt: skip


def read(*sources: Path) -> pd.DataFrame:
    """Every valid saved line of the label files, one row each (``gate_error``, ``gate_ambiguity``,
    one column per criterion with 0/1/<NA>, ``notes``, ``steps`` (criterion -> cited step, ``{}`` when
    none); ``source`` file, ``line`` number in it, and
    ``run``, the run folder whose ``_annotations/`` holds the file, or "" for a loose file). Invalid
    or torn lines are skipped and counted in ``attrs['skipped']``; a line that is JSON but breaks the
    format (an unknown criterion, a bad value) is also named in ``attrs['invalid']`` as
    ``file:line: why``, so it is never dropped silently."""
    rows, skipped, invalid = [], 0, []
    for path in files(*sources):
        run = str(path.parent.parent) if path.parent.name == ANNOTATIONS else ""
        for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                line = validate(json.loads(raw))
            except (json.JSONDecodeError, LabelError) as e:
                skipped += int(bool(raw.strip()))
                if isinstance(e, LabelError):
                    invalid.append(f"{path}:{number}: {e}")
                continue
            rows.append(
                {
                    "record": line["record"],
                    "annotator": line["annotator"],
                    "time": line["time"],
                    **{f"gate_{g}": line["gates"][g] for g in GATES},
                    **line["labels"],
                    "notes": line["notes"],
                    "steps": line.get("steps", {}),
                    "source": str(path),
                    "run": run,
                    "line": number,
                }
            )
    df = pd.DataFrame(rows, columns=COLUMNS)
    for c in CRITERIA:
        df[c] = df[c].astype("Int8")
    for g in GATES:
        df[f"gate_{g}"] = df[f"gate_{g}"].astype("boolean")
    df.attrs["skipped"], df.attrs["invalid"] = skipped, invalid
    return df


def latest(*sources: Path) -> pd.DataFrame:
    """Each annotator's current judgment: the last saved line per (run folder, annotator, record).

    Line order, not the clock, decides (the files are append-only; a clock set back must not bring
    back an older judgment); the run folder keeps two runs' episodes with the same record path apart."""
    df = read(*sources)
    attrs = dict(df.attrs)
    df = df.drop_duplicates(["run", "annotator", "record"], keep="last")
    df = df.sort_values(["run", "record", "annotator"], kind="stable").reset_index(drop=True)
    df.attrs = attrs
    return df


def to_csv(df: pd.DataFrame, path: Path | None = None) -> str:
    """The label table as CSV (the app's and the CLI's export); ``steps`` as JSON text ("" when none)."""
    df = df.drop(columns=["source", "run", "line"], errors="ignore")
    if "steps" in df:
        df = df.assign(steps=df["steps"].map(lambda s: json.dumps(s) if isinstance(s, dict) and s else ""))
    text = df.to_csv(index=False)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text
