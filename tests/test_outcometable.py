"""The run folder's outcome table never disagrees with its episode files: a file edited, replaced,
removed, added or corrupted by hand is seen on the next read (or refused by name), and a reader
that knows nothing of the table still sees every row once."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from vabench.core.condition import Condition
from vabench.results import unreadable
from vabench.results.episodes import EpisodeSpec
from vabench.results.outcomes import OutcomeRow, write_row
from vabench.results.outcometable import TABLE_NAME, UnreadableOutcomes, gather, landed, load, refresh
from vabench.run.folder import state as runfolder


def spec(seed: int, task: str = "lift_cube", run_index: int = 1) -> EpisodeSpec:
    return EpisodeSpec(Condition("m", "active", "none"), task, seed, run_index)


def write(run, seed: int, success: bool = True, steps: int = 10, **more) -> str:
    s = spec(seed, **more)
    row = OutcomeRow(**s.identity(), run_id=run.name, status="ok", success=success, steps=steps,
                     end_reason="success" if success else "stop")  # fmt: skip
    return write_row(s.outcome_path(run), row).relative_to(run).as_posix()


@pytest.fixture
def run(tmp_path):
    run = tmp_path / "run"
    for seed in range(4):
        write(run, seed)
    assert refresh(run).opened == 4 and (run / TABLE_NAME).is_file()
    assert refresh(run).opened == 0  # up to date: no episode file opened
    return run


def seeds(df: pd.DataFrame) -> list[int]:
    return sorted(df["seed"].tolist())


def test_a_reader_that_ignores_the_table_sees_each_row_once(run, tmp_path):
    write(run.parent / "other", 9)  # a folder of two runs, one with a table, one without
    assert seeds(pd.read_parquet(run)) == [0, 1, 2, 3]
    assert seeds(pd.read_parquet(tmp_path)) == [0, 1, 2, 3, 9]
    assert ds.dataset(run, format="parquet").count_rows() == 4
    assert seeds(load(tmp_path)) == [0, 1, 2, 3, 9] and seeds(load(run / "outcomes")) == [0, 1, 2, 3]


def test_an_edit_that_keeps_size_and_mtime_is_still_seen(run):
    path = run / spec(2).outcome_path(run).relative_to(run)
    before = os.stat(path)
    old = pq.read_table(path)
    rows = old.to_pylist()
    rows[0]["steps"] = 99  # edited in place (no rename), then the mtime put back by hand
    pq.write_table(pa.Table.from_pylist(rows, schema=old.schema), path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the mtime put back by hand
    df = load(run)
    assert df.loc[df["seed"] == 2, "steps"].item() == 99
    assert refresh(run).opened == 0  # and the table now holds the edit


def test_removed_added_and_replaced_files_are_reflected(run):
    spec(0).outcome_path(run).unlink()
    write(run, 7)
    write(run, 1, success=False, steps=3)  # replaced (atomic rename, as a rerun would)
    df = load(run)
    assert seeds(df) == [1, 2, 3, 7]
    assert not df.loc[df["seed"] == 1, "success"].item() and df.loc[df["seed"] == 1, "steps"].item() == 3
    assert seeds(pd.read_parquet(run / TABLE_NAME)) == [1, 2, 3, 7]  # the table was rewritten


def test_a_corrupt_episode_file_is_refused_by_name(run):
    bad = spec(3).outcome_path(run)
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(UnreadableOutcomes, match=r"outcomes/m/active/none/base/lift_cube/seed3_run1\.parquet"):
        load(run)
    got = gather(run)  # callers that show a note get the rows and the names
    assert seeds(got.rows.to_pandas()) == [0, 1, 2] and "seed3_run1.parquet" in got.unreadable[0][0]


def test_resume_sets_a_corrupt_episode_file_aside_and_runs_its_episode_again(run, monkeypatch):
    monkeypatch.setattr(runfolder, "expand", lambda r: [spec(s) for s in range(4)])
    bad = spec(3).outcome_path(run)
    bad.write_bytes(b"not parquet at all")
    said = []
    options = SimpleNamespace(retry_infra=True, max_attempts=3)
    todo, done = runfolder.todo(SimpleNamespace(run_dir=run, options=options), said.append)
    assert done == 3 and [(s.seed, a) for s, a in todo] == [(3, 1)]
    assert len(said) == 1 and "seed3_run1.parquet" in said[0] and "set aside as _unreadable-" in said[0]
    assert not bad.exists() and len(list(bad.parent.glob("_unreadable-*seed3_run1.parquet"))) == 1


def test_a_damaged_or_foreign_table_is_rebuilt_from_the_files(run):
    (run / TABLE_NAME).write_bytes(b"garbage")
    assert seeds(load(run)) == [0, 1, 2, 3]
    pq.write_table(pq.read_table(spec(0).outcome_path(run)), run / TABLE_NAME)  # a parquet file, not a table
    assert seeds(load(run)) == [0, 1, 2, 3] and refresh(run).opened == 0


def test_resume_planning_reads_the_table(run, monkeypatch):
    monkeypatch.setattr(runfolder, "expand", lambda r: [spec(s) for s in range(6)])
    spec(1).outcome_path(run).unlink()
    todo, done = runfolder.todo(SimpleNamespace(run_dir=run, options=SimpleNamespace(retry_infra=True)))
    assert done == 3 and [(s.seed, a) for s, a in todo] == [(1, 1), (4, 1), (5, 1)]


def test_the_driver_hook_rewrites_the_table_as_rows_land(tmp_path):
    run = tmp_path / "grow"
    for seed in range(49):
        write(run, seed)
        landed(run)
    assert not (run / TABLE_NAME).exists()  # not rewritten for every row
    write(run, 49)
    landed(run)
    assert len(pd.read_parquet(run / TABLE_NAME)) == 50 and refresh(run).opened == 0


def test_a_run_folder_that_cannot_be_written_is_read_all_the_same(run, monkeypatch):
    write(run, 8)

    def refused(*args, **kwargs):
        raise PermissionError("read-only file system")

    monkeypatch.setattr("vabench.results.outcometable.tempfile.mkstemp", refused)
    assert seeds(load(run)) == [0, 1, 2, 3, 8] and refresh(run).opened == 1  # the old table, checked


def torn(run, seed: int, age_s: float = 3600.0):
    """Episode ``seed``'s file torn ``age_s`` ago (its mtime set back, as a file torn in a crash an
    hour ago has it)."""
    bad = spec(seed).outcome_path(run)
    bad.write_bytes(b"PAR1 torn")
    then = time.time() - age_s
    os.utime(bad, (then, then))
    return bad


def test_a_reader_sets_a_corrupt_file_aside_so_plain_readers_read_the_run(run):
    bad = torn(run, 3)
    with pytest.raises(Exception, match="Parquet"):
        pd.read_parquet(run)
    got = gather(run)  # any vabench reader: the analysis, the review app, verify
    assert got.unreadable == [] and seeds(got.rows.to_pandas()) == [0, 1, 2]
    ((named, note),) = got.set_aside
    assert named == str(run / "outcomes/m/active/none/base/lift_cube/seed3_run1.parquet")
    assert "set aside as _unreadable-" in note and not bad.exists()
    assert seeds(pd.read_parquet(run)) == [0, 1, 2]
    ((named, note),) = gather(run).set_aside  # later reads still name it, until the episode runs again
    assert "/lift_cube/_unreadable-" in named and named.endswith("-seed3_run1.parquet") and "set aside" in note
    assert seeds(load(run)) == [0, 1, 2]  # no longer an error: the table agrees with the files
    write(run, 3)  # the next driver ran it again
    assert gather(run).set_aside == [] and seeds(load(run)) == [0, 1, 2, 3]


def test_a_corrupt_file_modified_a_moment_ago_is_only_named(run):
    """A file written in place by a copy still under way is torn until it ends: a reader names it
    but leaves it, and a later read (or the next driver) sets it aside."""
    bad = torn(run, 3, age_s=0.0)
    got = gather(run)
    assert got.set_aside == [] and "seed3_run1.parquet" in got.unreadable[0][0] and bad.exists()


def test_a_row_that_lands_while_a_reader_sets_aside_its_torn_file_stays(run, monkeypatch):
    """A driver renames a good row over the torn file between the reader's check and its rename:
    the reader sees another inode in what it moved and puts the row back."""
    bad = torn(run, 3)
    really = unreadable.set_aside

    def driver_lands_first(path):
        write(run, 3, steps=42)  # atomic: temp file, then rename over the torn one
        return really(path)

    monkeypatch.setattr(unreadable, "set_aside", driver_lands_first)
    got = gather(run)
    assert got.set_aside == [] and bad.exists() and list(bad.parent.glob("_unreadable-*")) == []
    df = load(run)
    assert seeds(df) == [0, 1, 2, 3] and df.loc[df["seed"] == 3, "steps"].item() == 42


def test_a_driver_names_a_file_a_reader_set_aside_and_runs_its_episode(run, monkeypatch):
    monkeypatch.setattr(runfolder, "expand", lambda r: [spec(s) for s in range(4)])
    torn(run, 3)
    gather(run)
    said = []
    todo, done = runfolder.todo(
        SimpleNamespace(run_dir=run, options=SimpleNamespace(retry_infra=True, max_attempts=3)), said.append
    )
    assert done == 3 and [(s.seed, a) for s, a in todo] == [(3, 1)]
    assert len(said) == 1 and "_unreadable-" in said[0] and said[0].endswith("its episode runs again")
