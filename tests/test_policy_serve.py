"""Issue 49's server side of model=policy: a connection per episode (a server that keeps state per
connection sees each episode alone), episodes in flight per worker each on their own connection,
serve_policy's batching window, and the training-seed overlap the launcher warns of (issue 48; the
launcher's line: tests/test_policy.py). A policy's bad answers: tests/test_policy_bad.py."""

from __future__ import annotations

import threading

import numpy as np
import requests
from openpi_client import base_policy

from tests.openpi_server import OpenpiServer
from tests.test_launch import composed
from tests.test_policy import TASK
from vabench.agents.episode import Episode
from vabench.agents.models import policy_wire
from vabench.agents.models.policy import trained_overlap
from vabench.results.recordfile import read_events
from vabench.run.actors.worker import EpisodeWorker
from vabench.run.actors.workerconfig import WorkerConfig
from vabench.run.config.run import from_config
from vabench.run.config.specs import expand
from vabench.serve_policy import Policy, PolicyServer

UP = [0.0, 0.0, 0.01, 0.0, 0.0, 0.0, 0.0]  # 1 cm up, the gripper open
SHORT = "budget_scale=0.04"  # 2 steps of the task's 50


def test_the_training_overlap_reads_untrusted_metadata_plainly():
    assert trained_overlap({}, [(TASK, 1)]) is None
    assert trained_overlap({"trained_on": "everything"}, [(TASK, 1)]) is None
    assert trained_overlap({"trained_on": {TASK: [2]}}, [(TASK, 1)]) is None
    line = trained_overlap({"trained_on": {TASK: [1, 2], "b": [7]}}, [(TASK, 2), (TASK, 1), ("b", 7), ("b", 8)])
    assert line.startswith(
        f"warning: the policy was trained on 3 of this run's episodes (its metadata's trained_on: b 7; {TASK} 1, 2)"
    )


# -- a connection per episode, episodes in flight ----------------------------------------------------------


class PerConnection(base_policy.BasePolicy):
    """A policy that keeps state per connection, as a stateful server does (each connection is a
    thread of the server, reset on connect): the first chunk of a session moves up 1 cm, the rest
    hold still. The first ``meet`` inferences wait for one another, so they must come from episodes
    in flight at once (one at a time, the first would wait out the barrier and fail)."""

    def __init__(self, meet: int):
        self.local, self.barrier = threading.local(), threading.Barrier(meet, timeout=60)
        self.calls, self.lock = 0, threading.Lock()

    def reset(self) -> None:
        self.local.calls = 0

    def infer(self, obs: dict) -> dict:
        with self.lock:
            self.calls += 1
            meet = self.calls <= self.barrier.parties
        if meet:
            self.barrier.wait()
        self.local.calls += 1
        return {"actions": np.array([UP if self.local.calls == 1 else [0.0] * 7], np.float32)}


def test_each_episode_has_its_own_connection_and_several_run_at_once_in_one_worker(tmp_path):
    """Three episodes on a worker with two seats, two at a time (the worker path of a Ray run): each
    episode connects afresh and closes with a close frame, so a server that keeps state per
    connection sees each episode alone; episodes in flight share nothing but the server."""
    server = OpenpiServer(PerConnection(meet=2))
    overrides = ("model=policy", f"model.extra.url={server.url}", f"tasks=[{TASK}]", "seeds=3", "render=small", SHORT)
    run = from_config(composed(f"results_dir={tmp_path}", "run_id=inflight", *overrides), tmp_path / "inflight")
    worker, specs, rows = EpisodeWorker(WorkerConfig.of(run, slots=2)), expand(run), []

    def play(k: int) -> None:  # the first seat's thread plays two episodes, one after the other
        for spec in specs[k::2]:
            rows.append(worker.run(Episode(spec))["row"])

    try:
        threads = [threading.Thread(target=play, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        closed = server.wait_closed()
    finally:
        worker.close()
        server.shutdown()
    assert len(rows) == 3 and all(r["status"] == "ok" and r["model_calls"] == 2 for r in rows), rows
    assert (server.connections, server.most_open, server.dropped, closed) == (3, 2, 0, True)
    assert [len(s) for s in server.sessions] == [2] * 3  # each connection: one episode's two inferences
    for row in rows:  # each episode met its session's first chunk: the move up, then a hold
        labels = [e["label"] for e in read_events(run.run_dir / row["record"]) if e["type"] == "action"]
        assert labels == ["right.move_world z+ 10mm", "right.gripper open"], labels


# -- the batching window ---------------------------------------------------------------------------------------


class Echo(Policy):
    """Answers each observation with its own first state number, so each client can tell its answer."""

    metadata = {"policy": "echo"}

    def __init__(self):
        self.batches: list[int] = []

    def infer(self, obs: dict) -> dict:
        return {"actions": np.full((1, 7), obs["observation/state"][0], np.float32)}

    def infer_batch(self, batch: list[dict]) -> list[dict]:
        self.batches.append(len(batch))
        return super().infer_batch(batch)


def _clients(url: str, n: int) -> list:
    return [policy_wire.PolicyClient(url, 30, None, 16) for _ in range(n)]


def test_observations_arriving_together_are_one_batch_and_each_client_gets_its_own_answer():
    policy_ = Echo()
    server = PolicyServer(policy_, port=0, batch_window_ms=60_000).start()  # closes early: every session waits
    url = f"ws://127.0.0.1:{server.port}"
    clients, go, answers = _clients(url, 3), threading.Barrier(3, timeout=30), {}

    def ask(k: int) -> None:
        go.wait()
        answers[k] = clients[k].infer({"observation/state": np.array([float(k)], np.float32)})[0]

    try:
        threads = [threading.Thread(target=ask, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        stats = requests.get(f"http://127.0.0.1:{server.port}/stats", timeout=10).json()
    finally:
        for c in clients:
            c.close()
        server.shutdown()
    assert sorted(answers) == [0, 1, 2]
    for k, reply in answers.items():
        assert np.all(reply["actions"] == k) and reply["server_timing"]["batch_size"] == 3
    assert policy_.batches == [3] and stats == {"batches": {"3": 1}, "inferences": 3}


def test_a_lone_client_never_waits_for_the_window():
    server = PolicyServer(Echo(), port=0, batch_window_ms=60_000).start()
    (client,) = _clients(f"ws://127.0.0.1:{server.port}", 1)
    try:
        reply, latency = client.infer({"observation/state": np.array([1.0], np.float32)})
    finally:
        client.close()
        server.shutdown()
    assert reply["server_timing"]["batch_size"] == 1 and latency < 30  # not the minute's window
