"""Cache-friendly requests: from one request to the next everything up to the previous
observation is byte for byte what was sent before, and in that observation only its images change
(into their text stubs, paper D.1); Anthropic requests carry cache_control breakpoints and nothing
else new; rows count the prompt-cache reads and writes a provider reports over HTTP, priced by
LiteLLM at the cached rates (the fake providers of tests/prompt_caching.py)."""

from __future__ import annotations

import copy
import json

import pytest

from tests.openai_server import ScriptedServer
from tests.prompt_caching import ANTHROPIC, OPENAI, PromptCache, blocks, common_tokens
from vabench.agents.chat.model import ModelConfig
from vabench.agents.chat.prefix import BREAKPOINT, cache_breakpoints
from vabench.agents.chat.tokens import text_tokens
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.llm import LiteLLMModel, prices
from vabench.envs.seeds import eval_seeds
from vabench.results.recordfile import read_events

KEY_VAR = "VABENCH_PROMPT_CACHE_TEST_KEY"
TASK = "place_cube_in_bowl"


def moves(steps: int):
    """Replies from the request alone: small moves, then stop after ``steps`` actions."""

    def reply(body: dict) -> str:
        n = 1 + sum(m.get("role") == "assistant" for m in body["messages"])
        if n > steps:
            return json.dumps({"stop": True, "reason": "done"})
        return json.dumps(
            {"action": "gripper.move_world", "axis": "xyz"[n % 3], "sign": "+-"[n % 2], "distance_mm": 10}
        )

    return reply


def _episode(render_env, tmp_path, provider: str, protocol: str, steps: int = 5, **cfg):
    cache = PromptCache(provider, moves(steps))
    model_id = "openai/gpt-4o" if provider == OPENAI else "anthropic/claude-sonnet-4-5"
    with ScriptedServer(default=cache) as server:
        base = server.url if provider == OPENAI else server.base
        model = LiteLLMModel(ModelConfig(model_id, api_base=base, api_key_env=KEY_VAR, **cfg))
        row = run_episode(
            render_env, model, Episode.of(TASK, eval_seeds(TASK)[0], protocol, env=render_env), tmp_path / protocol
        )
        return row, list(server.requests), cache, model_id


@pytest.fixture
def keyed(monkeypatch):
    monkeypatch.setenv(KEY_VAR, "sk-fake-prompt-cache")


def _image(part: dict) -> bool:
    return part.get("type") == "image_url"


@pytest.mark.parametrize("protocol", ["active", "passive"])
def test_each_request_repeats_the_last_one_up_to_the_previous_observations_images(
    render_env, tmp_path, keyed, protocol
):
    row, sent, cache, _ = _episode(render_env, tmp_path, OPENAI, protocol)
    assert row.steps == 5 and len(sent) == 6
    for before, after in zip(sent, sent[1:], strict=False):
        old, new = before["messages"], after["messages"]
        last = len(old) - 1  # the previous observation: the last message of the previous request
        assert new[:last] == old[:last]  # everything before it, byte for byte
        kept = [p for p in old[last]["content"] if not _image(p)]
        stubs = [p for p in new[last]["content"] if p["type"] == "text" and p["text"].startswith("[image omitted")]
        assert [p for p in new[last]["content"] if p not in stubs] == kept  # its text unchanged
        assert len(stubs) == sum(map(_image, old[last]["content"])) >= 1  # each image became its stub
        assert not any(_image(p) for m in new[:-1] for p in (m["content"] if isinstance(m["content"], list) else []))
    # the fake provider agrees: the repeated prefix ends at the previous observation's first image
    shares = [u.repeated for u in cache.log[1:]]
    assert all(b > a for a, b in zip(shares, shares[1:], strict=False))


def test_anthropic_requests_carry_two_breakpoints_and_nothing_else_new(render_env, tmp_path, keyed):
    row, marked, cache, model_id = _episode(render_env, tmp_path / "on", ANTHROPIC, "active")
    _, plain, _, _ = _episode(render_env, tmp_path / "off", ANTHROPIC, "active", prompt_cache=False)
    for with_marks, without in zip(marked, plain, strict=True):
        text = json.dumps(with_marks)
        assert text.count('"cache_control"') == 2 and '"cache_control"' not in json.dumps(without)
        assert json.loads(text.replace(', "cache_control": {"type": "ephemeral"}', "")) == without
        assert with_marks["system"][0]["cache_control"] == BREAKPOINT
        newest = with_marks["messages"][-1]["content"]
        assert newest[0]["type"] == "text" and newest[0]["cache_control"] == BREAKPOINT  # before its image
    reads = [u.read for u in cache.log]
    assert reads[0] == 0 and all(r > 0 for r in reads[2:])
    assert row.cached_tokens == sum(reads) and row.cache_write_tokens == sum(u.written for u in cache.log)
    p = prices(model_id)
    fresh = sum(u.input_tokens - u.read - u.written for u in cache.log)
    expected = fresh * p.input + sum(reads) * p.cached_input + row.cache_write_tokens * p.cache_write
    expected += row.completion_tokens * p.output
    assert row.cost_usd == pytest.approx(expected, rel=1e-6)
    billed_in_record = sum(
        e["cached_tokens"] for e in read_events(tmp_path / "on" / "active" / "events.jsonl") if e["type"] == "reply"
    )
    assert billed_in_record == row.cached_tokens


def test_openai_rows_count_the_automatic_cache_reads_at_the_cached_rate(render_env, tmp_path, keyed):
    row, _, cache, model_id = _episode(render_env, tmp_path, OPENAI, "active", steps=8)
    reads = [u.read for u in cache.log]
    assert any(reads) and all(r == 0 or (r >= 1024 and (r - 1024) % 128 == 0) for r in reads)
    p = prices(model_id)
    expected = (row.prompt_tokens - row.cached_tokens) * p.input + row.cached_tokens * p.cached_input
    assert row.cached_tokens == sum(reads) and row.cost_usd == pytest.approx(
        expected + row.completion_tokens * p.output
    )


def test_breakpoints_mark_a_copy_and_change_no_content():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    messages = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": [{"type": "text", "text": "step 1"}, {"type": "text", "text": "[image omitted]"}]},
        {"role": "assistant", "content": "{}"},
        {"role": "user", "content": [{"type": "text", "text": "step 2"}, image]},
    ]
    before = copy.deepcopy(messages)
    marked = cache_breakpoints(messages)
    assert messages == before  # the conversation's own messages are untouched
    assert marked[0]["content"] == [{"type": "text", "text": "rules", "cache_control": BREAKPOINT}]
    assert marked[3]["content"][0] == {"type": "text", "text": "step 2", "cache_control": BREAKPOINT}
    assert marked[3]["content"][1] is image and marked[1:3] == messages[1:3]
    repair = cache_breakpoints([*messages, {"role": "assistant", "content": "x"}, {"role": "user", "content": "fix"}])
    assert repair[-1]["content"] == [{"type": "text", "text": "fix", "cache_control": BREAKPOINT}]


def test_the_fake_openai_cache_reads_from_1024_tokens_in_128_token_steps():
    cache = PromptCache(OPENAI, lambda body: "ok")
    long = " cat" * 1100  # 1,100 tokens (o200k_base: " cat" is one)
    assert text_tokens("openai/gpt-4o", long) == 1100
    cache({"messages": [{"role": "user", "content": long + "x"}]})
    cache({"messages": [{"role": "user", "content": long + "y"}]})
    cache({"messages": [{"role": "user", "content": "short"}]})
    assert [u.read for u in cache.log] == [0, 1024, 0]
    one = blocks({"messages": [{"role": "user", "content": "abcdefgh"}]}, OPENAI)
    assert common_tokens(one, one) == sum(b.tokens for b in one)
