"""Seats (vabench.run.seat): an episode played from outside through the normal loop, claimed
exclusively, its row and record those of any agent."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.test_launch import composed
from tests.test_learning import SUMMARY
from vabench.core.boundary import Command, Stop, ToolCall
from vabench.core.vocab import EndReason
from vabench.gym.oracle import expert_decisions
from vabench.results.outcomes import read_rows
from vabench.results.recordfile import Event, read_events
from vabench.run.config.run import from_config
from vabench.run.folder.claims import claim
from vabench.run.seat import SeatOver, Seats

TASK = "grasp_single_cube"


def run_of(results: Path, *overrides: str):
    cfg = composed(f"tasks=[{TASK}]", "render=small", f"results_dir={results}", "run_id=r", "model=random", *overrides)
    return from_config(cfg, results / "r")


@pytest.fixture
def seats(tmp_path):
    made = []

    def make(*overrides: str) -> Seats:
        made.append(Seats(run_of(tmp_path, *overrides), log=lambda line: None))
        return made[-1]

    yield make
    for s in made:
        s.close()


def test_a_seat_plays_the_oracle_commands_to_success_and_its_row_is_any_agents(seats, tmp_path):
    s = seats("seeds=1")
    seat = s.take("mcp:probe/1.0")
    assert seat.brief.task == TASK and seat.observation.step == 0 and seat.observation.images
    bad = seat.answer(Command({"action": "gripper.move_world", "axis": "q", "sign": "+", "distance_mm": 5}))
    assert bad.refused and "axis" in bad.refused and bad.step == 0 and bad.budget_left == bad.budget
    assert seat.answer(ToolCall("no_such_tool")).refused  # a tool the episode does not offer: refused too
    decisions = expert_decisions(TASK, seat.brief.seed)
    for i, decision in enumerate(decisions, 1):
        turn = seat.answer(Command(decision))
        assert turn.step == i and turn.budget_left == turn.budget - i and turn.refused is None
        assert turn.feedback.valid and turn.over == (i == len(decisions))
    assert turn.end == EndReason.SUCCESS and turn.observation is None and turn.row["success"]
    with pytest.raises(SeatOver):
        seat.answer(Stop())
    [row] = read_rows(tmp_path / "r").to_dict("records")
    assert row["model"] == "mcp:probe/1.0" and not row["privileged"] and row["repairs"] == 2
    assert row["steps"] == len(decisions) and row["success"] and row["record"] == turn.row["record"]
    events = read_events(tmp_path / "r" / row["record"])
    answers = [e for e in events if e["type"] == Event.ANSWER]
    assert len(answers) == len(decisions) + 2 and all(e["model_latency_s"] >= 0 for e in answers)
    assert s.take("mcp:probe/1.0") is None  # the run is played
    assert s.take("mcp:other/2.0") is not None  # another model name has its own episodes


def test_concurrent_takes_never_share_an_episode_and_a_left_one_is_played_again(seats, tmp_path):
    s = seats("seeds=2")
    taken, go = [], threading.Barrier(3)

    def take():
        go.wait()
        taken.append(s.take("m"))

    threads = [threading.Thread(target=take) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = [seat for seat in taken if seat is not None]
    assert len(got) == 2 and got[0].spec.key != got[1].spec.key  # two episodes, three takers
    left = got[0]
    left.answer(Command({"action": "camera.view_topdown"}))
    left.leave()
    again = s.take("m")
    assert again.spec.key == left.spec.key and again.attempt == 1 and again.observation.step == 0
    kept = list((tmp_path / "r" / left.spec.place(1)).parent.glob("attempt1.interrupted-*"))
    assert len(kept) == 1  # the left attempt's record is set aside, like an interrupted driver's
    assert read_rows(tmp_path / "r").empty if (tmp_path / "r" / "outcomes").exists() else True


def test_a_claim_held_by_another_process_is_skipped_and_freed_when_it_ends(seats, tmp_path):
    s = seats("seeds=1")
    [(spec, _)] = s.pending("m")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "r"), spec.key],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[1],
    )
    assert holder.stdout.readline().strip() == "held"
    assert s.take("m") is None and claim(tmp_path / "r", spec.key) is None
    holder.stdin.close()  # the holder ends without releasing: the kernel lets its claim go
    holder.wait(timeout=30)
    seat = s.take("m")
    assert seat is not None and seat.spec.key == spec.key


HOLD = """
import sys
from vabench.run.folder.claims import claim
held = claim(sys.argv[1], sys.argv[2])
print("held" if held else "not held", flush=True)
sys.stdin.read()
"""


def test_expert_and_shared_summaries_are_carried_as_a_models_and_a_missing_shared_one_is_refused(seats, tmp_path):
    from vabench.agents.summaries.summary_schema import SummaryError
    from vabench.agents.summaries.summary_store import SummaryStore

    s = seats("seeds=1", "model=mcp", "summary=expert")
    seat = s.take("mcp:probe/1.0")
    assert seat.study is None and "Summary of grasp_single_cube" in seat.brief.summary
    [row] = [seat.answer(Stop()).row]
    assert row["summary_model"] == "expert" and row["summary_learned"] and row["summary_digest"]
    shared = seats("seeds=1", "model=mcp", "summary=shared", "summary.source=someone", "run_id=r2")
    with pytest.raises(SummaryError, match="someone"):
        shared.take("mcp:probe/1.0")
    SummaryStore(shared.run.summary_root).save("someone", TASK, SUMMARY, [("grasp_single_cube", 0)])
    seat = shared.take("mcp:probe/1.0")  # the refused take let its claim go
    assert seat is not None and "two opposite side faces" in seat.brief.summary
    assert seat.answer(Stop()).row["summary_model"] == "someone"


def test_under_summary_own_a_seat_studies_first_and_the_models_summary_serves_its_later_seats(
    seats, tmp_path, demo_root
):
    s = seats("seeds=2", "model=mcp", "summary=own", f"demo_root={demo_root}")
    seat = s.take("mcp:probe/1.0")
    assert seat.study is not None and seat.brief is None and seat.turn().step == 0
    with pytest.raises(SeatOver, match="summary is written first"):
        seat.answer(Stop())
    seat.leave()  # left in its stage: no row, the episode is played again
    seat = s.take("mcp:probe/1.0")
    first = seat.spec.key
    assert seat.study is not None and seat.write_summary(SUMMARY).refused  # no frame seen: refused
    seat.study.demonstration({"steps": [0, 1, 2]})
    turn = seat.write_summary(SUMMARY)
    assert turn.step == 0 and turn.observation is not None and seat.study is None
    assert "two opposite side faces" in seat.brief.summary
    row = seat.answer(Stop()).row
    later = s.take("mcp:probe/1.0")  # the model has its summary: the next episode starts at once
    assert later.spec.key != first and later.study is None and later.brief.summary == seat.brief.summary
    assert row["summary_model"] == "mcp:probe/1.0" and row["summary_learned"] and row["summary_source"] == "own"
    left, learned = sorted((tmp_path / "r" / "_learning" / TASK).iterdir())  # the stage's records, as a model's
    assert read_events(left / "events.jsonl")[-1]["type"] == Event.INTERRUPTED
    events = read_events(learned / "events.jsonl")
    tools = [e["payload"]["tool"] for e in events if e["type"] == Event.ANSWER]
    assert tools == ["expert.learn", "expert.frame", "expert.learn"]  # refused (no frame yet), frames, saved
    assert events[0]["model"] == "mcp:probe/1.0" and events[-1]["type"] == Event.LEARNING_RESULT
    assert events[-1]["frames_inspected"] == 3 and len(list((learned / "frames").rglob("*.jpg"))) == 3
