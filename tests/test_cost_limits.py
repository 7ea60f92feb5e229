"""Spending limits (model.max_cost_usd for the run, harness.max_episode_cost_usd per episode):
reaching one sends no further request; the episode ends as interrupted (no row: neither a failure
nor infra); a rerun counts on from what the run folder records and, with a higher limit and the
response cache, ends with the uncapped run's table having paid for each reply once."""

from __future__ import annotations

import json
import pickle
import re

import pytest

from tests.openai_server import ScriptedServer
from tests.test_launch import composed
from vabench.agents.chat.model import ModelConfig
from vabench.agents.episode import Episode, HarnessConfig, run_episode
from vabench.agents.models.llm import LiteLLMModel, prices
from vabench.agents.models.ratelimit import RateLimiter
from vabench.core.errors import CostCapReached
from vabench.core.vocab import CostLimit
from vabench.envs.seeds import eval_seeds
from vabench.results.outcometable import load
from vabench.results.recordfile import read_events
from vabench.run.config.run import ConfigError, from_config
from vabench.run.driver import run_experiment

KEY_VAR = "VABENCH_COST_TEST_KEY"
USAGE = {"prompt_tokens": 1000, "completion_tokens": 100}
MOVE = {"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 10}
SAME = ["task", "seed", "success", "end_reason", "steps", "robot_actions", "checkpoints_done", "status", "attempt"]


def per_call() -> float:
    p = prices("openai/gpt-4o")
    return USAGE["prompt_tokens"] * p.input + USAGE["completion_tokens"] * p.output


def four_moves(body: dict) -> dict:
    said = sum(m.get("role") == "assistant" for m in body["messages"])
    return {"content": json.dumps(MOVE if said < 4 else {"stop": True}), "usage": USAGE}


@pytest.fixture
def keyed(monkeypatch):
    monkeypatch.setenv(KEY_VAR, "sk-fake-cost-test")


def test_the_limiter_keeps_the_spend_and_a_copy_carries_it_over():
    limiter = RateLimiter(None, None, spent=0.5)
    limiter.charge(0.25)
    limiter.charge(-1)  # never a refund
    assert limiter.spent() == 0.75 and limiter.stats()["spent_usd"] == 0.75
    assert pickle.loads(pickle.dumps(limiter)).spent() == 0.75


def test_the_run_limit_stops_before_the_request_that_would_pass_it(keyed):
    with ScriptedServer(default={"content": "{}", "usage": USAGE}) as server:
        cap = 1.5 * per_call()
        model = LiteLLMModel(ModelConfig("openai/gpt-4o", api_base=server.url, api_key_env=KEY_VAR, max_cost_usd=cap))
        model.complete([{"role": "user", "content": "a"}])
        model.complete([{"role": "user", "content": "b"}])
        with pytest.raises(CostCapReached) as stop:
            model.complete([{"role": "user", "content": "c"}])
        assert len(server.requests) == 2  # nothing sent once the limit is reached
    assert stop.value.limit == CostLimit.RUN and cap <= stop.value.spent < cap + per_call()
    assert "model.max_cost_usd" in str(stop.value)


def test_a_limit_on_a_model_without_a_price_is_a_config_error():
    with pytest.raises(ConfigError, match="max_cost_usd.*price map"):
        from_config(composed("model=vllm", "model.max_cost_usd=5"), __import__("pathlib").Path("/tmp/vabench-x"))
    with pytest.raises(ConfigError, match="harness.max_episode_cost_usd"):
        from_config(composed("harness.max_episode_cost_usd=0"), __import__("pathlib").Path("/tmp/vabench-x"))


def test_the_episode_limit_ends_the_episode_as_interrupted(render_env, tmp_path, keyed):
    with ScriptedServer(default=four_moves) as server:
        model = LiteLLMModel(ModelConfig("openai/gpt-4o", api_base=server.url, api_key_env=KEY_VAR))
        harness = HarnessConfig(max_episode_cost_usd=2.5 * per_call())
        task = "grasp_single_cube"
        with pytest.raises(CostCapReached) as stop:
            run_episode(render_env, model, Episode.of(task, eval_seeds(task)[0], env=render_env), tmp_path, harness)
        assert len(server.requests) == 3 and stop.value.limit == CostLimit.EPISODE
    events = read_events(tmp_path / "events.jsonl")
    assert events[-1]["type"] == "interrupted" and not any(e["type"] == "result" for e in events)


def _run(server, tmp_path, run_id: str, *extra: str):
    overrides = [
        "model=openai", "model.id=openai/gpt-4o", f"model.api_base={server.url}", f"model.api_key_env={KEY_VAR}",
        "model.cache=on", "tasks=[grasp_single_cube]", "seeds=2", "render=small", "ray.address=none",
        f"results_dir={tmp_path}", f"run_id={run_id}", *extra,
    ]  # fmt: skip
    run = from_config(composed(*overrides), tmp_path / run_id)
    return run_experiment(run, progress=False, log=lambda m: None)


def test_a_capped_run_stops_and_a_rerun_with_a_higher_limit_ends_as_the_uncapped_one(tmp_path, keyed):
    with ScriptedServer(default=four_moves) as server:
        whole = _run(server, tmp_path, "whole")
        sent_whole = len(server.requests)
        assert sent_whole == 10 and whole["cost_usd"].sum() == pytest.approx(10 * per_call())
        cap = 3.5 * per_call()  # reached by the first episode's fourth call
        with pytest.raises(CostCapReached) as stop:
            _run(server, tmp_path, "capped", f"model.max_cost_usd={cap}")
        assert re.fullmatch(
            r"stopped: model.max_cost_usd = .* reached.*higher limit to resume", stop.value.line("capped")
        )
        assert len(server.requests) - sent_whole == 4  # its fifth request was never sent...
        assert not (tmp_path / "capped" / "outcomes").exists()  # ...and no row: not failed, not infra
        with pytest.raises(CostCapReached, match="model.max_cost_usd"):  # the same limit: it counts on, sends nothing
            _run(server, tmp_path, "capped", f"model.max_cost_usd={cap}")
        assert len(server.requests) - sent_whole == 4
        capped = _run(server, tmp_path, "capped", "model.max_cost_usd=1.0")
        assert len(server.requests) - sent_whole == 10  # every reply paid once, over three launches
    key = ["task", "seed"]
    a, b = capped[SAME].sort_values(key).reset_index(drop=True), whole[SAME].sort_values(key).reset_index(drop=True)
    assert a.equals(b)
    assert capped["cost_usd"].sum() + 4 * per_call() == pytest.approx(whole["cost_usd"].sum())
    assert capped["cache_hits"].sum() == 4


def test_an_episode_limit_lets_the_others_run_and_says_so(tmp_path, keyed):
    with ScriptedServer(default=four_moves) as server:
        with pytest.raises(CostCapReached, match=r"2 episode\(s\) interrupted at harness.max_episode_cost_usd"):
            _run(server, tmp_path, "per", f"harness.max_episode_cost_usd={2.5 * per_call()}")
        assert len(server.requests) == 6  # three calls in each episode
        rows = _run(server, tmp_path, "per", "harness.max_episode_cost_usd=1.0")
    assert len(rows) == 2 and rows["status"].eq("ok").all() and rows["cache_hits"].sum() == 6
    assert len(load(tmp_path / "per")) == 2
