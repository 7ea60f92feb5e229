"""Tokens counted as the providers count them (issue 48): ``python -m vabench.plan tokens`` against
``litellm.token_counter`` on requests captured from real episodes (real SAPIEN, real HTTP through
LiteLLM to the fake provider, both protocols), the fake provider's bill against the same counts, and
the plan naming its tokenizer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.plan_replies import Failing
from tests.openai_server import ScriptedServer
from tests.test_plan import _run
from vabench.agents.chat.model import ModelConfig
from vabench.agents.chat.tokens import estimate_messages, request_tokens
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.llm import LiteLLMModel
from vabench.envs.seeds import eval_seeds
from vabench.plan.__main__ import main
from vabench.plan.report import plan_text
from vabench.run.config.run import PlanConfig

ROOT = Path(__file__).resolve().parent.parent
KEY_VAR = "VABENCH_PLAN_TOKENS_TEST_KEY"
MODEL = "openai/gpt-4o"
CALLS = 6  # the failing replies' first calls (a look in the active protocol, a gripper action, moves), then a stop


def _litellm(messages: list[dict]) -> int:
    import litellm

    return int(litellm.token_counter(model=MODEL, messages=messages))


@pytest.fixture(scope="module")
def captured(render_env, tmp_path_factory):
    """Each protocol's requests and replies from one short episode of the failing replies."""
    os.environ[KEY_VAR] = "sk-fake-plan-tokens"
    out = {}
    for protocol in ("active", "passive"):
        failing = Failing(("right",), protocol == "active")

        def reply(body: dict, failing=failing) -> str:
            said = sum(m.get("role") == "assistant" for m in body["messages"])
            return failing(body) if said < CALLS else json.dumps({"stop": True, "reason": "done"})

        with ScriptedServer(default=reply) as server:
            model = LiteLLMModel(ModelConfig(MODEL, api_base=server.url, api_key_env=KEY_VAR))
            episode = Episode.of("grasp_single_cube", eval_seeds("grasp_single_cube")[0], protocol, env=render_env)
            row = run_episode(render_env, model, episode, tmp_path_factory.mktemp(protocol))
            out[protocol] = (list(server.requests), list(server.responses), row)
    return out


@pytest.mark.parametrize("protocol", ["active", "passive"])
def test_the_command_agrees_with_litellm_on_captured_requests(captured, tmp_path, capsys, protocol):
    requests = captured[protocol][0]
    assert len(requests) > CALLS and any(
        p.get("type") == "image_url" for m in requests[-1]["messages"] for p in m["content"] if isinstance(p, dict)
    )
    worst = 0.0
    for i, body in enumerate(requests):
        path = tmp_path / f"request-{i}.json"
        path.write_text(json.dumps(body["messages"] if i % 2 else body))  # a bare list, or the whole body
        assert main(["tokens", str(path), "--model", MODEL]) == 0
        printed = int(capsys.readouterr().out.split("prompt tokens: ")[1].split()[0])
        reference = _litellm(body["messages"])
        worst = max(worst, abs(printed - reference) / reference)
    print(f"{protocol}: largest difference from litellm.token_counter over {len(requests)} requests: {worst:.2%}")
    assert worst <= 0.02
    # the harness's chars/4 estimate is no count: on the same requests it is off by more than that
    last = requests[-1]["messages"]
    assert abs(estimate_messages(last) - _litellm(last)) / _litellm(last) > 0.02


def test_the_fake_provider_bills_the_tokenizers_counts(captured):
    for protocol, (requests, responses, row) in captured.items():
        billed = [payload["usage"]["prompt_tokens"] for _, payload in responses]
        assert billed == [request_tokens(MODEL, body["messages"]).total for body in requests], protocol
        assert all(abs(b - _litellm(body["messages"])) <= 0.02 * b for b, body in zip(billed, requests, strict=True))
        assert row.prompt_tokens == sum(billed)


def test_the_command_is_a_module_and_refuses_what_is_not_a_request(captured, tmp_path, capsys):
    body = captured["active"][0][0]
    good = tmp_path / "req.json"
    good.write_text(json.dumps({**body, "model": "claude-sonnet-4-5"}))
    done = subprocess.run(
        [sys.executable, "-m", "vabench.plan", "tokens", str(good), "--model", "anthropic/claude-sonnet-4-5"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0 and "prompt tokens: " in done.stdout
    assert "a fallback: Anthropic publishes no tokenizer" in done.stdout  # says which tokenizer stands in
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "nochat.json").write_text(json.dumps({"hello": 1}))
    for name, why in (
        ("missing.json", "no such file"),
        ("bad.json", "not JSON"),
        ("nochat.json", "not a chat request"),
    ):
        assert main(["tokens", str(tmp_path / name), "--model", MODEL]) == 2
        err = capsys.readouterr().err
        assert why in err and err.startswith("python -m vabench.plan: ") and len(err.strip().splitlines()) == 1


def test_the_plan_names_the_tokenizer_or_its_stand_in(tmp_path):
    openai = plan_text(_run(tmp_path, "model=openai", "tasks=[grasp_single_cube]"), PlanConfig(True))
    assert "tokens counted by: o200k_base (the provider's tokenizer" in openai
    claude = plan_text(_run(tmp_path, "model=anthropic", "tasks=[grasp_single_cube]"), PlanConfig(True))
    assert "tokens counted by: a fallback: Anthropic publishes no tokenizer" in claude
