"""Issue 49's bad input from a policy server, each against a real misbehaving server: NaN or inf,
the wrong action width and an empty chunk are refused answers with the reason as feedback (as a
model's invalid reply); a frame over the bound, no reply within the timeout and a socket closed
mid-episode are infrastructure failures with the reason in the row, retried as such. A run with a
misbehaving task finishes with every other episode judged."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from openpi_client import base_policy

from tests.openpi_server import OpenpiServer
from tests.test_launch import composed
from tests.test_policy import TASK, policy, small_env
from vabench.agents.chat.model import ModelConfig
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.kinds import make_model
from vabench.agents.models.offline import replay
from vabench.envs.seeds import eval_seeds
from vabench.results.recordfile import read_events
from vabench.run.config.run import from_config
from vabench.run.driver import Driver

# -- one episode each -----------------------------------------------------------------------------------------------


class Chunk(base_policy.BasePolicy):
    """The same chunk every time."""

    def __init__(self, chunk, **more):
        self.chunk, self.more = chunk, more

    def infer(self, obs: dict) -> dict:
        return {"actions": self.chunk, **self.more}


class Hang(base_policy.BasePolicy):
    """Never answers until released (the test releases it)."""

    def __init__(self):
        self.release = threading.Event()

    def infer(self, obs: dict) -> dict:
        self.release.wait()
        return {"actions": np.zeros((1, 7), np.float32)}


class NanOnce(base_policy.BasePolicy):
    """NaN on its first inference, then holding still."""

    def __init__(self):
        self.calls = 0

    def infer(self, obs: dict) -> dict:
        self.calls += 1
        return {"actions": np.full((1, 7), np.nan if self.calls == 1 else 0.0, np.float32)}


@pytest.fixture(scope="module")
def env():
    built = small_env()
    yield built
    built.close()


def play(env, server: OpenpiServer, out, **extra):
    agent = make_model(policy(server.url, **extra))
    return run_episode(env, agent, Episode.of(TASK, eval_seeds(TASK)[0], env=env, budget_scale=0.04), out)


NAN = np.full((2, 7), np.nan, np.float32)
INF = np.array([[0.0, 0.0, np.inf, 0, 0, 0, 0]], np.float32)


@pytest.mark.parametrize(
    "chunk,why",
    [
        (NAN, "'actions' holds 14 NaN or infinite number(s) of 14"),
        (INF, "'actions' holds 1 NaN or infinite number(s) of 7"),
        (np.zeros((4, 5), np.float32), "'actions' has shape (4, 5); this task needs (horizon, 7) finite numbers"),
        (np.zeros((0, 7), np.float32), "'actions' is an empty chunk (shape (0, 7))"),
    ],
)
def test_bad_numbers_or_shapes_are_refused_answers_with_the_reason_as_feedback(env, tmp_path, chunk, why):
    """As a model's invalid reply: refused with the reason (a rejected event), asked again, and at
    the repair limit a judged failure (repairs_exhausted) naming it, never an infra error that stops
    the run; the record keeps each refused answer, so a replay refuses it again."""
    server = OpenpiServer(Chunk(chunk))
    try:
        row = play(env, server, tmp_path / "ep")
    finally:
        server.shutdown()
    assert (row.status, row.end_reason, row.error_kind, row.steps) == ("ok", "repairs_exhausted", None, 0)
    assert row.error.startswith(f"policy server: {why}") and (row.repairs, row.model_calls) == (2, 3)
    events = read_events(tmp_path / "ep" / "events.jsonl")
    rejected = [e["error"] for e in events if e["type"] == "rejected"]
    assert len(rejected) == 3 and all(r == row.error for r in rejected)
    assert [e["payload"] for e in events if e["type"] == "answer"] == [{"invalid_answer": row.error}] * 3
    again = run_episode(env, replay(tmp_path / "ep" / "events.jsonl"), Episode.of(TASK, row.seed, env=env,
                        budget_scale=0.04), tmp_path / "again")  # fmt: skip
    assert (again.end_reason, again.error, again.repairs) == (row.end_reason, row.error, row.repairs)


def test_a_policy_that_recovers_from_a_bad_chunk_plays_on(env, tmp_path):
    server = OpenpiServer(NanOnce())
    try:
        row = play(env, server, tmp_path / "ep")
    finally:
        server.shutdown()
    assert (row.status, row.end_reason, row.steps, row.repairs, row.model_calls) == ("ok", "budget", 2, 1, 3)


def test_a_frame_over_the_bound_is_not_read_and_ends_the_episode_as_infra(env, tmp_path):
    server = OpenpiServer(Chunk(np.zeros((1, 7), np.float32), blob=np.zeros(100 * 2**20, np.uint8)))  # 100 MiB
    try:
        row = play(env, server, tmp_path / "ep")
    finally:
        server.shutdown()
    assert (row.status, row.error_kind, row.steps) == ("infra_error", "infra", 0)
    over = "its reply is over model.extra.max_frame_mb=16 (MiB); the connection was closed"
    assert row.error == f"model: policy server {server.url}: {over}"


def test_no_reply_within_the_timeout_is_infra_with_the_reason(env, tmp_path):
    hang = Hang()
    server = OpenpiServer(hang)
    try:
        agent = make_model(ModelConfig(id="policy", timeout_s=0.5, extra={"url": server.url}))
        row = run_episode(
            env, agent, Episode.of(TASK, eval_seeds(TASK)[0], env=env, budget_scale=0.04), tmp_path / "ep"
        )
    finally:
        hang.release.set()
        server.shutdown()
    assert (row.status, row.error_kind, row.steps) == ("infra_error", "infra", 0)
    assert row.error == f"model: policy server {server.url}: no reply within 0.5 s (model.timeout_s)"


def test_a_socket_closed_mid_episode_is_infra_with_the_reason(env, tmp_path):
    server = OpenpiServer(Chunk(np.zeros((1, 7), np.float32)), close_after=1)
    try:
        row = play(env, server, tmp_path / "ep")
    finally:
        server.shutdown()
    assert (row.status, row.error_kind, row.steps) == ("infra_error", "infra", 1)
    assert row.error.startswith(f"model: policy server {server.url}: the connection closed")


# -- a run -----------------------------------------------------------------------------------------------------


class ByTask(base_policy.BasePolicy):
    """Holds still on the cube, hangs on the bowl, answers NaN on the bell (by the instruction)."""

    def __init__(self):
        self.release = threading.Event()

    def infer(self, obs: dict) -> dict:
        if "bowl" in obs["prompt"]:
            self.release.wait()
        return {"actions": np.full((1, 7), np.nan if "bell" in obs["prompt"] else 0.0, np.float32)}


def test_a_run_with_misbehaving_tasks_finishes_and_judges_every_other_episode(tmp_path):
    served = ByTask()
    server = OpenpiServer(served)
    tasks = f"tasks=[{TASK},place_cube_in_bowl,click_bell_right]"
    overrides = ("model=policy", f"model.extra.url={server.url}", "model.timeout_s=1", tasks, "seeds=1")
    more = ("render=small", "budget_scale=0.04", "max_attempts=2", "ray.address=none", "run_id=bad")
    run = from_config(composed(f"results_dir={tmp_path}", *overrides, *more), tmp_path / "bad")
    try:
        rows = Driver(run, log=lambda *_: None, progress=False).execute()
    finally:
        served.release.set()
        server.shutdown()
    kind = [k if isinstance(k, str) else None for k in rows.error_kind]
    got = {(r.task, r.attempt): (r.status, r.end_reason, k) for r, k in zip(rows.itertuples(), kind, strict=True)}
    assert got == {
        (TASK, 1): ("ok", "budget", None),  # played to its budget beside the others
        ("click_bell_right", 1): ("ok", "repairs_exhausted", None),  # judged: a failure of the policy
        ("place_cube_in_bowl", 2): ("infra_error", "infra_error", "infra"),  # retried as infra, then given up
    }, got
    (hung,) = rows[rows.task == "place_cube_in_bowl"].error
    assert hung == f"model: policy server {server.url}: no reply within 1 s (model.timeout_s)"
    assert server.connections == 4  # one per attempt: cube, bell, bowl twice
