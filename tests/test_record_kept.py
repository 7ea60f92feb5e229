"""A record whose attempt completed is never renamed (issue 41): a user saw a completed attempt's
record folder renamed ``attempt1.interrupted-1`` after a later interrupt. A driver stopped between
an attempt's result and its row (Ctrl-C, a kill, a row it could not write) leaves a complete record
and no row; the next launch writes the row from the record's result instead of running the attempt
again, so the record keeps its name and the row points at it."""

from __future__ import annotations

import pytest

from tests.test_driver import smoke
from vabench.core.errors import Interrupted
from vabench.core.vocab import Status
from vabench.results.outcomes import OutcomeRow
from vabench.results.recordfile import Event, read_events
from vabench.results.records import EpisodeRecord, RecordComplete, set_aside
from vabench.run.actors.worker import EpisodeWorker
from vabench.run.config.specs import expand
from vabench.run.driver import Driver
from vabench.run.folder.writer import RunWriter


def test_a_completed_attempt_whose_row_was_never_written_keeps_its_record_and_gets_its_row(tmp_path, monkeypatch):
    run = smoke(tmp_path, "kept", "ray.address=none", "seeds=1", "tasks=[grasp_single_cube]")
    played, real_run, real_row = [], EpisodeWorker.run, RunWriter.row

    def counted(self, episode):
        played.append(episode.attempt)
        return real_run(self, episode)

    def ctrl_c_before_the_row(self, spec, row):
        raise KeyboardInterrupt  # the attempt completed; its row was never written

    monkeypatch.setattr(EpisodeWorker, "run", counted)
    monkeypatch.setattr(RunWriter, "row", ctrl_c_before_the_row)
    with pytest.raises(Interrupted):
        Driver(run, log=lambda *_: None, progress=False).execute()
    (spec,) = expand(run)
    folder = run.run_dir / spec.place(1)
    (result,) = [e for e in read_events(folder / "events.jsonl") if e["type"] == "result"]
    monkeypatch.setattr(RunWriter, "row", real_row)
    said = []
    rows = Driver(run, log=said.append, progress=False).execute()
    assert played == [1] and sorted(p.name for p in folder.parent.iterdir()) == ["attempt1"]  # kept, not renamed
    (row,) = rows.to_dict("records")
    assert row["record"] == f"{spec.place(1)}/events.jsonl" and row["record_digest"] == result["record_digest"]
    assert (row["status"], row["attempt"], row["success"], row["steps"]) == (
        "ok",
        1,
        result["success"],
        result["steps"],
    )
    assert any("1 attempt(s) had completed" in line for line in said), said
    again = Driver(run, log=said.append, progress=False).execute()
    assert played == [1] and len(again) == 1 and "1 already done, 0 to run" in said[-1]


def test_a_record_with_a_result_is_never_set_aside_and_one_without_is(tmp_path):
    done, cut = tmp_path / "done" / "attempt1", tmp_path / "cut" / "attempt1"
    for folder, finished in ((done, True), (cut, False)):
        record = EpisodeRecord(folder)
        record.event(Event.CRASH, error="a traceback")
        if finished:
            record.event(Event.RESULT, **OutcomeRow(status=Status.OK).row())
        record.close()
    with pytest.raises(RecordComplete, match="completed attempt"):
        set_aside(done)
    assert [p.name for p in done.parent.iterdir()] == ["attempt1"]
    assert set_aside(cut).name == "attempt1.interrupted-1" and not cut.exists()
