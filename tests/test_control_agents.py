"""Every agent kind under control=ee_delta either plays control steps or is refused with one line
(vabench.envs.control.refusal, asked by the launcher and the episode loop): none sends the paper's
commands into a control-rate episode. The random agent is the floor under both interfaces."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.test_launch import validate
from vabench.agents.chat.model import ModelConfig
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.kinds import OFFLINE_AGENTS, make_model
from vabench.agents.models.offline import RandomAgent, replay
from vabench.core.boundary import Brief, Control
from vabench.core.errors import ConfigError
from vabench.envs import RENDER_PRESETS, EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.control import MAX_STEP_M, MAX_STEP_RAD, control_budget
from vabench.envs.seeds import eval_seeds
from vabench.envs.tasks import task_class
from vabench.results.recordfile import read_events

TASK = "grasp_single_cube"
SEED = eval_seeds(TASK)[0]
EPISODE = (f"tasks=[{TASK}]", f"seeds=[{SEED}]")
REFUSED = ("servo", "posetext", "mcp", "human")  # the paper's commands only
PLAYS = ("random", "policy", "oracle", "replay")  # replay: as its record did (a commands record is refused)


def _record(path, payloads: list[dict]):
    """A minimal episode record of TASK/SEED whose agent answered ``payloads``."""
    start = {"type": "episode_start", "task": TASK, "seed": SEED, "protocol": "active", "model": "x"}
    lines = [start, *({"type": "answer", "payload": p} for p in payloads)]
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    return path


def test_every_offline_kind_is_either_refused_or_plays_control_steps():
    assert set(REFUSED) | set(PLAYS) == set(OFFLINE_AGENTS) and not set(REFUSED) & set(PLAYS)


@pytest.mark.parametrize("model", REFUSED)
def test_a_kind_that_plays_commands_only_is_refused_with_one_line(model):
    with pytest.raises(ConfigError) as refused:
        validate(f"model={model}", "control=ee_delta", *EPISODE)
    message = str(refused.value)
    assert message == f"control=ee_delta: model={model} plays the paper's commands only; leave control unset"
    assert validate(f"model={model}", *EPISODE).condition.control == "commands"  # the paper's interface stays


def test_a_replay_plays_the_interface_its_record_played(tmp_path):
    commands = _record(tmp_path / "c.jsonl", [{"action": "gripper.open", "reason": ""}])
    controls = _record(tmp_path / "e.jsonl", [{"ee_delta": {"right": [0.0] * 7}, "reason": ""}])
    with pytest.raises(ConfigError, match="model=replay:x plays the paper.s commands only"):
        validate("model=replay", f"model.extra.record={commands}", "control=ee_delta", *EPISODE)
    run = validate("model=replay", f"model.extra.record={controls}", "control=ee_delta", *EPISODE)
    assert run.condition.control == "ee_delta"
    with pytest.raises(ConfigError, match="model=replay:x answers control steps .*; add control=ee_delta"):
        validate("model=replay", f"model.extra.record={controls}", *EPISODE)  # the paper's commands, the default
    assert replay(commands).plays_commands and not replay(controls).plays_commands
    assert replay(controls).plays_controls and not replay(commands).plays_controls


def test_the_episode_loop_refuses_a_commands_agent_as_the_launcher_does(tmp_path):
    env = VABenchEnv(EnvConfig(render=False, control="ee_delta"))
    try:
        servo = make_model(ModelConfig(id="servo"))
        with pytest.raises(ConfigError, match="model=servo plays the paper's commands only"):
            run_episode(env, servo, Episode.of(TASK, SEED, env=env, control="ee_delta"), tmp_path)
    finally:
        env.close()
    assert not (tmp_path / "events.jsonl").exists()  # refused before the episode began


def _brief(seed: int, arms=("right",)) -> Brief:
    return Brief(TASK, seed, arms, "active", control="ee_delta")


def test_random_control_steps_are_seeded_and_within_the_limits():
    def steps(agent_seed: int, episode_seed: int, arms=("right",)) -> list[Control]:
        agent = RandomAgent("random", agent_seed)
        agent.start(_brief(episode_seed, arms))
        return [agent.act(None) for _ in range(50)]

    first = steps(0, SEED)
    assert all(isinstance(a, Control) for a in first)
    assert [a.deltas for a in first] == [a.deltas for a in steps(0, SEED)]  # deterministic
    assert [a.deltas for a in first] != [a.deltas for a in steps(1, SEED)]
    v = np.array([a.deltas["right"] for a in first])
    assert v.shape == (50, 7)
    assert (np.linalg.norm(v[:, :3], axis=1) <= MAX_STEP_M + 1e-12).all()
    assert (np.linalg.norm(v[:, 3:6], axis=1) <= MAX_STEP_RAD + 1e-12).all()
    assert ((v[:, 6] >= 0) & (v[:, 6] <= 1)).all() and v[:, 6].std() > 0.2  # the gripper spans 0..1
    assert (np.abs(v[:, :6]) > 0).all()  # every axis moves: not a degenerate draw
    two = steps(0, SEED, ("left", "right"))
    assert all(set(a.deltas) == {"left", "right"} for a in two)


def test_random_plays_a_few_ee_delta_steps_all_valid(tmp_path):
    env = VABenchEnv(
        EnvConfig(
            preset=RENDER_PRESETS["small"], recording=RecordingConfig(enabled=False, video=False), control="ee_delta"
        )
    )
    try:
        budget = 5 / control_budget(task_class(TASK).budget, TASK)  # five control steps
        episode = Episode.of(TASK, SEED, env=env, control="ee_delta", budget_scale=budget)
        row = run_episode(env, make_model(ModelConfig(id="random")), episode, tmp_path / "ep")
    finally:
        env.close()
    assert (row.status, row.control, row.end_reason, row.steps) == ("ok", "ee_delta", "budget", 5)
    assert (row.robot_actions, row.invalid_actions) == (5, 0)
    actions = [e for e in read_events(tmp_path / "ep" / "events.jsonl") if e["type"] == "action"]
    assert len(actions) == 5 and all(set(a["payload"]) == {"ee_delta"} for a in actions)
