"""The driver's parts, each alone (issue 25): the run-folder writer, the summary phase and the
progress bar, without Ray, workers or a simulator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_launch import composed
from vabench.agents.summaries.summary_schema import SummaryError
from vabench.results.outcomes import read_rows
from vabench.run.config.run import from_config
from vabench.run.config.specs import expand
from vabench.run.folder.lock import RunLock, RunLocked
from vabench.run.folder.state import infra_row
from vabench.run.folder.writer import RunWriter
from vabench.run.progress import ProgressBar, Stage
from vabench.run.summaries import SummaryPhase


def _run(tmp_path: Path, *overrides: str):
    cfg = composed("tasks=[grasp_single_cube]", "seeds=2", f"results_dir={tmp_path}", *overrides)
    return from_config(cfg, tmp_path / "run")


def test_the_writer_writes_rows_and_records_but_nothing_once_another_driver_took_the_folder(tmp_path):
    run = _run(tmp_path)
    first, second = expand(run)
    with RunLock(run.run_dir) as lock:
        writer = RunWriter(run.run_dir, lock)
        writer.row(first, infra_row(run, first, 1, "boom"))
        writer.files({"events.jsonl": b"{}\n"}, first.record_dir(Path()) / "attempt1")
        lock.path.write_text(json.dumps({**lock.info, "token": "another driver"}))
        with pytest.raises(RunLocked, match="another driver took this run folder over"):
            writer.row(second, infra_row(run, second, 1, "boom"))
    rows = read_rows(run.run_dir)
    assert rows["seed"].tolist() == [first.seed] and rows["error"].tolist() == ["boom"]
    assert (first.record_dir(run.run_dir) / "attempt1" / "events.jsonl").read_bytes() == b"{}\n"


def test_the_summary_phase_passes_episodes_without_summaries_and_names_a_missing_shared_one(tmp_path):
    with RunLock(tmp_path / "run") as lock:
        run = _run(tmp_path)
        todo = [(spec, 1) for spec in expand(run)]
        phase = SummaryPhase(run, RunWriter(run.run_dir, lock), "digest")
        assert phase.prepare(backend=None, todo=todo) == todo  # summary none: nothing to learn, no backend
        assert phase.summary(todo[0][0]) is None
        shared = _run(tmp_path, "model=openai", "model.id=openai/x", "summary=shared", "summary.source=openai/y")
        todo = [(spec, 1) for spec in expand(shared)]
        with pytest.raises(SummaryError, match="grasp_single_cube"):
            SummaryPhase(shared, RunWriter(shared.run_dir, lock), "digest").prepare(backend=None, todo=todo)


class _Backend:
    def __init__(self):
        self.asked = 0

    def live(self):
        """Usage so far of two attempts a worker reported; one of them already came back."""
        self.asked += 1
        return {"e/attempt1": (7, 900, 0.01), "done/attempt1": (5, 500, 0.02)}

    def limit_stats(self):
        return {"rpm": 12.4, "wait_s": 90.0}


def test_the_bar_names_its_stage_and_shows_the_tally_in_flight_and_calls():
    counts = dict.fromkeys(("ok", "failed", "infra", "retried"), 0)
    bar = ProgressBar(3, counts, enabled=True, name="job1")
    backend = _Backend()
    bar.stage(Stage.SUMMARIES)
    assert bar.bar.desc == "job1: learning summaries"
    counts["ok"], bar.inflight = 2, {"e/attempt1"}
    bar.row({"model_calls": 5, "prompt_tokens": 400, "completion_tokens": 100, "cost_usd": 0.02})  # done's row
    bar.show(backend, force=True)
    bar.judged(2)
    shown = bar.bar.postfix
    assert "ok=2" in shown and "in_flight=1" in shown and "rpm=12" in shown
    assert "calls=12" in shown and "tokens=1400" in shown and "spent=$0.0300" in shown  # never counted twice
    assert "limit_wait=1.5m" in shown and bar.bar.n == 2
    bar.show(backend)  # within ASK_S: the figures are not asked for again
    assert backend.asked == 1
    bar.close()
