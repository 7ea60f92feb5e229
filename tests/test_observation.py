"""The paper's model boundary over real HTTP (issue 18): under the default ``paper`` observation
profile every request carries exactly the current image(s), the step count, the instruction,
proprioception, the executed actions and two booleans; never the env's reason texts, a body
name, the budget or the steps left. ``explained`` adds them back, labelled as an ablation."""

from __future__ import annotations

import json
import re

import pytest

from tests.openai_server import ScriptedServer
from tests.test_harness import KEY_VAR, llm
from vabench.agents.chat import prompts
from vabench.agents.episode import Episode, HarnessConfig, run_episode
from vabench.results.records import read_events

DOWN = {"action": "gripper.move_world", "axis": "z", "sign": "-", "distance_mm": 100}  # thrice: out of reach
FAR = {"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": 100}  # 4x: clamped at the limit
HISTORY = {"tool": "camera.history", "args": {"step": 0}}  # an earlier image, asked for on purpose
DUAL_DOWN = {"action": "dual_gripper.move_world", "left": {"axis": "z", "sign": "-", "distance_mm": 100}}
DUAL_DOWN["right"] = DUAL_DOWN["left"]
STOP = {"stop": True, "reason": "test over"}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_VAR, "sk-test-not-a-secret-123")


def script(*decisions: dict):
    """Replies in order, per episode: the n-th answer is decisions[n] (counted from the request)."""

    def reply(body: dict) -> str:
        n = sum(m.get("role") == "assistant" for m in body.get("messages", []))
        return json.dumps(decisions[min(n, len(decisions) - 1)])

    return reply


def _texts(message: dict) -> list[str]:
    content = message["content"]
    return [content] if isinstance(content, str) else [p["text"] for p in content if p["type"] == "text"]


def _images(message: dict) -> list[str]:
    content = message["content"]
    return [] if isinstance(content, str) else [p["image_url"]["url"] for p in content if p["type"] == "image_url"]


def _is_observation(message: dict) -> bool:
    return message["role"] == "user" and any(t.startswith("Observation step") for t in _texts(message))


SINGLE = [DOWN] * 3 + [FAR] * 4 + [HISTORY, {"action": "gripper.close"}]
DUAL = [DUAL_DOWN, {"action": "dual_gripper.close"}, HISTORY]
CASES = [
    ("grasp_single_cube", "active", [{"action": "camera.view_side"}, *SINGLE]),
    ("grasp_single_cube", "passive", SINGLE),
    ("lift_pot", "active", [{"action": "camera.view_both_side"}, *DUAL]),
    ("lift_pot", "passive", DUAL),
]


@pytest.mark.parametrize(("task", "protocol", "decisions"), CASES, ids=[f"{t}-{p}" for t, p, _ in CASES])
def test_paper_requests_carry_the_current_images_two_booleans_and_nothing_the_env_explained(
    render_env, tmp_path, task, protocol, decisions
):
    with ScriptedServer(default=script(*decisions, STOP)) as server:
        r = run_episode(
            render_env, llm(server), Episode.of(task, 1000, protocol, env=render_env), tmp_path, HarnessConfig()
        )
        requests = list(server.requests)
    assert (r.status, r.end_reason, r.observation) == ("ok", "stop", "paper") and r.tool_calls == 1
    events = read_events(tmp_path / "events.jsonl")
    feedback = {e["feedback"] for e in events if e["type"] == "action" and e["feedback"]}
    assert len(feedback) >= 2  # the env explained the failed moves (evaluator side: in the record only)
    bodies = [json.dumps(b) for b in requests]
    per_observation = 1 if protocol == "active" else 5
    for body in requests:
        messages = body["messages"]
        observations = [i for i, m in enumerate(messages) if _is_observation(m)]
        current = observations[-1]
        assert len(_images(messages[current])) == per_observation
        assert all(not _images(messages[i]) for i in observations[:-1])  # earlier ones: text stubs only
        later = [u for m in messages[current + 1 :] for u in _images(m)]  # a camera.history answer, if asked
        assert len(later) <= 1
    asked = [e for e in events if e["type"] == "request"]
    assert len(asked) == len(requests)
    for e in asked:  # by file: the images of the current step, plus the one image camera.history returned
        earlier = [i for i in e["images"] if not i.startswith(f"frames/step_{e['step']:03d}_")]
        assert len(e["images"]) - len(earlier) == per_observation
        assert len(earlier) <= 1 and all(i.startswith("frames/step_000_") for i in earlier)
    for text in feedback:
        assert all(text not in b for b in bodies), text
    names = set(render_env.world.bodies)  # privileged: the simulator's internal body names (test only)
    budget = render_env.task.budget
    for body in requests:
        for m in body["messages"]:
            if m["role"] != "user":
                continue
            for text in _texts(m):
                assert "steps left" not in text and f" of {budget}" not in text and "budget" not in text.lower()
                if text.startswith("Observation step"):
                    visible = "\n".join(line for line in text.splitlines() if not line.startswith("Task: "))
                    words = set(re.findall(r"[A-Za-z_]+", visible))
                    assert not names & words, names & words
                    assert re.search(r"last_action_valid: (true|false); last_planner_success: (true|false)", text) or (
                        "Executed actions: none yet" in text
                    )
    system = requests[0]["messages"][0]["content"]
    assert "0.74" not in system and "table top" not in system  # scene geometry is the model's to infer
    assert "stopped short or refused" not in system and "last_planner_success" in system  # no promise of reasons


def test_under_paper_only_the_newest_tool_image_joins_the_current_one(render_env, tmp_path):
    with ScriptedServer(default=script(HISTORY, HISTORY, HISTORY, STOP)) as server:
        r = run_episode(
            render_env,
            llm(server),
            Episode.of("grasp_single_cube", 1000, "active", env=render_env),
            tmp_path,
            HarnessConfig(),
        )
        counts = [sum(len(_images(m)) for m in q["messages"]) for q in server.requests]
    assert r.tool_calls == 3 and counts == [1, 2, 2, 2]


def test_explained_is_the_named_ablation_with_the_reasons_budget_and_history_images(render_env, tmp_path):
    episode = Episode.of("grasp_single_cube", 1000, "active", env=render_env, observation="explained")
    with ScriptedServer(default=script({"action": "camera.view_side"}, DOWN, STOP)) as server:
        r = run_episode(render_env, llm(server), episode, tmp_path)
        last = server.requests[-1]
    assert r.observation == "explained"
    events = read_events(tmp_path / "events.jsonl")
    feedback = [e["feedback"] for e in events if e["type"] == "action" and e["feedback"]]
    text = json.dumps(last)
    assert feedback and all(f in text for f in feedback)
    assert "steps left" in text and prompts.TABLE_HEIGHT in last["messages"][0]["content"]
    assert prompts.EXPLAINED_FEEDBACK in last["messages"][0]["content"]
    assert sum(len(_images(m)) for m in last["messages"]) == 3  # the current image and the two before it


def test_condition_labels_and_folders_keep_the_two_profiles_apart():
    from tests.test_launch import validate
    from vabench.core.condition import Condition
    from vabench.results.episodes import EpisodeSpec

    paper = EpisodeSpec(Condition("m", "active", "own"), "grasp_single_cube", 1, 1)
    explained = EpisodeSpec(Condition("m", "active", "own", observation="explained"), "grasp_single_cube", 1, 1)
    assert paper.condition.label == "m | active | summary own"  # the paper profile keeps the labels of earlier runs
    assert explained.condition.label == "m | active | summary own | observation explained"
    assert paper.key != explained.key and "observation_explained" in explained.key
    assert paper.identity()["observation"] == "paper" and explained.identity()["observation"] == "explained"
    with pytest.raises(ValueError, match="'observation': unknown observation profile 'rich'"):
        validate("run_id=x", "observation=rich")


def test_the_feedback_ablation_runs_end_to_end_and_the_analysis_pairs_it(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from vabench.results.outcomes import read_rows

    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", "vabench.launch", "+experiment=feedback_ablation", "model=random", "seeds=2"]
    cmd += ["tasks=[grasp_single_cube]", "ray.address=none", f"results_dir={tmp_path}", "run_id=fa"]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    df = read_rows(tmp_path / "fa")
    assert sorted(p.name for p in (tmp_path / "fa").iterdir() if p.is_dir()) == ["job0", "job1"]
    assert sorted(df["observation"]) == ["explained", "explained", "paper", "paper"]
    assert set(df["seed"][df["observation"] == "paper"]) == set(df["seed"][df["observation"] == "explained"])
    report = subprocess.run(
        [sys.executable, "-m", "vabench.analysis", str(tmp_path / "fa")], cwd=root, capture_output=True, text=True
    )
    assert report.returncode == 0, report.stderr[-2000:]
    assert (
        "Observation profile: paper vs explained" in report.stdout and "random | active | summary none" in report.stdout
    )
