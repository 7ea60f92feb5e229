"""The agent boundary (vabench.core.boundary): the observation holds only what the paper lets a model
see, the chat prompt is a pure rendering of it, every offline agent reads observations directly,
and no code outside the chat harness reads prompt text."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_privilege import ALLOWED_PROPRIO
from vabench.agents.chat import agent as chat
from vabench.agents.chat import prompts
from vabench.agents.chat.harness_config import HarnessConfig
from vabench.agents.chat.model import Model, ModelConfig, Reply
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.kinds import OFFLINE_AGENTS, make_model
from vabench.agents.models.offline import OracleAgent, RandomAgent, Seated, replay
from vabench.agents.models.policy import PolicyAgent
from vabench.agents.models.posetext import PosetextAgent
from vabench.agents.models.servo import ServoAgent
from vabench.core import boundary
from vabench.core.boundary import Agent, Command, Observation, Stop, ToolCall, observation_of
from vabench.results.recordfile import read_events

ROOT = Path(__file__).resolve().parents[1] / "vabench"
# What an observation may carry (docs/design.md "One agent boundary"): a new field is a new input
# to every agent, and must be argued against the paper (3.4, C.6-C.8, D.1-D.2) before it is added here.
ALLOWED = {
    "step", "instruction", "protocol", "images", "arms", "executed", "camera_chain", "actions", "tools",
    "feedback", "summary", "budget", "budget_left", "objects", "tool_result",
}  # fmt: skip
# The chat harness (vabench/agents/chat/) renders the prompt's words; nothing else parses them.
PROMPT_MARKERS = ("Robot state", "last_action_valid:", "arm: gripper", "Task: (", "Observation step")


def test_the_observation_holds_only_the_allowed_fields():
    assert {f.name for f in dataclasses.fields(Observation)} == ALLOWED
    assert {f.name for f in dataclasses.fields(boundary.ArmProprio)} == ALLOWED_PROPRIO
    assert {f.name for f in dataclasses.fields(boundary.Feedback)} == {"action", "valid", "planner_success", "text"}


def test_the_paper_profile_hides_the_budget_and_the_reason_text(physics_env):
    physics_env.reset("grasp_single_cube", 1000)
    step = physics_env.step({"action": "gripper.move_world", "axis": "z", "sign": "-", "distance_mm": 100})
    obs = step.observation
    assert obs.feedback  # the env says why the move stopped short or was clamped
    paper, explained = observation_of(obs), observation_of(obs, explained=True)
    assert (paper.budget, paper.budget_left, paper.feedback.text) == (None, None, None)
    assert (explained.budget, explained.budget_left, explained.feedback.text) == (50, 49, obs.feedback)
    assert paper.feedback.valid == obs.action_valid and paper.arms["right"] == obs.proprio["right"]
    assert paper.arms["right"].fingers is None  # the finger joints: control=ee_delta only (the prompt: open/closed)


class _Capture(Model):
    """A chat model that records each request and stops after ``n`` decisions."""

    name = "capture"

    def __init__(self, n: int = 3):
        self.requests, self.n = [], n

    def complete(self, messages):
        self.requests.append(messages)
        move = {"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": 5}
        return Reply(json.dumps({"stop": True} if len(self.requests) > self.n else move))


def test_the_chat_prompt_is_a_rendering_of_the_observation(physics_env, tmp_path, monkeypatch):
    """Each request's newest text is exactly the observation the loop built, rendered: nothing the
    observation does not hold reaches a chat model."""
    seen = []
    act = chat.ChatAgent.act

    def spy(self, obs):
        seen.append(obs)
        return act(self, obs)

    monkeypatch.setattr(chat.ChatAgent, "act", spy)
    model = _Capture()
    run_episode(physics_env, model, Episode.of("grasp_single_cube", 1000, env=physics_env), tmp_path)
    assert len(seen) == len(model.requests) == 4
    for obs, messages in zip(seen, model.requests, strict=True):
        content = messages[-1]["content"]
        text = content if isinstance(content, str) else next(p["text"] for p in content if p["type"] == "text")
        assert text == prompts.observation_text(obs, 20, "paper", "none")
        assert prompts.observation_text(obs, 20, "paper", "none") == text  # pure: the same observation, the same text


def test_every_offline_agent_reads_observations():
    """Only a chat model is asked through the chat harness; every offline agent meets the boundary."""
    for name, cls in {
        "oracle": OracleAgent,
        "random": RandomAgent,
        "servo": ServoAgent,
        "posetext": PosetextAgent,
    }.items():
        agent = make_model(ModelConfig(id=name))
        assert isinstance(agent, cls) and isinstance(agent, Agent) and not isinstance(agent, Model), name
    assert issubclass(PolicyAgent, Agent) and not issubclass(PolicyAgent, Model)
    # model=mcp and model=human: played from outside through a seat (vabench.run.seat), never a chat request
    assert not isinstance(make_model(ModelConfig(id="human")), Model)
    assert set(OFFLINE_AGENTS) == {"oracle", "random", "servo", "posetext", "policy", "replay", "mcp", "human"}
    assert isinstance(make_model(ModelConfig(id="mcp")), Seated)  # played through a seat (python -m vabench.mcp)


def test_no_code_outside_the_chat_harness_reads_prompt_text():
    """The servo, posetext and policy agents once re-read the prompt with regexes; now only the
    chat harness spells the prompt's words (a planted reader would fail here)."""
    readers = []
    for path in ROOT.rglob("*.py"):
        if path.relative_to(ROOT).parts[:2] == ("agents", "chat"):
            continue
        text = path.read_text()
        readers += [f"{path.relative_to(ROOT)}: {m}" for m in PROMPT_MARKERS if m in text]
    assert readers == []


@pytest.mark.parametrize("agent", [OracleAgent, lambda: RandomAgent(seed=2)], ids=["oracle", "random"])
def test_a_direct_agents_record_keeps_its_answers_and_replays_them(physics_env, tmp_path, agent):
    first = run_episode(physics_env, agent(), Episode.of("grasp_single_cube", 1000, env=physics_env), tmp_path / "a")
    events = read_events(tmp_path / "a" / "events.jsonl")
    answers = [e for e in events if e["type"] == "answer"]
    assert not [e for e in events if e["type"] in ("request", "reply")]  # no chat: nothing was rendered for it
    assert len(answers) == first.model_calls and sum(e["type"] == "turn" for e in events) == first.steps + 1 - (
        first.end_reason != "stop"
    )
    again = replay(tmp_path / "a" / "events.jsonl")
    assert isinstance(again, Agent)
    second = run_episode(physics_env, again, Episode.of("grasp_single_cube", 1000, env=physics_env), tmp_path / "b")
    assert (second.steps, second.end_reason, second.success) == (first.steps, first.end_reason, first.success)
    labels = [[e["label"] for e in read_events(tmp_path / d / "events.jsonl") if e["type"] == "action"] for d in "ab"]
    assert labels[0] == labels[1]


class _Probe(Agent):
    """Answers a bad command, then a tool call, then stops; keeps what it was shown."""

    name = "probe"

    def __init__(self):
        self.seen: list[Observation] = []

    def start(self, brief) -> None:
        self.seen.clear()

    def act(self, obs):
        self.seen.append(obs)
        script = [
            Command({"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": 500}, "too far"),
            ToolCall("camera.history", {"step": 0}, "what did I see"),
            Stop("done"),
        ]
        return script[len(self.seen) - 1]


def test_a_direct_agent_gets_pixels_never_record_files_and_its_record_replays_exactly(render_env, tmp_path):
    """An agent that reads observations is handed no path into the record (whose folder holds the
    evaluator's state) and a tool's images as arrays; its rejected answer and its tool call replay."""
    agent = _Probe()
    first = run_episode(render_env, agent, Episode.of("grasp_single_cube", 1000, env=render_env), tmp_path / "a")
    assert (first.repairs, first.tool_calls, first.end_reason) == (1, 1, "stop")
    assert all(f.file is None for obs in agent.seen for f in obs.images)
    result = agent.seen[-1].tool_result
    assert result.images == [] and result.data["images"][0].ndim == 3
    second = run_episode(
        render_env, replay(tmp_path / "a" / "events.jsonl"), Episode.of("grasp_single_cube", 1000, env=render_env),
        tmp_path / "b",
    )  # fmt: skip
    assert (second.repairs, second.tool_calls, second.end_reason) == (1, 1, "stop")
    kept = [
        [e for e in read_events(tmp_path / d / "events.jsonl") if e["type"] in ("rejected", "decision")] for d in "ab"
    ]
    assert [{k: v for k, v in e.items() if k not in ("seq", "time")} for e in kept[0]] == [
        {k: v for k, v in e.items() if k not in ("seq", "time")} for e in kept[1]
    ]


def test_a_replayed_chat_record_keeps_its_own_step_budget(tmp_path):
    """A chat record replays through the chat harness with the budget the record had (a policy's
    10x), not the task's."""
    record = tmp_path / "events.jsonl"
    start = {"type": "episode_start", "task": "grasp_single_cube", "seed": 1000, "protocol": "active", "budget": 7}
    record.write_text(json.dumps(start) + "\n" + json.dumps({"type": "reply", "text": "{}"}) + "\n")
    wrapped = chat.ChatAgent(replay(record), None, HarnessConfig(), call_tool=None)
    assert wrapped.step_budget(50) == 7


def test_the_plan_of_a_replay_reads_either_kind_of_record(physics_env, tmp_path):
    """plan=true with model=replay counts a direct agent's answers as it counts a chat model's replies."""
    run_episode(physics_env, OracleAgent(), Episode.of("grasp_single_cube", 1000, env=physics_env), tmp_path / "a")
    args = ["plan=true", "model=replay", f"model.extra.record={tmp_path / 'a' / 'events.jsonl'}"]
    args += ["tasks=[grasp_single_cube]", "seeds=[1000]", f"results_dir={tmp_path}", "render=small"]
    done = subprocess.run([sys.executable, "-m", "vabench.launch", *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "the record's answers" in done.stdout, done.stdout[-2000:]
