"""Issue 41: one rate budget per provider key across jobs. The key's schedule on a fake clock
(runs interleave, spend stays per run, a dead or stuck holder holds nothing), its name (never
the key), and real processes over real HTTP against a provider that enforces its own
sliding-window limit: client processes, then a joblib sweep beside a second launcher."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before anything imports litellm

import pytest  # noqa: E402

from tests.openai_server import RateLimit, ScriptedServer  # noqa: E402
from tests.test_cluster import stop_after  # noqa: E402
from tests.test_driver import AllAtOnce  # noqa: E402
from tests.test_launch import validate  # noqa: E402
from vabench.agents.chat.model import ModelConfig  # noqa: E402
from vabench.agents.models.keybudget import STALE_S, BudgetBusy, KeyBudget, budget_for, key_id, sweep  # noqa: E402
from vabench.agents.models.ratelimit import RateLimiter, pace  # noqa: E402
from vabench.results.outcomes import read_rows  # noqa: E402
from vabench.run.actors.workerconfig import make_limiter  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KEY_VAR = "VABENCH_TEST_KEY"
RAY = pytest.mark.xdist_group("ray")


class Clock:
    """A wall clock the test moves by hand, starting now (budget files' times are compared with it)."""

    def __init__(self):
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


def two_runs(tmp_path, clock, *limits, **kw) -> tuple[RateLimiter, RateLimiter]:
    """Two runs' limiters on one key, each with its own budget object (as in two processes)."""
    return tuple(
        RateLimiter(*limits, headroom=0.0, clock=clock, shared=KeyBudget("k", str(tmp_path), clock), **kw)
        for _ in range(2)
    )


# -- the key's name ------------------------------------------------------------------------------------


def test_the_key_is_named_by_its_value_and_never_written(monkeypatch, tmp_path):
    secret = "sk-live-" + uuid.uuid4().hex
    monkeypatch.setenv("KEY_A", secret)
    monkeypatch.setenv("KEY_B", secret)
    monkeypatch.setenv("KEY_C", "sk-other-" + uuid.uuid4().hex)
    a, b, c = (ModelConfig(id="openai/gpt-4o", api_key_env=v, rpm=60) for v in ("KEY_A", "KEY_B", "KEY_C"))
    assert key_id(a) == key_id(b) != key_id(c)  # two variables holding one key share its budget
    assert len(key_id(a)) == 16 and secret not in key_id(a) and secret[-8:] not in key_id(a)
    other_model = ModelConfig(id="openai/gpt-4o-mini", api_key_env="KEY_A", rpm=60)
    other_base = ModelConfig(id="openai/gpt-4o", api_key_env="KEY_A", api_base="http://h:1/v1", rpm=60)
    slash = ModelConfig(id="openai/gpt-4o", api_key_env="KEY_A", api_base="http://h:1/v1/", rpm=60)
    assert len({key_id(a), key_id(other_model), key_id(other_base)}) == 3 and key_id(slash) == key_id(other_base)
    monkeypatch.setenv("OPENAI_API_KEY", secret)  # no api_key_env: the provider's own variable, as LiteLLM reads it
    assert key_id(ModelConfig(id="openai/gpt-4o", rpm=60)) == key_id(a)
    monkeypatch.delenv("KEY_C")
    assert key_id(c) == key_id(ModelConfig(id="openai/gpt-4o", api_key_env="KEY_C"))  # unset: named by the variable
    budget = KeyBudget(key_id(a), str(tmp_path))
    budget.book(10, 1.0, 0.0)
    assert [p.name for p in tmp_path.iterdir()] == [f"{key_id(a)}.gcra"]
    assert secret.encode() not in budget.path.read_bytes()


def test_a_budget_only_where_limits_are_set_and_shared(monkeypatch, tmp_path):
    monkeypatch.setenv(KEY_VAR, "sk-test")
    base = dict(id="openai/test-model", api_key_env=KEY_VAR)
    assert budget_for(ModelConfig(**base, rpm=60)).key == key_id(ModelConfig(**base))
    assert budget_for(ModelConfig(**base)) is None  # no limit: nothing to share
    assert budget_for(ModelConfig(**base, rpm=60, share_limits=False)) is None
    run = validate("+experiment=smoke", "model=openai", "model.rpm=120", f"model.api_key_env={KEY_VAR}")
    assert run.model.share_limits is True and make_limiter(run).shared.key == key_id(run.model)
    alone = validate("+experiment=smoke", "model=openai", "model.rpm=120", "model.share_limits=false")
    assert make_limiter(alone).shared is None and make_limiter(alone).stats()["shared"] is False


def test_the_endpoint_probe_takes_a_slot_of_the_keys_budget(monkeypatch, tmp_path):
    """The probe is a request the provider counts: the next request of the key waits behind it."""
    from vabench.run import probe

    monkeypatch.setenv("VABENCH_CACHE", str(tmp_path))
    monkeypatch.setenv(KEY_VAR, f"sk-test-{uuid.uuid4().hex}")
    with ScriptedServer(default="ok") as server:
        cfg = ModelConfig(id="openai/test-model", api_base=server.url, api_key_env=KEY_VAR, rpm=1)
        before = time.time()
        assert probe._ask(cfg, log=print) is None and len(server.times) == 1
    next_slot, _, _ = budget_for(cfg).read()
    assert next_slot >= before + pace(1, None)[0]  # booked: the key's next request is a minute (61 s) after it
    assert list((tmp_path / "limits").iterdir()) == [budget_for(cfg).path]


# -- the shared schedule on a fake clock ---------------------------------------------------------------


def test_two_runs_on_one_key_take_turns_at_the_key_rate(tmp_path):
    clock = Clock()
    a, b = two_runs(tmp_path, clock, 60, None)
    waits = [lim.acquire(1) for _ in range(3) for lim in (a, b)]
    assert waits == pytest.approx([0, 1, 2, 3, 4, 5])  # one schedule: 60 rpm for the two runs together
    assert a.stats()["requests"] == b.stats()["requests"] == 3 and a.stats()["shared"]
    clock.t += 3600  # an idle hour earns no burst across runs either
    assert [a.acquire(1), b.acquire(1)] == pytest.approx([0, 1])


def test_settle_and_pause_are_the_keys_and_spend_is_the_runs(tmp_path):
    clock = Clock()
    a, b = two_runs(tmp_path, clock, None, 6000)  # 100 tokens/s
    assert a.acquire(1000) == 0.0
    assert b.acquire(100) == pytest.approx(10.0)  # behind a's 1000 tokens
    a.settle(1000, 200)  # a's reply used 800 fewer: 8 s freed for both
    assert b.acquire(0) == pytest.approx(3.0)
    b.pause(30.0)  # a 429 seen by b holds a back too
    assert a.acquire(0) == pytest.approx(30.0)
    a.charge(1.5)
    assert (a.spent(), b.spent()) == (1.5, 0.0)  # model.max_cost_usd caps each run's own spend


def test_each_run_keeps_its_own_pace_on_the_shared_schedule(tmp_path):
    clock = Clock()
    slow = RateLimiter(60, None, headroom=0.0, clock=clock, shared=KeyBudget("k", str(tmp_path), clock))
    fast = RateLimiter(120, None, headroom=0.0, clock=clock, shared=KeyBudget("k", str(tmp_path), clock))
    assert [slow.acquire(1), fast.acquire(1), fast.acquire(1), slow.acquire(1)] == pytest.approx([0, 1, 1.5, 2])
    assert pace(60, 6000, 0.0) == (1.0, 100.0)


def test_slots_booked_by_a_dead_run_pass_with_time(tmp_path):
    """A run that dies holding booked slots holds nothing: the next caller waits out those slots
    once (times, not a count), and a schedule from a clock that went back is forgotten."""
    clock = Clock()
    dead = KeyBudget("k", str(tmp_path), clock)
    assert [dead.book(0, 2.0, 0.0) for _ in range(4)] == pytest.approx([0, 2, 4, 6])
    del dead
    alive = KeyBudget("k", str(tmp_path), clock)
    assert alive.book(0, 2.0, 0.0) == pytest.approx(8.0)
    clock.t += 10
    assert alive.book(0, 2.0, 0.0) == 0.0
    alive.pause(5.0)
    clock.t -= 2 * 86_400  # the wall clock went back two days: every stored time is "far ahead"
    assert alive.book(0, 2.0, 0.0) == 0.0


def test_stale_budget_files_are_swept_and_a_holder_reopens(tmp_path):
    clock = Clock()
    old = KeyBudget("k", str(tmp_path), clock)
    old.book(0, 1.0, 0.0)
    os.utime(old.path, (clock.t - STALE_S - 1, clock.t - STALE_S - 1))
    assert sweep(tmp_path, clock) == ["k.gcra"] and not old.path.exists()
    assert old.book(0, 1.0, 0.0) == 0.0  # the removed file's schedule is gone; this opens the new file
    assert KeyBudget("k", str(tmp_path), clock).book(0, 1.0, 0.0) == pytest.approx(1.0)  # which others share
    assert sweep(tmp_path, clock) == []


# -- holders that die or stop --------------------------------------------------------------------------

HOLD = """
import fcntl, os, sys
from vabench.agents.models.keybudget import KeyBudget
b = KeyBudget("k", sys.argv[1])
fcntl.flock(b._open(), fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


def holder(tmp_path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_holder_killed_inside_the_lock_does_not_keep_it(tmp_path):
    proc = holder(tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert KeyBudget("k", str(tmp_path), lock_wait_s=60).book(0, 1.0, 0.0) == 0.0


def test_a_stuck_holder_never_holds_a_run_back(tmp_path, caplog):
    """A process that keeps the lock (stopped, not dead): callers give up on the file after
    lock_wait_s and pace by their run's own schedule, saying so once, then share again."""
    proc = holder(tmp_path)
    try:
        with pytest.raises(BudgetBusy):
            KeyBudget("k", str(tmp_path), lock_wait_s=0.05).book(0, 1.0, 0.0)
        clock = Clock()
        lim = RateLimiter(60, None, headroom=0.0, clock=clock, shared=KeyBudget("k", str(tmp_path), clock, 0.05))
        with caplog.at_level(logging.WARNING, logger="vabench.agents.models.ratelimit"):
            first, second = lim.acquire(1), lim.acquire(1)
        assert (first, second) == (0.0, 1.0)  # its own 60 rpm
        assert caplog.text.count("pacing alone") == 1 and lim.stats()["shared"] is False
    finally:
        proc.kill()
        proc.wait()
    lim.acquire(1)
    assert lim.stats()["shared"] is True


# -- real processes over real HTTP -----------------------------------------------------------------------


def provider(jobs: set[str], reply) -> tuple[RateLimit, AllAtOnce]:
    """At most 4 requests in any 2 s (120 rpm), counted on arrival, each job's first held until every
    job has sent one (jobs named by ``model.extra.extra_body.job``); the jobs ask for model.rpm=90
    (one request every 0.68 s, so 5 span 2.72 s: 0.7 s for a loaded machine to delay a request).
    Two jobs pacing alone send about 2.9 a second and are refused."""
    gate = AllAtOnce(jobs, reply, wait_s=300.0, by="job")  # the jobs overlap however long each takes to start
    return RateLimit(gate, rpm=4, window_s=2.0), gate


def env(key: str) -> dict:
    return {**os.environ, KEY_VAR: key, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


@pytest.mark.parametrize("share", [True, False], ids=["shared", "alone"])
def test_two_client_processes_on_one_key(share):
    """Two processes, 8 requests each at model.rpm=90: with the shared budget the provider refuses
    none; each pacing alone (the behaviour before issue 41) they are refused."""
    limit, gate = provider({"a", "b"}, lambda body: "ok")
    key = f"sk-test-{uuid.uuid4().hex}"
    with ScriptedServer(default=limit, keep_bodies=False) as server:
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "tests.limit_client", server.url, name, "8", "90", str(int(share))],
                cwd=ROOT,
                env=env(key),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for name in ("a", "b")
        ]
        try:
            assert [p.stdout.readline().strip() for p in procs] == ["ready", "ready"]
            for p in procs:
                p.stdin.write("go\n")
                p.stdin.flush()
            outs = [p.communicate(timeout=300)[0] for p in procs]
        finally:
            for p in procs:
                p.kill()
    assert all(p.returncode == 0 and "done" in out for p, out in zip(procs, outs, strict=True))
    assert len(limit.accepted) == 16 and gate.waited_out == []
    if share:
        assert limit.rejected == [] and set(server.statuses) == {200} and limit.most_within() <= 4
    else:
        assert len(limit.rejected) > 0 and 429 in server.statuses


def launcher(server, results: Path, run_id: str, *more: str) -> list[str]:
    """A launcher of one smoke episode (8 moves, then stop) in process on ``server``, at model.rpm=90."""
    return [
        sys.executable,
        "-m",
        "vabench.launch",
        "+experiment=smoke",
        "model=openai",
        "model.id=openai/test-model",
        f"model.api_key_env={KEY_VAR}",
        f"model.api_base={server.url}",
        "model.rpm=90",
        "model.max_retries=10",
        "model.backoff_initial_s=0.1",
        "model.backoff_max_s=1",
        "tasks=[grasp_single_cube]",
        "seeds=1",
        f"results_dir={results}",
        f"run_id={run_id}",
        *more,
    ]


def sweep_and_launcher(tmp_path, *more: str, moves: int = 8) -> tuple[RateLimit, AllAtOnce, list]:
    """A 2-job joblib sweep and a second launcher at once, one key, one provider: 3 jobs of ``moves``
    moves and a stop each."""
    limit, gate = provider({"a", "b", "c"}, stop_after(moves))
    key = f"sk-test-{uuid.uuid4().hex}"
    with ScriptedServer(default=limit, keep_bodies=False) as server:
        swept = launcher(server, tmp_path, "sweep", "+model.extra.extra_body.job=a,b", *more)
        swept[3:3] = ["-m"]  # before the overrides
        swept += ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
        cmds = [swept, launcher(server, tmp_path, "single", "+model.extra.extra_body.job=c", *more)]
        procs = [
            subprocess.Popen(c, cwd=ROOT, env=env(key), stdout=subprocess.PIPE, stderr=subprocess.PIPE) for c in cmds
        ]
        try:
            done = [p.communicate(timeout=900) for p in procs]
        finally:
            for p in procs:
                p.kill()
    for p, (_, err) in zip(procs, done, strict=True):
        assert p.returncode == 0, err.decode()[-3000:]
    assert gate.waited_out == [] and gate.seen == {"a", "b", "c"}
    rows = [read_rows(tmp_path / "sweep" / job) for job in ("job0", "job1")] + [read_rows(tmp_path / "single")]
    assert all(len(df) == 1 and (df["status"] == "ok").all() for df in rows)
    return limit, gate, rows


def test_a_joblib_sweep_and_a_second_launcher_share_the_keys_limit(tmp_path):
    """Three jobs of one key (two in a joblib sweep, one in another launcher), each allowed
    model.rpm=90, against a provider that takes 120 rpm: the provider refuses none."""
    limit, _, rows = sweep_and_launcher(tmp_path, "ray.address=none")
    assert limit.rejected == [] and len(limit.accepted) == 3 * (9 + 1)  # 9 calls a job and its endpoint probe
    assert limit.most_within() <= 4
    assert all(df["provider_retries"].sum() == 0 for df in rows)


def refused(limit: RateLimit, rows: list) -> bool:
    """The provider refused requests, saw more than its limit in a window, and the jobs retried."""
    return len(limit.rejected) > 0 and limit.most_within() > 4 and sum(df["provider_retries"].sum() for df in rows) > 0


@pytest.mark.interop
def test_the_same_jobs_pacing_alone_are_refused(tmp_path):
    """The negative control, small: the same three jobs, 3 moves each, with ``model.share_limits=false``
    (each paces alone, as before issue 41): the provider refuses some, and the jobs finish anyway."""
    limit, _, rows = sweep_and_launcher(tmp_path, "ray.address=none", "model.share_limits=false", moves=3)
    assert refused(limit, rows)


@pytest.mark.slow  # ~2 min: the negative control at 8 moves a job
def test_the_same_jobs_pacing_alone_for_longer_are_refused(tmp_path):
    limit, _, rows = sweep_and_launcher(tmp_path, "ray.address=none", "model.share_limits=false")
    assert refused(limit, rows)


@RAY
@pytest.mark.slow  # ~3 min: three private Rays (ray.address=local), each with its limiter actor
def test_launchers_with_private_rays_share_the_keys_limit(tmp_path):
    limit, _, _ = sweep_and_launcher(tmp_path, "ray.env_actors=1")
    assert limit.rejected == []
