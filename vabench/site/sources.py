"""The run folders a site is built from: their rows (each run's outcome table, as the review app
reads it), their run info (:class:`vabench.results.layout.RunInfo`), and what the row-against-record check found.

``vabench.verify`` prints its report and stores nothing, so there is no verify result to show. The
site runs the part of it that needs no simulator, on every row: the record exists, its digest is the
row's ``record_digest`` (events and model-facing frames unchanged) and its ``result`` event is the
row (:func:`vabench.verify.compare.check_record`). Re-simulation is not run here (minutes per
episode); each run says so, with the command that does it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from vabench.core.errors import NotFound
from vabench.results.layout import read_run_info
from vabench.review import runs as R
from vabench.verify.compare import check_record

RUN = "site_run"  # the column naming a row's run folder (its index in the site's run list)


@dataclass
class Check:
    """What the row-against-record check found in one run: rows checked, rows whose record holds,
    and the reasons of each row that differs (by its number in the site's table)."""

    done: bool = False
    rows: int = 0
    matching: int = 0
    differing: dict[int, list[str]] = field(default_factory=dict)  # row number in the site's table -> reasons
    when: str = ""

    @property
    def verdict(self) -> str:
        if not self.done:
            return "not checked"
        return "rows match their records" if not self.differing else f"{len(self.differing)} row(s) differ"


@dataclass
class Run:
    index: int
    root: Path
    rows: pd.DataFrame
    unreadable: list[tuple[str, str]]
    info: dict
    check: Check = field(default_factory=Check)

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def written_at(self) -> str:
        return str(self.info.get("written_at", ""))[:16].replace("T", " ")

    @property
    def digests(self) -> list[str]:
        """The provenance manifests its rows name (``_provenance/<digest>.json``)."""
        return sorted({str(d) for d in self.rows["provenance_digest"].dropna()})


def read_runs(folders: list[Path]) -> list[Run]:
    """Every run folder at or under ``folders`` (a folder of runs is its runs), in order."""
    missing = [str(f) for f in folders if not Path(f).is_dir()]
    if missing:
        raise NotFound(f"not a folder: {', '.join(missing)}")
    out = []
    for i, root in enumerate(R.expand_folders([Path(f) for f in folders])):
        rows, unreadable = R.outcomes(root)
        info = read_run_info(root)
        out.append(Run(i, root, rows.assign(**{RUN: i}), unreadable, info.to_json() if info else {}))
    return out


def all_rows(runs: list[Run]) -> pd.DataFrame:
    """The rows of every run as one table (``RUN`` names each row's run), with the unreadable
    episode files in ``attrs`` for the analysis's notes."""
    frames = [r.rows for r in runs if len(r.rows)]
    if not frames:
        raise NotFound(
            "no outcome rows under " + ", ".join(str(r.root) for r in runs) + "; point at a run folder "
            "that holds episode outcomes (its outcomes/ subfolder)"
        )
    df = pd.concat(frames, ignore_index=True)
    df.attrs["unreadable"] = [(r.root / p, why) for r in runs for p, why in r.unreadable]
    return df


def check_row(run: Run, row: dict) -> tuple[list[str], list[dict]]:
    """The row (plain values) against its record: the reasons it does not hold, and the record's events."""
    return check_record(run.root, row)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
