"""The judge (vabench.judge): a pass over a small run folder of hand-made records (four tasks, twenty
episodes, recording views) against a scripted provider over real HTTP; its label files, usage rows
and a rerun from the cache; repair once then unjudged; agreement against a planted human label set
(a judge scripted to agree, one scripted to contradict one criterion); the calibration subset; the
proxies as a judge; bad input; and that a request carries nothing but its own episode."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from tests.openai_server import ScriptedServer
from vabench.analysis import labels as L
from vabench.analysis.cli import main as analysis_main
from vabench.analysis.judging import judge_agreement
from vabench.analysis.load import load_runs
from vabench.analysis.tally import annotation_tallies
from vabench.judge.__main__ import main
from vabench.judge.evidence import NO_VIEWS
from vabench.judge.passes import USAGE
from vabench.results.layout import JUDGE, OUTCOME_TABLE
from vabench.results.outcomes import COLUMNS, SCHEMA_VERSION, write_row

KEY_VAR, KEY = "VABENCH_JUDGE_TEST_KEY", "sk-judge-test-0123456789abcdef"
TASKS = ("grasp_single_cube", "click_bell_right", "place_shoe", "lift_pot")
EPISODES = 20
STEPS = 3


def truth(s: int) -> dict:
    """The planted human majority label of episode ``s``: every criterion varies across episodes."""
    return {c: (s + i + s // 4) % 2 for i, c in enumerate(L.CRITERIA)}


def outcome(s: int) -> dict:
    r = {c: None for c in COLUMNS}
    task = TASKS[s % len(TASKS)]
    r.update(schema_version=SCHEMA_VERSION, run_id="run", experiment="x", model="m", summary_source="own",
             protocol="active", track="base", task=task, base_task=task, arms="single", seed=s, run_index=1,
             attempt=1, status="ok", success=s % 3 == 0, end_reason="stop", privileged=False,
             record=f"_records/{s}/events.jsonl", condition="m | active | summary own", checkpoints_done=0,
             checkpoints_total=2)  # fmt: skip
    return r


def png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


def record(folder: Path, s: int, views: bool = True) -> None:
    """An episode record: start, a task turn, then per step a reply, an action and a state with its view."""
    events = [{"type": "episode_start", "seq": 0, "task": TASKS[s % len(TASKS)], "arms": "single",
               "instruction": f"Do the task, episode EP-{s}-END."},
              {"type": "turn", "seq": 1, "role": "system", "kind": "system", "step": 0, "text": "SYSTEM PROMPT"},
              {"type": "turn", "seq": 2, "role": "user", "kind": "task", "step": 0,
               "text": f"task EP-{s}-END"}]  # fmt: skip
    for k in range(STEPS + 1):
        if k:
            events += [
                {"type": "reply", "seq": 10 * k, "step": k - 1, "text": '{"action": "gripper.close"}'},
                {"type": "action", "seq": 10 * k + 1, "step": k, "label": "gripper.close", "kind": "robot",
                 "valid": True, "planner_success": k != 2, "feedback": "ok", "checkpoints": {"grasp": k == 3}},
            ]  # fmt: skip
        view = f"recording/step_{k:03d}.png" if views else None
        events.append({"type": "state", "seq": 10 * k + 2, "step": k, "recording": view, "objects": {}, "arms": {}})
        if views:
            (folder / "recording").mkdir(parents=True, exist_ok=True)
            (folder / view).write_bytes(png())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "events.jsonl").write_text("\n".join(json.dumps(e) for e in events) + "\n")


@pytest.fixture
def run(tmp_path) -> Path:
    """Twenty judged episodes of four tasks; episode 5 has no recording views; three people labelled each."""
    run = tmp_path / "run"
    for s in range(EPISODES):
        record(run / "_records" / str(s), s, views=s != 5)
        write_row(run / "outcomes" / f"{s}.parquet", outcome(s))
        for a in ("ann1", "ann2", "ann3"):
            labels = truth(s) if a != "ann3" or s % 5 else {c: 1 - v for c, v in truth(s).items()}
            L.append(run, {"record": f"_records/{s}/events.jsonl", "annotator": a,
                           "gates": {"error": True, "ambiguity": True}, "labels": labels})  # fmt: skip
    return run


def episode_of(body: dict) -> int:
    return int(re.search(r"EP-(\d+)-END", json.dumps(body["messages"])).group(1))


def scripted(contrary: str | None = None, bad: dict | None = None):
    """A provider that answers each request with the planted truth (``contrary``: that criterion
    flipped); ``bad``: episode -> how many of its replies are unusable before a good one."""
    bad = dict(bad or {})

    def answer(body: dict) -> dict:
        s = episode_of(body)
        if bad.get(s, 0) > 0:
            bad[s] -= 1
            return {"content": "I think TL is fine.", "usage": {"prompt_tokens": 900, "completion_tokens": 9}}
        labels = {c: (1 - v if c == contrary else v) for c, v in truth(s).items()}
        reply = {"gates": {"error": True, "ambiguity": True}, "labels": labels, "steps": dict.fromkeys(labels, 1)}
        return {"content": json.dumps(reply), "usage": {"prompt_tokens": 1000, "completion_tokens": 80}}

    return answer


def words(server: ScriptedServer, name: str = "judge", samples: int = 2) -> list[str]:
    return ["model=openai", "model.id=openai/gpt-4o-mini", f"model.name={name}", f"model.api_base={server.url}",
            f"model.api_key_env={KEY_VAR}", "model.max_retries=0", f"judge.samples={samples}"]  # fmt: skip


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_a_judge_pass_writes_one_annotator_per_sample_and_a_rerun_costs_nothing(run, monkeypatch, capsys):
    monkeypatch.setenv(KEY_VAR, KEY)
    with ScriptedServer(default=scripted()) as server:
        assert main([str(run), *words(server)]) == 0
        sent = len(server.requests)
        assert main([str(run), *words(server)]) == 0  # the rerun: every reply from the cache
        assert len(server.requests) == sent == 2 * EPISODES
    out = capsys.readouterr().out
    assert "judged 40 of 40 item(s)" in out and "40 cache hit(s)" in out
    for k in (1, 2):
        saved = lines(run / L.ANNOTATIONS / f"judge-judge-{k}.jsonl")
        assert len(saved) == EPISODES  # the rerun wrote nothing again
        first = next(x for x in saved if x["record"] == "_records/3/events.jsonl")
        assert first["labels"] == truth(3) and first["steps"] == dict.fromkeys(L.CRITERIA, 1)
    usage = pd.read_parquet(run / JUDGE / USAGE)
    assert len(usage) == 2 * EPISODES and usage["judged"].all()
    assert usage["cache_hits"].sum() == 2 * EPISODES and usage["prompt_tokens"].sum() == 0  # the rerun's rows
    # every table reads judge labels as labels: the diagnostics of the judge alone
    t = annotation_tallies(load_runs(run), run, who="judge")
    assert set(t["raters"]) == {2}


def test_the_first_passs_usage_is_priced_and_a_bad_reply_is_repaired_once_then_left_unjudged(run, monkeypatch, capsys):
    monkeypatch.setenv(KEY_VAR, KEY)
    with ScriptedServer(default=scripted(bad={0: 1, 1: 2})) as server:
        assert main([str(run), *words(server, samples=1)]) == 1  # episode 1 stays unjudged
        assert len(server.requests) == EPISODES + 2  # one repair each for episodes 0 and 1, no more
        repair = next(b for b in server.requests if episode_of(b) == 1 and len(b["messages"]) == 4)
    assert "Output one corrected JSON object." in json.dumps(repair["messages"][-1])
    out = capsys.readouterr().out
    assert "1 after a repair, 1 unjudged" in out and "unjudged judge-judge-1 _records/1/events.jsonl" in out
    usage = pd.read_parquet(run / JUDGE / USAGE).set_index("record")
    assert usage.loc["_records/0/events.jsonl", "repaired"] and not usage.loc["_records/1/events.jsonl", "judged"]
    assert usage.loc["_records/1/events.jsonl", "model_calls"] == 2 and usage["cost_usd"].sum() > 0
    saved = {x["record"] for x in lines(run / L.ANNOTATIONS / "judge-judge-1.jsonl")}
    assert "_records/1/events.jsonl" not in saved and len(saved) == EPISODES - 1  # never guessed


def test_a_judge_that_agrees_has_high_kappa_and_one_contrary_criterion_drops_alone(run, monkeypatch):
    monkeypatch.setenv(KEY_VAR, KEY)
    with ScriptedServer(default=scripted()) as agree:
        assert main([str(run), *words(agree, "agree")]) == 0
    with ScriptedServer(default=scripted(contrary="MS")) as contrary:
        assert main([str(run), *words(contrary, "contrary")]) == 0
    a = judge_agreement(load_runs(run), run).set_index(["judge", "criterion"])
    assert (a.loc["judge-agree", "cohen_kappa"] == 1.0).all() and a.loc["judge-agree", "replaces_people"].all()
    ms = a.loc[("judge-contrary", "MS")]
    assert ms["cohen_kappa"] < 0 and ms["j1_h1"] == ms["j0_h0"] == 0 and not ms["replaces_people"]
    others = a.loc["judge-contrary"].drop(index="MS")
    assert (others["cohen_kappa"] == 1.0).all() and others["replaces_people"].all()
    assert (a["n"] == EPISODES).all() and (a["judge_self_kappa"] == 1.0).all()
    assert (a["human_kappa"] < 1.0).all()  # ann3 contradicts the others on four episodes


def test_a_request_holds_its_own_episode_and_no_key(run, monkeypatch):
    monkeypatch.setenv(KEY_VAR, KEY)
    with ScriptedServer(default=scripted()) as server:
        assert main([str(run), *words(server, samples=1)]) == 0
        bodies = list(server.raw_bodies)
        requests = list(server.requests)
    for raw, body in zip(bodies, requests, strict=True):
        mine = episode_of(body)
        assert KEY.encode() not in raw and b"SYSTEM PROMPT" not in raw
        assert set(re.findall(rb"EP-(\d+)-END", raw)) == {str(mine).encode()}
        images = [p for m in body["messages"] for p in m["content"] if isinstance(p, dict) and p["type"] != "text"]
        assert len(images) == (0 if mine == 5 else STEPS + 1)
    for path in run.rglob("*"):
        assert not path.is_file() or KEY.encode() not in path.read_bytes()
    no_views = next(x for x in lines(run / L.ANNOTATIONS / "judge-judge-1.jsonl") if "/5/" in x["record"])
    assert no_views["notes"] == NO_VIEWS


def test_the_calibration_subset_is_stratified_and_least_certain_first(run, monkeypatch, capsys):
    monkeypatch.setenv(KEY_VAR, KEY)
    with ScriptedServer(default=scripted()) as one:
        assert main([str(run), *words(one, "j", samples=1)]) == 0
    for s in (7, 8):  # a second sample that disagrees on TL for two episodes
        L.append(run, {"record": f"_records/{s}/events.jsonl", "annotator": "judge-j-2",
                       "labels": {"TL": 1 - truth(s)["TL"], "SR": truth(s)["SR"]}})  # fmt: skip
    assert main(["calibrate", str(run), "--n", "8"]) == 0
    picked = pd.read_csv(run / JUDGE / "calibration.csv")
    assert len(picked) == 8 and set(picked["record"][:2]) == {"_records/7/events.jsonl", "_records/8/events.jsonl"}
    assert picked["uncertainty"].is_monotonic_decreasing
    strata = set(zip(picked["task"], picked["outcome"], strict=True))
    assert len(strata) == 8  # eight strata (four tasks x success/failure), one each


def test_the_proxies_judge_for_free_and_compare_in_the_same_table(run, capsys):
    assert main([str(run), "model=proxy"]) == 0
    saved = lines(run / L.ANNOTATIONS / "judge-proxy-1.jsonl")
    assert len(saved) == EPISODES and all(x["labels"]["MS"] is None for x in saved)
    assert analysis_main([str(run), "--labels", "human"]) == 0
    out = capsys.readouterr().out
    assert "Judge vs human labels, per criterion" in out and "judge-proxy" in out


def test_bad_input_one_line_and_nothing_written(tmp_path, run, capsys):
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty"), "model=proxy"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing to judge" in err and not any((tmp_path / "empty").iterdir())
    assert main([str(run), "model=oracle"]) == 2 and "is an agent, not a judge" in capsys.readouterr().err
    assert main([str(run), "model=gtp4"]) == 2 and "model" in capsys.readouterr().err
    bad = run / L.ANNOTATIONS / "ann9.jsonl"
    bad.write_text(json.dumps({"record": "_records/0/events.jsonl", "annotator": "ann9", "time": "2026-01-01T00:00:00",
                               "labels": {"XX": 1}}) + "\n")  # fmt: skip
    notes = " ".join(annotation_tallies(load_runs(run), run).attrs["notes"])
    assert f"{bad}:1: labels must be an object with keys among" in notes


def test_a_spending_cap_stops_the_pass_and_keeps_the_labels_given(run, monkeypatch, capsys):
    monkeypatch.setenv(KEY_VAR, KEY)
    with ScriptedServer(default=scripted()) as server:
        cap = [*words(server, samples=1), "model.max_cost_usd=0.001", "model.max_concurrency=1"]
        assert main([str(run), *cap]) == 1
        sent = len(server.requests)
    usage = pd.read_parquet(run / JUDGE / USAGE)
    stopped = usage[usage["error"].str.startswith("stopped:")]
    assert 0 < sent < EPISODES and len(stopped) == EPISODES - sent and usage["judged"].sum() == sent
    assert len(lines(run / L.ANNOTATIONS / "judge-judge-1.jsonl")) == sent
    assert usage["cost_usd"].sum() >= 0.001


def test_the_plan_prices_a_pass_before_it_runs_and_a_cached_pass_at_nothing(run, monkeypatch, capsys):
    monkeypatch.setenv(KEY_VAR, KEY)

    def tree() -> list[Path]:  # what the run holds but the outcome table every reader keeps (load_runs)
        return sorted(p for p in run.rglob("*") if p.name != OUTCOME_TABLE)

    before = tree()
    with ScriptedServer(default=scripted()) as server:
        assert main([str(run), *words(server), "judge.plan=true"]) == 0
        assert server.requests == [] and tree() == before
        first = capsys.readouterr().out
        assert main([str(run), *words(server)]) == 0
        assert main([str(run), *words(server), "judge.plan=true"]) == 0
    dollars = re.search(r"about \$(\d+\.\d+), at most \$(\d+\.\d+)", first)
    assert "40 item(s), 0 already in the cache" in first and 0 < float(dollars[1]) < float(dollars[2])
    last = capsys.readouterr().out.splitlines()[-1]
    assert "40 item(s), 40 already in the cache" in last and "about $0.0000" in last
