"""Verify a run folder from its records, or rescore it with the current code (no model called).

``verify``: every row is checked against its own record (digest, result event, run id, manifest),
every judged row's episode is re-simulated from its recorded replies and compared
(:mod:`vabench.verify.compare`); the provenance differences between the run's machine and this
one are named. ``rescore``: the same re-simulations, written as a new run folder whose rows say
where they came from (``rescored_from``); the source folder is only read."""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from vabench.core.errors import PathTaken, VabenchError
from vabench.core.vocab import Status
from vabench.results.bundle import DIGESTS, differences, unpack
from vabench.results.layout import OUTCOMES, PROVENANCE, RECORDS, RUN_INFO, RunInfo
from vabench.results.outcomes import COLUMNS, read_rows, write_row
from vabench.results.outcometable import FILE, refresh, to_pandas
from vabench.results.recordfile import read_events
from vabench.results.unreadable import original
from vabench.run.config.run import from_config
from vabench.run.folder import provenance
from vabench.run.folder.state import run_manifest, write_run_info

from .compare import JUDGED, check_record, compare, plain, recorded_result
from .resim import NO_RECORDING, Job, resimulate, spec_of


class NotARunFolder(VabenchError, ValueError):
    """A folder ``verify`` cannot read as a run: no readable run info (``RUN_INFO``), or a config this code refuses."""


@dataclass
class Report:
    """What a verify found: rows checked, judged episodes reproduced (re-simulated alike, and their
    rows and records intact), one line per difference, each naming its episode (or file), and the
    episodes (or files) that differ."""

    rows: int = 0
    judged: int = 0
    reproduced: int = 0
    lines: list[str] = field(default_factory=list)
    provenance: list[str] = field(default_factory=list)
    seconds: float = 0.0
    episode_s: float = 0.0  # the original episodes' wall time, summed
    differing: set[str] = field(default_factory=set)

    @property
    def ok(self) -> bool:
        return not self.lines

    def add(self, key: str, reasons: list[str]) -> None:
        """One line per finding about episode ``key`` (or a file outside any episode)."""
        self.lines += [f"DIFF {key}: {reason}" for reason in reasons]
        self.differing.update([key] if reasons else [])

    def summary(self) -> str:
        rate = self.judged / self.seconds * 60 if self.seconds else 0.0
        return (
            f"reproduced {self.reproduced}/{self.judged} judged episodes ({self.rows} rows, "
            f"{len(self.differing)} with differences) in {self.seconds:.1f} s: {rate:.1f} episodes/min; "
            f"the original episodes took {self.episode_s:.1f} s of wall time"
        )


def load(run_dir: Path):
    """(RunConfig, RunInfo, rows as dicts) of a run folder, only read."""
    run, info = _config(Path(run_dir))
    return run, info, outcome_rows(Path(run_dir), write=False)[0]


def _config(run_dir: Path) -> tuple:
    try:
        info = RunInfo.read(run_dir)
    except (OSError, ValueError, TypeError) as e:  # UnreadableRunInfo is a ValueError
        raise NotARunFolder(f"{run_dir}: not a run folder ({RUN_INFO}: {type(e).__name__}: {e})") from None
    try:
        return from_config(info.config, run_dir), info
    except ValueError as e:  # ConfigError: a key this code no longer accepts
        raise NotARunFolder(f"{run_dir}/{RUN_INFO}: its config does not validate under this code: {e}") from None


def outcome_rows(run_dir: Path, write: bool = True) -> tuple[list[dict], list[tuple[str, str]]]:
    """The run's rows as dicts (``_file``: the row's file in outcomes/), read through its outcome
    table, which (``write``) sets unreadable files aside (:mod:`vabench.results.unreadable`), and
    (episode key, finding) for each outcome file that could not be read."""
    got = refresh(run_dir, write=write)
    df = to_pandas(got.rows).assign(**{FILE: got.rows.column(FILE).to_pylist()}).sort_values(FILE)
    key = lambda rel: original(rel.removeprefix(f"{OUTCOMES}/")).removesuffix(".parquet")  # noqa: E731
    found = [(key(rel), f"{rel} is unreadable ({why}): its episode counts as not run") for rel, why in got.unreadable]
    found += [(key(rel), f"{rel}: {note}; its episode counts as not run") for rel, note in got.set_aside]
    return df.to_dict("records"), found


def _row_identity(run_dir: Path, info: RunInfo, row: dict) -> list[str]:
    """A row belongs to this run: its run id, its manifest kept here, its file where its spec says."""
    reasons = []
    if row.get("run_id") != info.run_id:
        reasons.append(f"run_id {row.get('run_id')} is not this run's ({info.run_id})")
    digest = plain(row.get("provenance_digest"))
    if digest is not None and not (run_dir / PROVENANCE / f"{digest}.json").is_file():
        reasons.append(f"provenance {digest} is not in {PROVENANCE}/")
    where = spec_of(row).outcome_path(run_dir)
    if not where.is_file() or (row.get(FILE) and where != run_dir / OUTCOMES / row[FILE]):
        here = f"{OUTCOMES}/{row[FILE]}" if row.get(FILE) else "the row"
        reasons.append(f"{here} is not at the place its identity names ({where.relative_to(run_dir).as_posix()})")
    return reasons


def provenance_differences(run_dir: Path, run, rows: list[dict]) -> list[str]:
    """Every provenance difference between the manifests the rows name and this machine's."""
    here, out = run_manifest(run), []
    for digest in sorted({plain(r.get("provenance_digest")) for r in rows} - {None}):
        try:
            there = json.loads((run_dir / PROVENANCE / f"{digest}.json").read_text())
        except (OSError, ValueError):
            continue
        out += [f"{digest}: {d}" for d in provenance.differences(there, here)]
    return out


def _jobs(run_dir: Path, run, rows: list[dict], out: Path, recording, then_stop: bool = False) -> list[Job]:
    folder = lambda r: str(out / spec_of(r).key / f"attempt{r['attempt']}")  # noqa: E731
    return [Job(r, str(run_dir / r["record"]), folder(r), run.harness, recording, then_stop) for r in rows]


def verify(run_dir: Path, workers: int = 1, log=print) -> Report:
    """Check every row against its record (and a bundle's files against its ``DIGESTS.json``) and
    re-simulate every judged episode. Each finding names its episode, file, column or frame."""
    run_dir = Path(run_dir)
    run, info = _config(run_dir)
    rows, unreadable = outcome_rows(run_dir)
    report = Report(rows=len(rows), provenance=provenance_differences(run_dir, run, rows))
    started, judged, events = time.monotonic(), [], {}
    for key, reason in unreadable + bundle_differences(run_dir, rows):
        report.add(key, [reason])
    for row in rows:
        key = spec_of(row).key
        reasons, events[key] = check_record(run_dir, row)
        report.add(key, reasons + _row_identity(run_dir, info, row))
        if row["status"] == Status.OK and events[key]:
            judged.append(row)
        report.episode_s += float(plain(row.get("wall_s")) or 0.0)
    report.judged = len(judged)
    with tempfile.TemporaryDirectory(prefix="vabench-verify-") as tmp:
        for job, new in resimulate(_jobs(run_dir, run, judged, Path(tmp), NO_RECORDING), workers):
            key = spec_of(job.row).key
            recorded = recorded_result(events[key]) or job.row
            reasons = compare(recorded, events[key], new, read_events(Path(job.out) / "events.jsonl"))
            report.add(key, [f"re-simulation: {r}" for r in reasons])
            report.reproduced += key not in report.differing  # re-simulated alike, its row and record intact
    report.seconds = time.monotonic() - started
    return report


def bundle_differences(run_dir: Path, rows: list[dict]) -> list[tuple[str, str]]:
    """(episode key, or the file where it belongs to none; finding) for each file of an unpacked
    bundle (a folder with ``DIGESTS.json``) that is not as packed; none for a plain run folder."""
    if not (run_dir / DIGESTS).is_file():
        return []
    owner = {f"{OUTCOMES}/{r[FILE]}": spec_of(r).key for r in rows}
    folders = {Path(r["record"]).parent.as_posix() + "/": spec_of(r).key for r in rows if plain(r.get("record"))}
    out = []
    for name, what in differences(run_dir):
        key = owner.get(name) or next((k for f, k in folders.items() if name.startswith(f)), name)
        out.append((key, f"{name} {what}" if key != name else what))
    return out


KEEP = ("record", "record_digest", "provenance_digest", "wall_s", "error", "error_kind")  # the rescore's own


def rescore(run_dir: Path, out_dir: Path, workers: int = 1, log=print) -> pd.DataFrame:
    """Re-simulate every judged episode of ``run_dir`` with the current code into ``out_dir``: its
    rows keep the original's identity and usage (the replies were paid for once), take the judged
    columns from the re-simulation, and name ``rescored_from``. Returns the new rows."""
    run_dir, out_dir = Path(run_dir).absolute(), Path(out_dir).absolute()
    if out_dir.exists() and any(out_dir.iterdir()):
        raise PathTaken(f"{out_dir} is not empty: rescore writes a new run folder")
    run, info, rows = load(run_dir)
    judged = [r for r in rows if r["status"] == Status.OK]
    new_run = from_config(info.config, out_dir)
    digest = write_run_info(new_run, log)
    _note_source(out_dir, run_dir)
    recs = out_dir / RECORDS
    for job, new in resimulate(_jobs(run_dir, run, judged, recs, run.recording, then_stop=True), workers):
        row = {c: plain(job.row.get(c)) for c in COLUMNS}
        row.update({c: new[c] for c in (*JUDGED, *KEEP)}, provenance_digest=digest, rescored_from=str(run_dir))
        row["record"] = (Path(job.out).relative_to(out_dir) / new["record"]).as_posix()
        write_row(spec_of(row).outcome_path(out_dir), row)
    return read_rows(out_dir / OUTCOMES)


def _note_source(out_dir: Path, source: Path) -> None:
    dataclasses.replace(RunInfo.read(out_dir), rescored_from=str(source)).write(out_dir)


def unpacked(path: Path) -> tuple[Path, tempfile.TemporaryDirectory | None]:
    """A run folder for ``path``: itself, or a bundle (zip or tar, however repacked) unpacked into
    a temporary folder. Raises :class:`vabench.results.bundle.NotABundle` for a file that is none."""
    path = Path(path)
    if path.is_dir():
        return path, None
    tmp = tempfile.TemporaryDirectory(prefix="vabench-bundle-")
    try:
        return unpack(path, Path(tmp.name)), tmp
    except BaseException:
        tmp.cleanup()
        raise
