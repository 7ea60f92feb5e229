"""The LiteLLM client over real HTTP: a local OpenAI-compatible server plays the provider, so
retries, timeouts, headers, usage and cost are what LiteLLM and the OpenAI SDK really do."""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import socket

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before anything imports litellm

import litellm  # noqa: E402
import pytest  # noqa: E402
import tenacity  # noqa: E402
from PIL import Image  # noqa: E402

from vabench.agents.chat.model import Model, ModelConfig, ModelError, Reply, image_media_type, image_part  # noqa: E402
from vabench.agents.models import kinds as registry
from vabench.agents.models import llm  # noqa: E402
from vabench.agents.models.kinds import OFFLINE_AGENTS, OfflineAgent, check_model_id, is_offline, make_model  # noqa: E402
from vabench.agents.models.llm import LiteLLMModel  # noqa: E402

from .fakeclock import FakeClock  # noqa: E402
from .openai_server import ScriptedServer  # noqa: E402

KEY_VAR = "VABENCH_TEST_KEY"
KEY = "sk-vabench-test-0123456789abcdef"
USER = [{"role": "user", "content": "pick up the red cube"}]


@pytest.fixture
def server():
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_VAR, KEY)
    return KEY


def make(server: ScriptedServer, clock: FakeClock | None = None, **kw) -> LiteLLMModel:
    """A client of ``server``; with ``clock``, it waits and times on that fake clock."""
    base = dict(
        id="openai/test-model",
        api_base=server.url,
        api_key_env=KEY_VAR,
        timeout_s=5.0,
        max_retries=3,
        backoff_initial_s=0.01,
        backoff_max_s=0.05,
    )
    model = LiteLLMModel(ModelConfig(**{**base, **kw}))
    if clock is not None:
        model.clock, model.sleep = clock, clock.sleep
    return model


def png_bytes(color=(200, 30, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 6), color).save(buf, format="PNG")
    return buf.getvalue()


def encoded(fmt: str) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 6), (10, 120, 240)).save(buf, format=fmt)
    return buf.getvalue()


# -- plain replies ---------------------------------------------------------------------------------


def test_plain_reply_text_usage_and_request_id(server, key):
    server.script({"content": "MOVE left_arm 0.1", "usage": {"prompt_tokens": 123, "completion_tokens": 45}})
    reply = make(server).complete(USER)
    assert isinstance(reply, Reply)
    assert reply.text == "MOVE left_arm 0.1"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (123, 45)
    assert reply.usage.provider_attempts == 1
    assert len(server.requests) == 1
    status, body = server.responses[0]
    assert status == 200 and reply.request_id == body["id"]
    assert reply.latency_s > 0
    assert reply.usage.cost_usd is None  # openai/test-model is not in LiteLLM's price map


def test_request_carries_messages_and_settings_as_sent(server, key):
    messages = [
        {"role": "system", "content": "You control a robot."},
        {"role": "user", "content": "where is the cube?"},
        {"role": "assistant", "content": "LOOK table"},
        {"role": "user", "content": "now pick it"},
    ]
    server.script(lambda body: "echo: " + body["messages"][-1]["content"])
    reply = make(server, max_tokens=77, extra={"top_p": 0.5}).complete(messages)
    assert reply.text == "echo: now pick it"
    sent = server.requests[0]
    assert sent["model"] == "test-model"  # the openai/ prefix selects the provider, it is not sent
    assert [(m["role"], m["content"]) for m in sent["messages"]] == [(m["role"], m["content"]) for m in messages]
    assert sent["max_tokens"] == 77
    assert sent["top_p"] == 0.5
    assert "temperature" not in sent  # only sent when configured
    assert sent.get("stream") in (None, False)


def test_temperature_is_sent_when_set(server, key):
    server.script("ok")
    make(server, temperature=0.2).complete(USER)
    assert server.requests[0]["temperature"] == 0.2


def test_empty_content_is_an_empty_reply_not_an_error(server, key):
    server.script({"content": None})
    reply = make(server).complete(USER)
    assert reply.text == "" and reply.usage.provider_attempts == 1


def test_no_choices_is_a_model_error(server, key):
    server.script({"no_choices": True})
    with pytest.raises(ModelError, match="no choices"):
        make(server).complete(USER)
    assert len(server.requests) == 1


# -- keys -----------------------------------------------------------------------------------------


def test_key_is_sent_as_bearer_and_never_logged_or_returned(server, key, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    server.script({"status": 429}, "fine")
    reply = make(server).complete(USER)
    assert reply.usage.provider_attempts == 2
    assert [h["authorization"] for h in server.headers] == [f"Bearer {KEY}"] * 2
    # a provider that echoes the key in an error body (OpenAI does, partly masked)
    server.script({"status": 401, "body": f"Incorrect API key provided: {KEY}"})
    with pytest.raises(ModelError) as err:
        make(server).complete(USER)
    assert "401" in str(err.value)
    assert KEY not in str(err.value)
    assert KEY not in repr(reply)
    records = caplog.records
    assert any(r.name == llm.__name__ and r.levelno == logging.WARNING for r in records)
    for r in records:
        assert KEY not in r.getMessage()
    out = capsys.readouterr()
    assert KEY not in out.out and KEY not in out.err


def test_retry_warning_names_attempt_and_type_only(server, key, caplog):
    caplog.set_level(logging.WARNING, logger=llm.__name__)
    server.script({"status": 503, "body": "secret-ish provider text"}, "ok")
    make(server).complete(USER)
    (rec,) = [r for r in caplog.records if r.name == llm.__name__]
    msg = rec.getMessage()
    assert rec.levelno == logging.WARNING
    assert "attempt 1/4" in msg and "ServiceUnavailableError" in msg
    assert "secret-ish" not in msg


def test_missing_key_variable_names_it_and_sends_nothing(server, monkeypatch):
    monkeypatch.delenv(KEY_VAR, raising=False)
    with pytest.raises(ModelError, match=KEY_VAR):
        make(server).complete(USER)
    assert server.requests == []


def test_missing_credentials_without_key_env_is_not_retried(server, monkeypatch):
    # LiteLLM reports the OpenAI SDK's "Missing credentials" as an InternalServerError (500);
    # the client must not spend its retries (and backoff) on a config error.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    clock = FakeClock()
    m = make(server, clock, api_key_env=None, backoff_initial_s=5.0, backoff_max_s=5.0)
    with pytest.raises(ModelError, match="not retryable") as err:
        m.complete(USER)
    assert clock.sleeps == [] and err.value.usage.provider_attempts == 1  # no backoff, no second attempt
    assert server.requests == []


# -- retries --------------------------------------------------------------------------------------


def test_rate_limits_are_retried_with_backoff(server, key):
    server.script({"status": 429}, {"status": 429}, "ok")
    clock = FakeClock()
    reply = make(server, clock).complete(USER)
    assert reply.text == "ok"
    assert reply.usage.provider_attempts == 3
    assert len(server.requests) == 3
    # a wait before each retry, each within its jittered window (0.01 s, then 0.02 s), and all of them counted
    assert len(clock.sleeps) == 2 and clock.sleeps[0] <= 0.01 and clock.sleeps[1] <= 0.02
    assert reply.usage.backoff_s == pytest.approx(sum(clock.sleeps))


def test_backoff_windows_grow_exponentially_with_full_jitter():
    wait = llm._Backoff(initial_s=0.01, cap_s=0.1)
    state = tenacity.RetryCallState(retry_object=None, fn=None, args=(), kwargs={})

    def samples(n_attempt: int) -> list[float]:
        state.attempt_number = n_attempt
        return [wait(state) for _ in range(300)]

    for n, window in [(1, 0.01), (2, 0.02), (3, 0.04), (4, 0.08), (5, 0.1), (9, 0.1)]:
        s = samples(n)
        assert all(0 <= x <= window + 1e-12 for x in s)
        assert max(s) > 0.5 * window  # full jitter spans the window (P(fail) = 2**-300)
        assert min(s) < 0.5 * window


def test_retry_after_header_raises_the_wait(server, key):
    server.script({"status": 429, "headers": {"Retry-After": "1"}}, "ok")
    clock = FakeClock()
    reply = make(server, clock, backoff_max_s=5.0).complete(USER)
    assert reply.usage.provider_attempts == 2
    assert clock.sleeps == [1.0]  # the provider's 1 s, not a jittered wait of at most 0.01 s


def test_retry_after_is_capped_by_backoff_max(server, key):
    server.script({"status": 429, "headers": {"Retry-After": "30"}}, "ok")
    clock = FakeClock()
    reply = make(server, clock, backoff_max_s=0.2).complete(USER)
    assert reply.usage.provider_attempts == 2
    assert clock.sleeps == [0.2]


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_server_errors_are_retried(server, key, status):
    server.script({"status": status}, "recovered")
    reply = make(server).complete(USER)
    assert (reply.text, reply.usage.provider_attempts, len(server.requests)) == ("recovered", 2, 2)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(server, key, status):
    server.script({"status": status, "body": f"nope-{status}"}, "never sent")
    with pytest.raises(ModelError) as err:
        make(server).complete(USER)
    assert len(server.requests) == 1
    assert f"status {status}" in str(err.value)
    assert f"nope-{status}" in str(err.value)


def test_exhausted_retries_raise_model_error_with_attempt_count(server, key):
    server.script(*[{"status": 503}] * 4, "too late")
    with pytest.raises(ModelError, match=r"after 4 attempts: ServiceUnavailableError"):
        make(server, max_retries=3).complete(USER)
    assert len(server.requests) == 4


def test_zero_retries_means_one_attempt(server, key):
    server.script({"status": 429}, "too late")
    with pytest.raises(ModelError, match="after 1 attempts: RateLimitError"):
        make(server, max_retries=0).complete(USER)
    assert len(server.requests) == 1


def test_connection_refused_is_retried(key):
    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    m = LiteLLMModel(
        ModelConfig(
            id="openai/test-model",
            api_base=f"http://127.0.0.1:{port}/v1",
            api_key_env=KEY_VAR,
            max_retries=2,
            backoff_initial_s=0.01,
            backoff_max_s=0.02,
        )
    )
    with pytest.raises(ModelError, match="after 3 attempts"):
        m.complete(USER)


# -- timeouts -------------------------------------------------------------------------------------


def test_timeout_is_retried(server, key):
    server.script({"delay": 1.0, "then": "late"}, "quick")
    clock = FakeClock(step=1.0)  # each reading 1 s after the one before
    reply = make(server, clock, timeout_s=0.3).complete(USER)
    assert reply.text == "quick"
    assert reply.usage.provider_attempts == 2
    # the successful attempt only: read just before and just after it, one step apart (from the timed-out
    # attempt's start it would be two steps and the backoff)
    assert reply.latency_s == 1.0 and len(clock.sleeps) == 1
    assert len(server.requests) == 2


def test_all_attempts_time_out(server, key):
    server.script(*[{"delay": 1.0, "then": "late"}] * 3)
    clock = FakeClock()
    with pytest.raises(ModelError, match=r"after 3 attempts: Timeout") as err:
        make(server, clock, timeout_s=0.3, max_retries=2).complete(USER)
    assert len(server.requests) == 3 and err.value.usage.provider_attempts == 3  # no retries below ours
    # between the attempts only the short jittered backoff (0.01 s, then 0.02 s), all of it counted
    assert len(clock.sleeps) == 2 and clock.sleeps[0] <= 0.01 and clock.sleeps[1] <= 0.02
    assert err.value.usage.backoff_s == pytest.approx(sum(clock.sleeps))


# -- cost -----------------------------------------------------------------------------------------


def test_cost_is_none_for_unmapped_models(server, key):
    server.script({"content": "x", "usage": {"prompt_tokens": 1000, "completion_tokens": 500}})
    assert make(server, id="openai/my-local-vlm").complete(USER).usage.cost_usd is None


def test_cost_for_a_mapped_model_matches_litellm_prices(server, key):
    server.script({"content": "x", "usage": {"prompt_tokens": 1000, "completion_tokens": 500}})
    reply = make(server, id="openai/gpt-4o").complete(USER)
    assert server.requests[0]["model"] == "gpt-4o"
    prices = litellm.model_cost["gpt-4o"]
    expected = 1000 * prices["input_cost_per_token"] + 500 * prices["output_cost_per_token"]
    assert expected > 0
    assert reply.usage.cost_usd == pytest.approx(expected, rel=1e-9)
    assert reply.usage.cost_usd == pytest.approx(
        sum(litellm.cost_per_token(model="gpt-4o", prompt_tokens=1000, completion_tokens=500)), rel=1e-9
    )


# -- images ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fmt, media", [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")]
)
def test_image_media_type_from_magic_bytes(fmt, media):
    data = encoded(fmt)
    assert image_media_type(data) == media
    part = image_part(data)
    assert part["type"] == "image_url"
    prefix = f"data:{media};base64,"
    assert part["image_url"]["url"].startswith(prefix)
    assert base64.b64decode(part["image_url"]["url"][len(prefix) :]) == data


@pytest.mark.parametrize("data", [b"", b"hello world, not an image", b"RIFF\x00\x00\x00\x00WAVE"])
def test_image_part_rejects_unknown_bytes(data):
    with pytest.raises(ValueError, match="not a PNG"):
        image_part(data)


def test_image_arrives_at_the_server_unchanged(server, key):
    data = png_bytes()
    server.script("I see a red square")
    messages = [{"role": "user", "content": [{"type": "text", "text": "what is this?"}, image_part(data)]}]
    reply = make(server).complete(messages)
    assert reply.text == "I see a red square"
    content = server.requests[0]["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "what is this?"}
    url = content[1]["image_url"]["url"]
    prefix = "data:image/png;base64,"
    assert url.startswith(prefix)
    assert base64.b64decode(url[len(prefix) :]) == data


# -- configuration --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, hint",
    [
        ("api_key", "api_key_env"),
        ("api_base", "api_base"),
        ("messages", "complete()"),
        ("model", "model.id"),
        ("stream", "streaming"),
        ("num_retries", "max_retries"),
        ("max_retries", "max_retries"),
        ("timeout", "timeout_s"),
        ("max_tokens", "ModelConfig.max_tokens"),
    ],
)
def test_extra_rejects_reserved_keys(bad, hint):
    with pytest.raises(ValueError) as err:
        LiteLLMModel(ModelConfig(id="openai/x", extra={bad: 1}))
    assert repr(bad) in str(err.value)
    assert hint in str(err.value)


def test_name_defaults_to_model_and_can_be_overridden():
    assert LiteLLMModel(ModelConfig(id="openai/gpt-4o")).name == "openai/gpt-4o"
    assert LiteLLMModel(ModelConfig(id="openai/gpt-4o", name="gpt4o-t0")).name == "gpt4o-t0"


def test_make_model_prefers_registered_offline_agents(monkeypatch):
    class Fixed(Model):
        def __init__(self, cfg: ModelConfig):
            self.name = cfg.name or cfg.id

        def complete(self, messages: list[dict]) -> Reply:
            return Reply(text="STOP")

    agents = OFFLINE_AGENTS.copy()
    agents.add("fixed", OfflineAgent("fixed", Fixed, "a test agent"))
    monkeypatch.setattr(registry, "OFFLINE_AGENTS", agents)
    assert isinstance(make_model(ModelConfig(id="fixed")), Fixed) and is_offline("fixed")
    assert isinstance(make_model(ModelConfig(id="openai/gpt-4o")), LiteLLMModel)
    assert not is_offline("openai/gpt-4o")


@pytest.mark.parametrize("bad", ["gpt-4o", "", "  ", None, 3])
def test_a_model_id_is_an_offline_agent_or_a_provider_string(bad):
    offline = "human, mcp, oracle, policy, posetext, random, replay, servo"
    with pytest.raises(ValueError, match=f"choices: {offline}|non-empty"):
        check_model_id(bad)
    assert check_model_id("oracle") == "oracle" and check_model_id("hosted_vllm/x/y") == "hosted_vllm/x/y"


def test_the_replay_agent_takes_its_name_and_privilege_from_the_record(tmp_path):
    record = tmp_path / "events.jsonl"
    start = {
        "type": "episode_start",
        "task": "t",
        "seed": 1,
        "protocol": "active",
        "model": "oracle",
        "privileged": True,
    }
    record.write_text(json.dumps(start) + "\n" + json.dumps({"type": "reply", "text": '{"stop": true}'}) + "\n")
    agent = make_model(ModelConfig(id="replay", extra={"record": str(record)}))
    assert (agent.name, agent.privileged, agent.recorded) == ("replay:oracle", True, ['{"stop": true}'])
    with pytest.raises(ValueError, match="extra.record"):
        make_model(ModelConfig(id="replay"))


def test_warm_up_sends_nothing_and_the_next_call_still_reaches_the_provider(server, key):
    server.script("after warm-up")
    m = make(server)
    m.warm()
    assert server.requests == []
    assert m.complete(USER).text == "after warm-up" and len(server.requests) == 1
