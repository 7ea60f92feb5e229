"""plan=true: what a run will cost, printed before anything runs: no key, no Ray, no request, no
folder; its expected figures come from a previous run folder when one is named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_launch import composed
from vabench.agents.chat.tokens import image_tokens
from vabench.core.vocab import PROTOCOLS, EndReason, Status
from vabench.envs.tasks import task_class
from vabench.envs.tasks.registry import TASKS
from vabench.launch.words import canonical, misspelt
from vabench.plan.estimate import prior_episode
from vabench.plan.priors import cell, load
from vabench.plan.report import plan_text
from vabench.results.outcomes import OutcomeRow, write_row
from vabench.run.config.run import PlanConfig, from_config

ROOT = Path(__file__).resolve().parent.parent


def _run(tmp_path, *overrides):
    return from_config(composed(*overrides, f"results_dir={tmp_path}"), tmp_path / "planned")


def test_the_launcher_plans_without_a_key_and_writes_nothing(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    results = tmp_path / "results"
    args = ["+experiment=main", "model=openai", "model.id=openai/gpt-4o", f"results_dir={results}", "plan=true"]
    args += ["ray.address=local", "plan.difference=0.1"]
    done = subprocess.run(
        [sys.executable, "-m", "vabench.launch", *args], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert not results.exists() and not list(tmp_path.iterdir())  # no run folder, no results folder
    out = done.stdout
    assert "openai/gpt-4o | active | summary own: 840 episodes" in out
    assert "summary learning: 14 summaries to learn" in out and "80 % power" in out
    assert "prices per 1M tokens" in out and "input $2.5, cached input $1.25" in out


def test_plan_keys_need_plan_true_and_are_checked():
    assert canonical(["seeds=2", "plan=true", "plan.difference=0.1"]) == [
        "seeds=2",
        "plan.enabled=true",
        "plan.difference=0.1",
    ]
    with pytest.raises(ValueError, match="'plan.difference' needs plan=true"):
        PlanConfig(difference=0.1)
    with pytest.raises(ValueError, match="'plan.difference' must be in"):
        PlanConfig(enabled=True, difference=2)
    with pytest.raises(ValueError, match="'plan.calibrate' = nowhere: not a run folder"):
        PlanConfig(enabled=True, calibrate="nowhere")


def test_the_prior_follows_the_budget_the_conversation_and_the_provider_image_rule(tmp_path):
    openai = _run(tmp_path, "+experiment=main", "model=openai")
    claude = _run(tmp_path, "+experiment=main", "model=anthropic")
    task = "place_cube_in_bowl"
    a, c = prior_episode(openai, task, "active"), prior_episode(claude, task, "active")
    budget, prior = task_class(task).budget, cell(task, "active")
    mixed = (1 - prior.success_rate) * prior.failure.share + prior.success_rate * prior.success.share
    assert a.calls_max == budget * 20 and a.calls > budget * mixed  # repairs: more calls than steps
    assert a.success == prior.success_rate and 0 < a.success < 1
    assert a.image == pytest.approx(a.calls * image_tokens("openai/gpt-4o", 1280, 960)) and a.image / a.calls == 765
    assert c.image / c.calls == image_tokens("anthropic/x", 1280, 960) > 1500  # (w x h) / 750 after the resize
    assert 0.8 < a.cached / a.input < 1 and a.written == 0 < c.written  # OpenAI reads alone; Anthropic also writes
    assert c.reasoning == pytest.approx(c.calls * 0.6 * 1024) and a.reasoning == 0  # thinking; gpt-4o reasons not
    passive = prior_episode(openai, task, "passive")
    assert passive.image / passive.calls == 5 * image_tokens("openai/gpt-4o", 384, 288)


def _figures(prior) -> tuple:
    """What a cell's priors say, their sources aside."""
    arms = (prior.failure, prior.success)
    return (prior.success_rate, *((a.share, a.calls_per_step, a.obs_tokens, a.turn_tokens) for a in arms))


def test_the_plan_differs_per_protocol_where_the_measured_priors_differ(tmp_path):
    run = _run(tmp_path, "+experiment=passive_ablation", "model=openai", "model.id=openai/gpt-4o")
    differ = 0
    for task in run.tasks:
        active, passive = prior_episode(run, task, "active"), prior_episode(run, task, "passive")
        if _figures(cell(task, "active")) != _figures(cell(task, "passive")):
            differ += 1
            assert (active.calls, active.input, active.success) != (passive.calls, passive.input, passive.success)
    assert differ == len(run.tasks)  # every base task was measured in both protocols
    text = plan_text(run, PlanConfig(enabled=True))
    lines = {line.split(":")[0].strip(): line for line in text.splitlines() if "summary own:" in line}
    each = {k: line.split("each about ")[1] for k, line in lines.items()}
    assert len(each) == 2 and len(set(each.values())) == 2, text  # active and passive: their own calls, $ and s


def test_the_priors_file_parses_and_each_prior_names_its_source():
    doc = load()
    assert doc["made"]["by"] == "benchmarks/plan_priors.py" and doc["made"]["commit"] and doc["made"]["date"]
    assert "paper's success rate" in doc["assumption"]
    keys = {(c["protocol"], c["task"]) for c in doc["cells"]}
    assert keys == {(p, t) for p in PROTOCOLS for t in TASKS}  # every protocol, track and task
    for c in doc["cells"]:
        assert 0 <= c["success_rate"] <= 1 and "Table" in c["success_source"]
        for arm in c["measured"].values():
            assert "benchmarks/plan_priors.py" in arm["source"] and arm["episodes"] >= 1
            assert arm["steps"] <= c["budget"] and arm["calls"] >= arm["steps"] and arm["obs_tokens"] > 0
        if not c["measured"]:
            assert c["not_measured"]
        prior = cell(c["task"], c["protocol"])  # every cell resolves, an unmeasured one to a lender it names
        assert (prior.borrowed is None) == bool(c["measured"])
        assert prior.failure.source and prior.success.source


OFFLINE = {
    "oracle": (),
    "random": (),
    "servo": (),
    "posetext": (),
    "policy": ("budget_scale=2",),
    "replay": ("model.extra.record={record}", "seeds=[1000]", "tasks=[grasp_single_cube]"),
}


@pytest.mark.parametrize("agent", sorted(OFFLINE))
def test_an_offline_agent_plans_free_with_no_price_line(tmp_path, agent):
    record = tmp_path / "events.jsonl"
    start = {
        "type": "episode_start",
        "seq": 0,
        "task": "grasp_single_cube",
        "seed": 1000,
        "protocol": "active",
        "model": "oracle",
    }
    replies = [{"type": "reply", "seq": i + 1, "text": "{}"} for i in range(7)]
    record.write_text("\n".join(json.dumps(e) for e in [start, *replies]) + "\n")
    extra = [o.format(record=record) for o in OFFLINE[agent]]
    run = _run(tmp_path, f"model={agent}", "tasks=[grasp_single_cube,place_cube_in_bowl]", *extra)
    text = plan_text(run, PlanConfig(enabled=True, difference=0.2))
    assert text.count("free") == 1 + 5 and "offline agent: free" in text  # one line, and each design: free
    for word in ("price", "$", "unknown", "tokens", "cost"):
        assert word not in text.replace("no tokens, no price", ""), (word, text)
    most = {"policy": 100, "replay": 7}.get(agent, 50)  # the policy's own budget (2 x 50); the record's replies
    assert f"at most {most}" in text


def test_the_headline_cost_follows_the_cache_setting(tmp_path):
    def headline(*overrides):
        text = plan_text(_run(tmp_path, "model=anthropic", "tasks=[grasp_single_cube]", *overrides), PlanConfig(True))
        line = next(line for line in text.splitlines() if line.startswith("cost: "))
        return float(line.split("(")[1].split(" per episode")[0].strip("$")), text

    on, text_on = headline()
    off, text_off = headline("model.prompt_cache=false")
    assert on < off / 2  # Anthropic bills a cached read at a tenth
    assert "without a prompt cache: episodes $" in text_on and f"${off:.2f} per episode" in text_on
    assert "prompt cache off (model.prompt_cache=false" in text_off and f"${on:.2f} per episode" in text_off
    assert "read from the prompt cache 0, written 0" in text_off
    only = plan_text(_run(tmp_path, "model=openai", "tasks=[grasp_single_cube]", "model.cache=only"), PlanConfig(True))
    assert "cost: $0.00 (model.cache=only" in only


def test_a_calibration_run_replaces_the_priors(tmp_path):
    folder = tmp_path / "before"
    for seed, calls in ((1, 10), (2, 30)):
        row = OutcomeRow(
            run_id="before", task="grasp_single_cube", protocol="active", seed=seed, model_calls=calls,
            prompt_tokens=calls * 5000, cached_tokens=calls * 4000, completion_tokens=calls * 100, wall_s=60.0,
            success=seed == 1, status=Status.OK, end_reason=EndReason.SUCCESS if seed == 1 else EndReason.BUDGET,
        )  # fmt: skip
        write_row(folder / "outcomes" / f"seed{seed}.parquet", row)
    run = _run(tmp_path, "model=openai", "tasks=[grasp_single_cube]", "seeds=2", "ray.address=none")
    text = plan_text(run, PlanConfig(enabled=True, calibrate=str(folder), difference=0.2))
    assert "expected figures from: calibrated" in text
    assert "model calls per episode: expected 20.0" in text
    assert "tokens per call: input 5,000" in text and "read from the prompt cache 4,000" in text
    assert "from 0.50" in text  # the calibration run's success rate is the baseline


def test_a_misspelt_or_out_of_range_plan_key_is_one_line_naming_the_fix(tmp_path):
    assert misspelt(["plan.diference=0.1"]) == "unknown config key 'plan.diference'; did you mean 'plan.difference'?"
    with pytest.raises(ValueError, match=r"'plan.difference' must be in \[-1, 1\], got 3.0"):
        _run(tmp_path, "plan.enabled=true", "plan.difference=3")


def test_a_pilot_carries_over_to_tasks_it_never_played(tmp_path):
    """A pilot that always failed, on one task, with more calls per step than the priors: another
    task's plan takes the pilot's strength (no success) and its calls over the priors' prediction."""
    from vabench.plan.priors import cell

    folder = tmp_path / "pilot"
    for seed in (1, 2):
        row = OutcomeRow(
            run_id="pilot", task="grasp_single_cube", protocol="active", seed=seed, model_calls=60, steps=50,
            budget=50, camera_actions=12, repairs=6, prompt_tokens=600_000, completion_tokens=6000, wall_s=60.0,
            success=False, status=Status.OK, end_reason=EndReason.BUDGET,
        )  # fmt: skip
        write_row(folder / "outcomes" / f"seed{seed}.parquet", row)
    run = _run(tmp_path, "model=openai", "tasks=[click_bell_right]", "seeds=2", "ray.address=none")
    text = plan_text(run, PlanConfig(enabled=True, calibrate=str(folder)))
    assert "expected figures from: calibrated by protocol" in text
    assert "success 0.00 x the paper's rate" in text  # the paper expects successes on grasp; the pilot had none
    assert "looks 0.24 per step, repairs 0.10 per call" in text
    pilot_arm, target_arm = cell("grasp_single_cube", "active").failure, cell("click_bell_right", "active").failure
    expected = 50 * target_arm.calls_per_step * 60 / (50 * pilot_arm.calls_per_step)
    assert f"model calls per episode: expected {expected:,.1f}" in text
