"""The human player as a study meets it: ``python -m vabench.launch model=human`` serves one page per
operator; a real Chromium (Debian's, through its WebDriver) plays ``grasp_single_cube`` to success
by clicking the oracle's commands and another episode to a spent budget; the page fits three window
sizes; Ctrl-C and a rerun of the same run_id lose nothing; the analysis counts operators as runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
import requests

from tests.test_learning import SUMMARY as LEARNED
from tests.test_review import URL, browser, js, wait_for  # noqa: F401 (browser: the shared Chromium fixture)
from vabench.core.boundary import Brief
from vabench.core.vocab import EndReason
from vabench.envs.actions import MOVE_MM, ROTATE_DEG
from vabench.human import shown
from vabench.human.serve import printed_urls

pytestmark = pytest.mark.xdist_group("human")  # one study server for the module
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled"}
TASK, SEEDS, BUDGET = "grasp_single_cube", (1000, 1001, 1002), 10  # budget_scale=0.2 of the task's 50
STUDY = ["model=human", "human.operators=2", "human.port=0", f"tasks=[{TASK}]", "seeds=3", "render=small",
         "budget_scale=0.2", "ray.address=none", "recording.video=false", "run_id=study"]  # fmt: skip
SIZES = {"laptop": (1280, 800), "desktop": (1920, 1080), "tablet": (820, 1180)}


# -- what the page offers ------------------------------------------------------------------------


def test_the_controls_are_the_episodes_commands_with_the_papers_ranges():
    one = shown.controls(Brief(TASK, 1, ("right",), "active", actions=_actions(("right",), True)))
    move = next(c for c in one["robot"] if c["action"] == "gripper.move_world")
    assert [f["name"] for f in move["fields"]] == ["axis", "sign", "distance_mm"]  # one arm: no arm field
    assert (move["fields"][2]["min"], move["fields"][2]["max"]) == MOVE_MM
    turn = next(c for c in one["robot"] if c["action"] == "gripper.rotate_local")
    assert (turn["fields"][2]["min"], turn["fields"][2]["max"]) == ROTATE_DEG
    assert len(one["camera"]) == 15 and "camera.view_topdown" in one["camera"]
    two = shown.controls(Brief("lift_pot", 1, ("left", "right"), "passive", actions=_actions(("left", "right"), False)))
    assert two["camera"] == []  # the passive protocol has no camera actions
    dual = next(c for c in two["robot"] if c["action"] == "dual_gripper.move_world")
    assert [f["name"] for f in dual["fields"]][:3] == ["left.axis", "left.sign", "left.distance_mm"]
    assert next(c for c in two["robot"] if c["action"] == "gripper.open")["fields"][0]["choices"] == ("left", "right")


def _actions(arms, camera):
    from vabench.envs.actions import action_names

    return action_names(arms, camera=camera)


def test_a_study_needs_an_operator():
    from vabench.run.config.run import HumanConfig
    from vabench.run.config.sections import ConfigError, build

    with pytest.raises(ConfigError, match=r"^'human.operators' must be >= 1, got 0$"):  # the launcher's one line
        build(HumanConfig, {"operators": 0}, "human")
    assert build(HumanConfig, {}, "human") == HumanConfig(operators=1, host="127.0.0.1", port=8766)


# -- the study -----------------------------------------------------------------------------------


@contextmanager
def study(results: Path, *words: str):
    """The study's server running, with the URL of each operator (printed once its port is bound)."""
    cmd = [sys.executable, "-m", "vabench.launch", f"results_dir={results}", *STUDY, *words]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV)
    try:
        urls = printed_urls(proc.stdout)
        assert len(urls) == 2, f"the server printed no URLs (exit {proc.poll()})"
        yield proc, urls
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)


def oracle_commands(physics_env, seed: int) -> list[dict]:
    """The privileged expert's commands for the episode (the same physics whatever the render)."""
    physics_env.reset(TASK, seed, "active")
    return [action for action, _ in _expert(physics_env)]


def _expert(env):
    actions = iter(env.expert())
    while True:
        action = next(actions, None)
        if action is None:
            return
        result = env.step(action)
        yield action, result
        if result.done:
            return


def rows(run: Path) -> pd.DataFrame:
    return pd.read_parquet(run / "outcomes").sort_values("seed").reset_index(drop=True)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    results = tmp_path_factory.mktemp("human")
    with study(results) as (proc, urls):
        yield results / "study", proc, urls


def origin(url: str) -> str:
    m = URL.search(url)
    return f"http://{m['host']}:{m['port']}"


def test_the_page_is_on_the_review_apps_access_layer(served):
    run, _, urls = served
    base = origin(urls["op2"])
    assert requests.get(f"{base}/play/op2", headers={"Host": "evil.example"}, timeout=10).status_code == 400
    r = requests.post(f"{base}/play/op2/api/next", json={}, headers={"Origin": "http://evil.example"}, timeout=10)
    assert r.status_code == 403 and not (run / "outcomes").exists()
    assert requests.get(f"{base}/play/op9", timeout=10).status_code == 404


def play(d, url: str, commands: list[dict]) -> None:
    """Click each command's control on the page, waiting for each answer to be shown."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    for command in commands:
        before = d.find_element(By.ID, "play").get_attribute("data-answered")
        name = command["action"]
        if name.startswith("camera."):
            d.find_element(By.CSS_SELECTOR, f'button.camera-action[data-action="{name}"]').click()
        else:
            form = d.find_element(By.CSS_SELECTOR, f'form.command[data-action="{name}"]')
            for key, value in command.items():
                if key in ("action", "reason"):
                    continue
                field = form.find_element(By.NAME, key)
                if field.tag_name == "select":
                    Select(field).select_by_value(str(value))
                else:
                    js(d, "arguments[0].value = arguments[1]", field, str(value))
            form.find_element(By.CSS_SELECTOR, "button.send").click()
        wait_for(d, lambda d, b=before: d.find_element(By.ID, "play").get_attribute("data-answered") != b, name)


def test_an_operator_plays_one_episode_to_success_and_one_to_a_spent_budget(served, browser, physics_env):  # noqa: F811
    from selenium.webdriver.common.by import By

    run, _, urls = served
    d = browser
    d.set_window_size(*SIZES["laptop"])
    d.get(urls["op1"])
    playing = lambda d: d.find_element(By.ID, "play").get_attribute("data-phase") == "playing"  # noqa: E731
    wait_for(d, playing, "the first episode (the server builds its first env)", timeout=180)
    assert d.find_element(By.ID, "step").text == "step 0"
    assert d.find_element(By.ID, "budget").is_displayed() is False  # the paper's profile: a model is not told it
    play(d, urls["op1"], oracle_commands(physics_env, SEEDS[0]))
    assert d.find_element(By.ID, "message-title").text == "Episode over: success"
    d.find_element(By.ID, "next").click()
    wait_for(d, lambda d: d.find_element(By.ID, "step").text == "step 0", "the second episode")
    play(d, urls["op1"], [{"action": "camera.view_topdown"}] * BUDGET)
    assert d.find_element(By.ID, "message-title").text == "Episode over: budget"
    got = rows(run)
    assert list(got["seed"]) == list(SEEDS[:2]) and list(got["operator"]) == ["op1", "op1"]
    assert list(got["end_reason"]) == [EndReason.SUCCESS, EndReason.BUDGET]
    assert list(got["model"]) == ["human", "human"] and not got["privileged"].any()
    assert got.loc[0, "steps"] == 10 and got.loc[1, "steps"] == got.loc[1, "budget"] == BUDGET
    assert (got["model_latency_s"] > 0).all() and (got["model_calls"] == got["steps"]).all()  # think time per step
    print(got[["seed", "operator", "success", "end_reason", "steps", "budget", "model_latency_s"]].to_string())


def test_the_page_fits_a_laptop_a_desktop_and_a_tablet(served, browser):  # noqa: F811
    from selenium.webdriver.common.by import By

    _, _, urls = served
    d = browser
    d.get(urls["op2"])
    wait_for(d, lambda d: d.find_element(By.ID, "play").get_attribute("data-phase") == "playing", "op2's episode")
    for name, (w, h) in SIZES.items():
        d.set_window_size(w, h)
        wait_for(d, lambda d: js(d, "return document.images.length && [...document.images].every(i => i.complete)"),
                 "images")  # fmt: skip
        over = js(d, OVERFLOW)
        assert over == [], f"{name} {w}x{h}: {over}"


OVERFLOW = """
const w = document.documentElement.clientWidth, out = [];
if (document.documentElement.scrollWidth > w) out.push(`page ${document.documentElement.scrollWidth} > ${w}`);
for (const e of document.querySelectorAll('body *')) {
  const r = e.getBoundingClientRect();
  if (r.width && (r.right > w + 0.5 || r.left < -0.5)) out.push(`${e.tagName}#${e.id} ${r.left}..${r.right}`);
}
return out.slice(0, 5);"""


# a list field is one item per line on the page: two items, two lines
SUMMARY = {**LEARNED, "pre_close_checks": ["the cube is between the pads", "both pads clear the table"]}


def test_under_summary_own_the_page_shows_the_frames_then_takes_the_persons_own_summary(tmp_path, demo_root, browser):  # noqa: F811
    """The summary stage on the page: the demonstration's frames, a refused summary (one field too
    long) said on the page, then the person's summary accepted; the episode carries it."""
    from selenium.webdriver.common.by import By

    d = browser
    d.set_window_size(*SIZES["laptop"])
    phase = lambda want: lambda d: d.find_element(By.ID, "play").get_attribute("data-phase") == want  # noqa: E731
    with study(tmp_path, "summary=own", f"demo_root={demo_root}", "seeds=1") as (_, urls):
        d.get(urls["op1"])
        wait_for(d, phase("studying"), "the summary stage")
        wait_for(d, lambda d: js(d, "return [...document.images].every(i => i.complete && i.naturalWidth)"), "frames")
        captions = [f.text for f in d.find_elements(By.CSS_SELECTOR, ".demo-frames figcaption")]
        assert captions[0] == "grasp_single_cube frame 0/5 (t = 0.00 s)" and len(captions) == 6  # every frame of 6
        assert "grasp the red cube" in d.find_element(By.ID, "study-instruction").text
        for name, (w, h) in SIZES.items():  # the stage fits as the episode's page does
            d.set_window_size(w, h)
            assert js(d, OVERFLOW) == [], name
        d.set_window_size(*SIZES["laptop"])
        for name, value in {**SUMMARY, "grasp_region": "x" * 2001}.items():
            box = d.find_element(By.CSS_SELECTOR, f'#summary-fields textarea[name="{name}"]')
            js(d, "arguments[0].value = arguments[1]", box, "\n".join(value) if isinstance(value, list) else value)
        before = d.find_element(By.ID, "play").get_attribute("data-answered")
        d.find_element(By.ID, "summary-send").click()
        wait_for(d, lambda d: d.find_element(By.ID, "play").get_attribute("data-answered") != before, "the refusal")
        assert "grasp_region" in d.find_element(By.ID, "study-refused").text and phase("studying")(d)
        box = d.find_element(By.CSS_SELECTOR, '#summary-fields textarea[name="grasp_region"]')
        js(d, "arguments[0].value = arguments[1]", box, SUMMARY["grasp_region"])
        d.find_element(By.ID, "summary-send").click()
        wait_for(d, phase("playing"), "the episode (the server builds its env)", timeout=180)
        assert "two opposite side faces" in js(d, "return document.getElementById('system').textContent")
        js(d, "window.confirm = () => true")
        d.find_element(By.ID, "stop").click()
        wait_for(d, phase("over"), "the stopped episode")
    [row] = rows(tmp_path / "study").to_dict("records")
    assert row["summary_source"] == "own" and row["summary_model"] == "human" and row["summary_learned"]
    assert row["operator"] == "op1" and row["end_reason"] == EndReason.STOP
    stored = json.loads((tmp_path / "_summaries" / "small" / "human_op1" / f"{TASK}.json").read_text())
    assert stored["summary"]["pre_close_checks"] == SUMMARY["pre_close_checks"]
    assert len(stored["frames_inspected"]) == 6 and stored["summary_model"] == "human:op1"


@pytest.mark.slow  # two more servers and envs: about two minutes
def test_an_interrupted_study_resumes_losing_nothing(tmp_path, physics_env):
    """Ctrl-C with op2's episode in play: it has no row and its partial record is kept aside; a
    rerun of the same run_id plays it again from its start, keeps the finished row as it was, and
    ends by itself once every episode has its row."""
    run, seeds = tmp_path / "study", SEEDS[:2]
    with study(tmp_path, "seeds=2") as (proc, urls):
        base = origin(urls["op1"])
        requests.get(f"{base}/play/op1/api/state", timeout=180)  # op1 takes the first seed (and builds the env)
        for command in oracle_commands(physics_env, seeds[0]):
            state = requests.post(f"{base}/play/op1/api/answer", json=command, timeout=60).json()
        assert state["end"]["row"]["success"]
        state = requests.get(f"{base}/play/op2/api/state", timeout=60).json()  # op2 takes the second
        assert state["phase"] == "playing" and state["episode"] == 1
        bad = {"action": "gripper.move_world", "axis": "w", "sign": "+", "distance_mm": 20}
        bad = requests.post(f"{base}/play/op2/api/answer", json=bad, timeout=60).json()
        assert "axis" in bad["refused"] and bad["obs"]["step"] == 0  # refused: nothing executed, a repair spent
        moved = requests.post(f"{base}/play/op2/api/answer", json={"action": "gripper.open"}, timeout=60).json()
        assert moved["obs"]["step"] == 1 and moved["refused"] is None
        before = {p.name: p.read_bytes() for p in (run / "outcomes").rglob("*.parquet")}
        assert len(before) == 1
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
    assert {p.name: p.read_bytes() for p in (run / "outcomes").rglob("*.parquet")} == before
    assert len(list(run.rglob("*.interrupted-1"))) == 0  # set aside only when the episode is played again
    with study(tmp_path, "seeds=2") as (again, urls):
        base = origin(urls["op1"])
        state = requests.get(f"{base}/play/op1/api/state", timeout=180).json()
        assert state["obs"]["step"] == 0 and state["obs"]["executed"] == []  # the left episode, from its start
        for command in oracle_commands(physics_env, seeds[1]):
            state = requests.post(f"{base}/play/op1/api/answer", json=command, timeout=60).json()
        assert state["phase"] == "over" and state["end"]["row"]["success"]
        assert again.wait(timeout=60) == 0  # every episode has its row: the study ends by itself
    got = rows(run)
    assert list(got["seed"]) == list(seeds) and list(got["operator"]) == ["op1", "op1"]
    assert list(got["attempt"]) == [1, 1] and got["success"].all()
    assert {p.name: p.read_bytes() for p in (run / "outcomes").rglob("*.parquet") if p.name in before} == before
    assert len(list(run.rglob("*.interrupted-1"))) == 1  # op2's partial record, kept for inspection


def test_the_analysis_counts_operators_as_runs():
    from vabench.analysis.load import prepare

    df = pd.DataFrame(
        [
            {"model": "human", "task": TASK, "seed": s, "run_index": 1, "status": "ok", "success": ok, "operator": op}
            for s, ok, op in ((1, True, "ana"), (2, False, "ana"), (3, True, "ben"), (4, True, "ben"))
        ]
    )
    p, notes = prepare(df)
    assert list(p["run_index"]) == [1, 1, 2, 2] and list(p["run_index_played"]) == [1, 1, 1, 1]
    assert any("2 operator(s) (ana, ben)" in n for n in notes)
    assert p.groupby("run_index")["y"].mean().tolist() == [0.5, 1.0]
