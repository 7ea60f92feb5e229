"""The run folder's layout, declared once: the names of its files and folders, and its run info
(``RUN_INFO``) read and written as a typed :class:`RunInfo`.

It sits low in the import graph (beside :mod:`vabench.results.outcomes` and :mod:`vabench.results.recordfile`) so
that every reader of run folders (analysis, review, site, export, verify) may name the folder's
parts without importing run-level code. A run folder holds::

    RUN_INFO             the resolved config, versions, prompts, provenance (RunInfo)
    outcomes/            one Parquet row per episode (the truth; vabench.results.outcomes)
    _outcomes.parquet    every row in one file, kept true to outcomes/ (vabench.results.outcometable)
    _records/            each attempt's record (vabench.results.recordfile)
    _provenance/         every provenance manifest the rows name, by digest
    _cache/              the response cache's replies, per episode (vabench.agents.models.cache)
    _learning/           summary learnings' records
    _annotations/        reviewers' labels (vabench.analysis.labels), a judge's among them
    _judge/              the judge's own files: its usage rows, calibration subsets (vabench.judge)
    _driver.lock         one driver per run folder (vabench.run.folder.lock)

Every name but ``outcomes`` starts with ``_``, which Parquet dataset discovery skips.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vabench.core.errors import VabenchError
from vabench.core.vocab import Split

RUN_INFO = "_run.json"
OUTCOMES = "outcomes"
OUTCOME_TABLE = "_outcomes.parquet"
RECORDS = "_records"
PROVENANCE = "_provenance"  # <run folder>/_provenance/<digest>.json: every manifest the rows name
CACHE = "_cache"  # <run folder>/_cache/<episode key>/<request digest>.json
LEARNING = "_learning"  # <run folder>/_learning/<task>/<time>/: a summary learning's record
ANNOTATIONS = "_annotations"
JUDGE = "_judge"  # <run folder>/_judge/usage.parquet, calibration.csv (vabench.judge)
CALIBRATION = "calibration.csv"  # <run folder>/_judge/calibration.csv: the episodes people should label first
DRIVER_LOCK = "_driver.lock"
SUMMARIES = "_summaries"  # <results_dir>/_summaries/<render>/: the shared store (an old run keeps its own)


class UnreadableRunInfo(VabenchError, ValueError):
    """A run info file that is not a JSON object with a ``run_id`` (named, with the reason)."""


@dataclass(frozen=True, kw_only=True)
class RunInfo:
    """What the run info file holds. Fields in the order the file lists them; a key this code does not
    know (written by older or newer code) is kept in ``other`` and written back after them, and a
    key older code did not write yet reads as its default, so old run folders keep verifying."""

    run_id: str
    experiment: str | None = None
    config: dict = field(default_factory=dict)  # the resolved config, as the run validated it
    summary_root: str | None = None  # the summary store this run read
    versions: dict = field(default_factory=dict)  # package -> version (None: not installed)
    prompt_version: str | None = None
    prompt_digest: str | None = None
    interventions: list = field(default_factory=list)  # each in force, with its input manifest
    written_at: str = ""  # %Y-%m-%dT%H:%M:%S%z, when the driver started
    provenance: dict | None = None  # the provenance manifest (vabench.run.folder.provenance)
    provenance_digest: str | None = None
    rescored_from: str | None = None  # the run folder a rescore re-simulated (absent otherwise)
    other: dict[str, Any] = field(default_factory=dict)

    @property
    def split(self) -> str:
        """Whose seeds the run played: ``eval`` (the evaluation manifests; every run before the
        training split) or ``train`` (vabench.envs.seeds' training split), as its config says."""
        return str(self.config.get("split") or Split.EVAL)

    @property
    def fps(self) -> float | None:
        """The run's ``recording.fps`` (its episode videos' frame rate), None where the config has none."""
        try:
            return float(self.config["recording"]["fps"])
        except (KeyError, TypeError, ValueError):
            return None

    def to_json(self) -> dict:
        """The file's object: every field (``rescored_from`` only when set), then ``other``."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "other"}
        if self.rescored_from is None:
            del out["rescored_from"]
        return {**out, **self.other}

    def write(self, run_dir: Path) -> Path:
        """Write ``<run_dir>/RUN_INFO`` atomically (a reader sees the old file or the new one)."""
        path = Path(run_dir) / RUN_INFO
        write_json(path, self.to_json())
        return path

    @classmethod
    def from_json(cls, data: dict, where: Path | str = RUN_INFO) -> RunInfo:
        if not isinstance(data, dict) or "run_id" not in data:
            raise UnreadableRunInfo(f"{where}: not a run's info (a JSON object with a run_id)")
        known = {f.name for f in dataclasses.fields(cls)} - {"other"}
        other = {k: v for k, v in data.items() if k not in known}
        return cls(**{k: v for k, v in data.items() if k in known}, other=other)

    @classmethod
    def read(cls, run_dir: Path) -> RunInfo:
        """The run info of ``run_dir``. A missing file raises FileNotFoundError (an OSError); a file
        that is not JSON, or not a run's info, raises :class:`UnreadableRunInfo` naming it."""
        path = Path(run_dir) / RUN_INFO
        text = path.read_text(encoding="utf-8")
        try:
            data = json.loads(text)
        except ValueError as e:
            raise UnreadableRunInfo(f"{path}: not readable JSON ({e})") from None
        return cls.from_json(data, path)


def read_run_info(run_dir: Path) -> RunInfo | None:
    """:meth:`RunInfo.read`, or None where the folder has no readable run info (a reader that shows
    what it can: the review app's date, an analysis's run id)."""
    try:
        return RunInfo.read(run_dir)
    except (OSError, UnreadableRunInfo):
        return None


def write_json(path: Path, data: dict) -> None:
    """``data`` as indented JSON at ``path``, atomically (temp file, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)
