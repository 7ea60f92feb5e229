"""The run's rate limits (model.rpm / model.tpm): the GCRA limiter on a fake clock, and the LiteLLM
client against a real HTTP server that enforces its own sliding-window limit."""

from __future__ import annotations

import io
import json
import logging
import os
import pickle
import threading
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before anything imports litellm

import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from vabench.agents.chat.model import ModelError, image_part  # noqa: E402
from vabench.agents.chat.tokens import estimate_messages as message_tokens  # noqa: E402
from vabench.agents.chat.tokens import estimate_text as text_tokens  # noqa: E402
from vabench.agents.chat.tokens import openai_image_tokens as image_tokens  # noqa: E402
from vabench.agents.models.llm import LiteLLMModel  # noqa: E402
from vabench.agents.models.ratelimit import RateLimiter  # noqa: E402
from vabench.run.config.run import ConfigError  # noqa: E402

from .fakeclock import FakeClock  # noqa: E402
from .openai_server import RateLimit, ScriptedServer  # noqa: E402
from .test_launch import validate as validate_config  # noqa: E402
from .test_models import KEY_VAR  # noqa: E402
from .test_models import make as make_model_client  # noqa: E402

USER = [{"role": "user", "content": "pick up the red cube"}]


class Clock:
    """A fake monotonic clock the test moves by hand."""

    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def spacing(rpm: float, headroom: float = 0.02) -> float:
    return 60.0 / (rpm * (1 - headroom))


# -- the limiter on a fake clock ---------------------------------------------------------------------


def test_requests_are_spaced_evenly_at_the_rate_less_headroom():
    clock = Clock()
    lim = RateLimiter(rpm=120, tpm=None, clock=clock)
    waits = [lim.acquire(1000) for _ in range(5)]
    assert waits == pytest.approx([i * spacing(120) for i in range(5)])
    assert 60 / spacing(120) == pytest.approx(117.6)
    clock.t += 3600  # an idle hour earns no burst: the next two are spaced again
    assert [lim.acquire(0), lim.acquire(0)] == pytest.approx([0.0, spacing(120)])


def test_a_slot_in_the_future_is_counted_from_now():
    clock = Clock()
    lim = RateLimiter(rpm=60, tpm=None, headroom=0.0, clock=clock)
    assert lim.acquire(1) == 0.0
    assert lim.acquire(1) == pytest.approx(1.0)
    clock.t += 0.25  # the third slot is at 2.0 s after the first, whoever asks when
    assert lim.acquire(1) == pytest.approx(1.75)


def test_tokens_pace_requests_by_their_size():
    lim = RateLimiter(rpm=None, tpm=6000, headroom=0.0, clock=Clock())  # 100 tokens/s
    assert [lim.acquire(100), lim.acquire(300), lim.acquire(50), lim.acquire(0)] == pytest.approx([0, 1, 4, 4.5])


def test_a_request_waits_for_both_schedules():
    lim = RateLimiter(rpm=60, tpm=6000, headroom=0.0, clock=Clock())  # 1 s per request, 100 tokens/s
    assert [lim.acquire(500), lim.acquire(10), lim.acquire(10)] == pytest.approx([0, 5, 6])


def test_settle_corrects_the_token_schedule_both_ways():
    lim = RateLimiter(rpm=None, tpm=6000, headroom=0.0, clock=Clock())
    assert lim.acquire(100) == 0.0
    lim.settle(100, 400)  # the reply used 300 tokens more than booked: 3 s more
    assert lim.acquire(1000) == pytest.approx(4.0)
    lim.settle(1000, 200)  # 800 fewer: 8 s freed
    assert lim.acquire(0) == pytest.approx(6.0)
    assert lim.stats()["tokens"] == 400 + 200


def test_pause_holds_back_every_later_slot_and_spreads_them_after():
    clock = Clock()
    lim = RateLimiter(rpm=60, tpm=None, headroom=0.0, clock=clock)
    assert lim.acquire(1) == 0.0
    lim.pause(5.0)
    assert [lim.acquire(1), lim.acquire(1)] == pytest.approx([5.0, 6.0])
    lim.pause(0.5)  # a shorter pause never pulls the schedule forward
    assert lim.acquire(1) == pytest.approx(7.0)
    assert lim.stats()["paused"] == 2


def test_unlimited_only_counts_but_honours_a_pause():
    clock = Clock()
    lim = RateLimiter(rpm=None, tpm=None, clock=clock)
    assert [lim.acquire(10**6) for _ in range(50)] == [0.0] * 50
    lim.settle(10, 10**6)
    assert lim.acquire(1) == 0.0
    lim.pause(2.0)
    assert lim.acquire(1) == pytest.approx(2.0)
    assert lim.stats()["requests"] == 52


def test_stats_count_requests_of_the_last_minute_and_all_waits():
    clock = Clock()
    lim = RateLimiter(rpm=600, tpm=None, headroom=0.0, clock=clock)  # 0.1 s apart
    waits = [lim.acquire(7) for _ in range(10)]
    stats = lim.stats()
    assert stats["requests"] == 10 and stats["paused"] == 0 and stats["tokens"] == 70
    assert stats["rpm"] == 1  # the other nine are booked ahead, not yet granted
    assert stats["wait_s"] == pytest.approx(sum(waits)) == pytest.approx(4.5)
    clock.t += 1.0
    assert lim.stats()["rpm"] == 10
    clock.t = 100.0 + 60.45  # the first five slots (at +0.0 ... +0.4 s) have left the window
    assert lim.stats()["rpm"] == 5
    assert json.loads(json.dumps(lim.stats())) == lim.stats()


def test_concurrent_callers_get_distinct_evenly_spaced_slots():
    lim = RateLimiter(rpm=600, tpm=None, headroom=0.0, clock=Clock())
    n_threads, each = 16, 25
    barrier = threading.Barrier(n_threads)

    def caller() -> list[float]:
        barrier.wait()
        return [lim.acquire(1) for _ in range(each)]

    with ThreadPoolExecutor(n_threads) as pool:
        waits = sorted(w for ws in pool.map(lambda _: caller(), range(n_threads)) for w in ws)
    assert waits == pytest.approx([i * 0.1 for i in range(n_threads * each)])
    assert len({round(w, 9) for w in waits}) == n_threads * each
    assert lim.stats()["requests"] == n_threads * each


def test_limits_must_be_positive():
    for bad in (dict(rpm=0, tpm=None), dict(rpm=None, tpm=-1), dict(rpm=True, tpm=None)):
        with pytest.raises(ValueError, match="must be None or a number > 0"):
            RateLimiter(**bad)
    with pytest.raises(ValueError, match="headroom"):
        RateLimiter(60, None, headroom=1.0)


def test_a_pickled_limiter_is_a_fresh_one_with_the_same_limits():
    lim = RateLimiter(rpm=120, tpm=30000, headroom=0.05)
    lim.acquire(100)
    copy = pickle.loads(pickle.dumps(lim))
    assert (copy.rpm, copy.tpm, copy.headroom) == (120, 30000, 0.05)
    assert copy.stats()["requests"] == 0 and copy.acquire(1) == 0.0


# -- the token estimate ------------------------------------------------------------------------------


def image_bytes(size: tuple[int, int], fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(buf, format=fmt)
    return buf.getvalue()


def test_message_tokens_reads_image_sizes_from_their_headers():
    png, jpeg = image_part(image_bytes((1280, 720))), image_part(image_bytes((640, 480), "JPEG"))
    messages = [
        {"role": "system", "content": "You control a robot."},
        {"role": "user", "content": [{"type": "text", "text": "look"}, png, jpeg]},
        {"role": "assistant", "content": None},
    ]
    expected = text_tokens("You control a robot.") + text_tokens("look")
    expected += image_tokens(1280, 720) + image_tokens(640, 480)
    assert message_tokens(messages) == expected
    low = {"type": "image_url", "image_url": {"url": png["image_url"]["url"], "detail": "low"}}
    remote = {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}}
    broken = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    assert message_tokens([{"role": "user", "content": [low]}]) == 85
    assert message_tokens([{"role": "user", "content": [remote, broken]}]) == 2 * image_tokens(2048, 2048)


# -- the client over HTTP ----------------------------------------------------------------------------


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_VAR, "sk-vabench-test-0123456789abcdef")


def make(server: ScriptedServer, clock: FakeClock | None = None, **kw) -> LiteLLMModel:
    model = make_model_client(server, clock, **kw)
    model.warm()  # LiteLLM's first-call set-up, so it does not land inside a timed slot
    return model


def test_concurrent_callers_stay_under_a_sliding_window_limit(key):
    """8 threads, 24 requests at once: the server takes 12 in any 1 s window; the client (600/min =
    10/s, 9.8/s with headroom) spaces them so none is refused (a burst would see 12 refused). The
    server's window is real time, so this is the one test here whose outcome rests on the wall
    clock; how evenly the slots are spaced is asserted on a fake clock above."""
    limit = RateLimit("ok", rpm=12, window_s=1.0)
    n_threads, each = 8, 3
    with ScriptedServer(default=limit, keep_bodies=False) as server:
        model = make(server, rpm=600)
        model.complete(USER)  # the first request pays the client's set-up: the timed ones start after it
        barrier = threading.Barrier(n_threads)

        def caller(_: int) -> list:
            barrier.wait()
            return [model.complete(USER) for _ in range(each)]

        with ThreadPoolExecutor(n_threads) as pool:
            replies = [r for rs in pool.map(caller, range(n_threads)) for r in rs]
    n = n_threads * each
    assert limit.rejected == [] and server.statuses == [200] * (n + 1)
    assert server.requests == [] and server.raw_bodies == [] and len(server.times) == n + 1  # keep_bodies=False
    assert all(r.text == "ok" and r.usage.provider_attempts == 1 and r.usage.backoff_s == 0 for r in replies)
    assert sum(r.usage.limit_wait_s > 0 for r in replies) >= n - 1  # all but the first wait for a slot
    assert model.limiter.stats()["requests"] == n + 1


class SignallingLimiter(RateLimiter):
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.paused = threading.Event()

    def pause(self, seconds: float) -> None:
        super().pause(seconds)
        self.paused.set()


def test_a_429_with_retry_after_holds_back_every_caller(key):
    served = threading.Event()  # the refused caller stays in its backoff until the second caller was served
    clock = FakeClock(gate=lambda: threading.current_thread() is threading.main_thread() or served.wait(10))
    with ScriptedServer(default="ok", clock=clock) as server:
        server.script({"status": 429, "body": "slow down", "headers": {"Retry-After": "1"}})
        model = make(server, clock, rpm=6000, backoff_max_s=5.0)
        model.limiter = SignallingLimiter(6000, None, clock=clock)
        with ThreadPoolExecutor(1) as pool:
            refused = pool.submit(model.complete, USER)
            assert model.limiter.paused.wait(10)
            other = model.complete(USER)  # a second caller, during the first one's backoff
            served.set()
            first = refused.result(timeout=10)
    assert server.statuses == [429, 200, 200]
    assert all(t - server.times[0] >= 1.0 for t in server.times[1:])  # on the fake clock
    assert (first.text, first.usage.provider_attempts, other.text, other.usage.provider_attempts) == ("ok", 2, "ok", 1)
    # the refused caller's wait is its backoff (Retry-After honoured, as before), not counted twice
    assert first.usage.backoff_s == 1.0 and first.usage.limit_wait_s <= spacing(6000) + 1e-9
    assert other.usage.backoff_s == 0 and other.usage.limit_wait_s == pytest.approx(1.0)
    assert model.limiter.stats()["paused"] == 1


def test_the_pause_is_capped_like_the_backoff(key):
    clock = FakeClock()
    with ScriptedServer(default="ok", clock=clock) as server:
        server.script({"status": 429, "headers": {"Retry-After": "30"}})
        model = make(server, clock, rpm=6000, backoff_max_s=0.2)
        reply = model.complete(USER)
    assert reply.usage.provider_attempts == 2 and clock.sleeps == [0.2]  # the backoff, capped
    assert reply.usage.limit_wait_s == 0.0  # the pause ended with the backoff: 0.2 s, not 30
    assert server.times[1] - server.times[0] == pytest.approx(0.2)
    assert model.limiter.stats()["paused"] == 1


def test_every_retry_takes_a_slot_and_an_exhausted_call_reports_its_limit_wait(key):
    clock = FakeClock()
    with ScriptedServer(default={"status": 500}, clock=clock) as server:
        model = make(server, clock, rpm=30, max_retries=1)  # slots 2.04 s apart
        with pytest.raises(ModelError) as info:
            model.complete(USER)
    e = info.value
    assert e.usage.provider_attempts == 2 and e.usage.backoff_s <= 0.01 and not e.permanent
    # the retry waited for its own slot: the backoff, then the rest of the slot's spacing on the limiter
    assert clock.sleeps == [e.usage.backoff_s, pytest.approx(spacing(30) - e.usage.backoff_s)]
    assert e.usage.limit_wait_s == pytest.approx(spacing(30) - e.usage.backoff_s)
    assert server.times[1] - server.times[0] == pytest.approx(spacing(30))


def test_a_limiter_is_made_per_process_when_the_config_sets_a_limit(key):
    with ScriptedServer(default="ok") as server:
        limited, unlimited = make(server, tpm=100_000), make(server)
        assert limited.complete(USER).usage.limit_wait_s == 0.0 and unlimited.complete(USER).usage.limit_wait_s == 0.0
    assert isinstance(limited.limiter, RateLimiter) and limited.limiter.stats()["requests"] == 1
    assert unlimited.limiter is None


class RecordingLimiter:
    """A duck-typed limiter (as a worker's proxy would be): logs calls, grants a fixed wait."""

    def __init__(self, wait: float = 0.0):
        self.wait, self.calls = wait, []

    def acquire(self, tokens: int) -> float:
        self.calls.append(("acquire", tokens))
        return self.wait

    def settle(self, reserved: int, used: int) -> None:
        self.calls.append(("settle", reserved, used))

    def pause(self, seconds: float) -> None:
        self.calls.append(("pause", seconds))


def test_the_estimate_is_booked_then_settled_and_the_wait_is_not_latency(key):
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "what is this?"}, image_part(image_bytes((800, 600)))]}
    ]
    usage = {"prompt_tokens": 900, "completion_tokens": 60}
    clock = FakeClock()  # only sleeps move it: the attempt itself takes no time on it
    with ScriptedServer(default={"content": "a cube", "usage": usage}) as server:
        model = make(server, clock, max_tokens=4096)
        model.limiter = RecordingLimiter(wait=0.25)
        reply = model.complete(messages)
    est = text_tokens("what is this?") + image_tokens(800, 600) + 4096  # max_tokens: what providers count
    assert model.limiter.calls == [("acquire", est), ("settle", est, 960)]
    assert reply.usage.limit_wait_s == 0.25 and reply.usage.backoff_s == 0.0 and clock.sleeps == [0.25]
    assert reply.latency_s == 0.0  # the wait is before the timed attempt


def test_a_failing_limiter_never_fails_the_call(key, caplog):
    class Broken:
        def acquire(self, tokens):
            raise ConnectionError("the limiter actor is gone")

        settle = pause = acquire

    with ScriptedServer(default="ok") as server:
        model = make(server)
        model.limiter = Broken()
        with caplog.at_level(logging.WARNING, logger="vabench.agents.models.llm"):
            reply = model.complete(USER)
    assert reply.text == "ok" and reply.usage.limit_wait_s == 0.0
    assert "rate limiter acquire failed" in caplog.text


# -- configuration -----------------------------------------------------------------------------------


def validate(*overrides: str):
    return validate_config("+experiment=smoke", "model=openai", *overrides)


def test_config_accepts_positive_limits_and_none():
    run = validate("model.rpm=120", "model.tpm=30000.5")
    assert (run.model.rpm, run.model.tpm) == (120.0, 30000.5)
    run = validate()
    assert (run.model.rpm, run.model.tpm) == (None, None)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.rpm=0", "'model.rpm' must be > 0, got 0"),
        ("model.rpm=-5", "'model.rpm' must be > 0"),
        ("model.rpm=x", "'model.rpm' must be a number or null, got 'x'"),
        ("model.tpm=0", "'model.tpm' must be > 0"),
        ("model.tpm=true", "'model.tpm' must be a number"),
    ],
)
def test_config_refuses_bad_limits_naming_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        validate(override)
