"""Summary learning over real HTTP, and the learned summary reaching evaluation prompts."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.openai_server import ScriptedServer
from vabench.agents.chat.model import ModelConfig
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.kinds import make_model
from vabench.agents.summaries.learning import learn_summary
from vabench.agents.summaries.summary_store import SummaryStore, resolve_summary, summary_identity, text_digest

KEY_VAR = "VABENCH_TEST_KEY"
SUMMARY = {
    "grasp_object_part": "the red cube body",
    "grasp_region": "the middle band of two opposite side faces",
    "grasp_height_or_depth": "pads at about half the cube height",
    "finger_placement": "one pad on each opposite face",
    "approach_strategy": "from directly above after aligning over the cube",
    "posture_or_rotation": "fingers pointing down, closing axis across two faces",
    "pre_close_checks": ["the cube is centred between the pads from two views"],
    "test_lift_rule": "lift well clear of the table, about ten centimetres",
}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_VAR, "sk-test-learning")


def llm(server, name="openai/learner"):
    return make_model(ModelConfig(id=name, api_base=server.url, api_key_env=KEY_VAR, backoff_initial_s=0.01))


def tool(name, **args):
    return json.dumps({"tool": name, "args": args})


def test_learn_is_refused_before_three_distinct_frames_then_accepted(tmp_path, demo_root):
    store = SummaryStore(tmp_path / "summaries")
    with ScriptedServer() as server:
        server.script(
            tool("expert.frame", step=0),  # refused: retrieve first
            tool("expert.retrieve", mode="trajectory"),
            tool("expert.frame", steps=[0, 1, 1]),
            tool("expert.learn", **SUMMARY),  # refused: 2 distinct frames
            json.dumps({"action": "gripper.close"}),  # not allowed while learning: a repair
            tool("expert.frame", steps=[1, 5]),
            tool("expert.learn", **SUMMARY),
        )
        result = learn_summary(llm(server), "grasp_single_cube", store, tmp_path / "learn", demo_root)
        texts = [r["messages"][-1]["content"] for r in server.requests]
    assert result.end_reason == "learned" and result.usage.model_calls == 7
    first = texts[1] if isinstance(texts[1], str) else texts[1][0]["text"]
    assert "call expert.retrieve" in first
    refused = texts[4] if isinstance(texts[4], str) else texts[4][0]["text"]
    assert "incomplete: grasp_single_cube 2/3" in refused and "saved" not in refused
    assert "only the tools expert.retrieve" in (texts[5] if isinstance(texts[5], str) else texts[5][0]["text"])
    three_images = [p for p in server.requests[3]["messages"][-1]["content"] if p["type"] == "image_url"]
    assert len(three_images) == 2  # frames 0 and 1 (the repeat is not sent twice)
    stored = store.load("openai/learner", "grasp_single_cube")
    assert stored.fields["grasp_region"] == SUMMARY["grasp_region"] and stored.summary_model == "openai/learner"
    assert sorted(map(tuple, stored.frames_inspected)) == [("grasp_single_cube", i) for i in (0, 1, 5)]
    assert (tmp_path / "learn" / "attempt_1" / "events.jsonl").exists()


def test_learned_summary_is_injected_into_evaluation(render_env, tmp_path, demo_root):
    store = SummaryStore(tmp_path / "summaries")
    with ScriptedServer() as server:
        server.script(
            tool("expert.retrieve"),
            tool("expert.frame", steps=[0, 2, 4]),
            tool("expert.learn", **SUMMARY),
            json.dumps({"stop": True}),
        )
        model = llm(server)
        assert resolve_summary(store, "own", model.name, "grasp_single_cube") is None  # not learned yet
        learn_summary(model, "grasp_single_cube", store, tmp_path / "learn", demo_root)
        summary = resolve_summary(store, "own", model.name, "grasp_single_cube")
        told = summary_identity(summary, "own")
        episode = dataclasses.replace(
            Episode.of("grasp_single_cube", 1000, summary_source="own", env=render_env), summary=summary
        )
        r = run_episode(render_env, model, episode, tmp_path / "ep")
        system = server.requests[-1]["messages"][0]["content"]
    assert "the middle band of two opposite side faces" in system and "openai/learner" not in system  # no author
    assert (r.summary_source, r.summary_model, r.end_reason) == ("own", "openai/learner", "stop")
    assert summary.text() in system and r.summary_learned is True
    assert r.summary_digest == text_digest(summary.text()) == told["summary_digest"]  # the text the model got
    assert resolve_summary(store, "none", model.name, "grasp_single_cube") is None


def test_learning_that_cannot_reach_the_provider_is_infra(tmp_path, demo_root):
    store = SummaryStore(tmp_path / "summaries")
    with ScriptedServer(default={"status": 503}) as server:
        result = learn_summary(llm(server), "grasp_single_cube", store, tmp_path / "learn", demo_root)
        assert len(server.requests) == 7  # one attempt, 6 retries, then no more learning attempts
    assert (result.end_reason, result.summary, result.attempts) == ("infra_error", None, 1)
    assert "gave up after" in result.error and not store.has("openai/learner", "grasp_single_cube")
