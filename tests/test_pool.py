"""The driver never waits forever for a worker, and its backstop kills stuck workers, never slow
ones: the pool's and the backstop's rules on a scripted backend and clock (milliseconds), then on
a real local Ray where one worker cannot be placed and where none can."""

from __future__ import annotations

import os

import pytest

from tests.test_driver import smoke
from vabench.run.actors import pool as pool_mod
from vabench.run.actors.backstop import Backstop, Limits
from vabench.run.actors.pool import ClusterStarved, WorkerPool
from vabench.run.driver import Driver

RAY = pytest.mark.xdist_group("ray")


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Ref:
    def __init__(self, value=None):
        self.value, self.done, self.error = value, False, None


class FakeBackend:
    """Workers the test places, answers and kills by hand."""

    def __init__(self):
        self.workers, self.killed, self.released, self.asked = [], [], [], []
        self.board, self.cluster = {}, None  # cluster: {run: (live, pending)} as Ray's actor table says

    def runs(self):
        return self.cluster

    def capacity(self) -> int:
        return 4

    def new_worker(self, slots: int):
        worker = type("W", (), {})()
        worker.n, worker.place = len(self.workers), Ref(123)
        self.workers.append(worker)
        return worker

    def placing(self, worker):
        return worker.place

    def wait(self, refs, timeout, every=False):
        return [r for r in refs if r.done]

    def get(self, ref):
        if ref.error:
            raise ref.error
        return ref.value

    def kill(self, worker):
        self.killed.append(worker.n)

    def release(self, worker):
        self.released.append(worker.n)

    def lacks(self) -> str:
        return "2.0/2.0 CPU in use"

    def ask(self, worker, limit_s):
        ref = Ref([])
        self.asked.append((worker.n, ref, limit_s))
        return ref

    def read_board(self):
        ref = Ref(dict(self.board))
        ref.done = True
        return ref

    def worker_id(self, worker):
        return f"w{worker.n}"


def pool_of(n: int, place_s=60.0, starve_s=300.0):
    backend, clock, lines = FakeBackend(), Clock(), []
    pool = WorkerPool(backend, place_s, starve_s, lines.append, clock, load=lambda: 1.0)
    pool.start(n, n)
    return pool, backend, clock, lines


def test_only_live_workers_get_episodes_and_a_worker_never_placed_is_given_up_saying_what_the_cluster_lacks():
    pool, backend, clock, lines = pool_of(3)
    pool.tick(wanted=True)
    assert pool.seat() is None  # nothing placed yet: no episode waits on a pending worker
    backend.workers[0].place.done = True
    pool.tick(wanted=True)
    assert pool.seat() is backend.workers[0] and pool.seat() is None  # one slot, on the live worker
    clock.now = 61.0
    pool.tick(wanted=True)
    assert sorted(backend.killed) == [1, 2] and pool.given_up == 2  # cancelled, never waited on again
    assert lines == [
        "2 worker(s) pending for 61 s (ray.place_timeout_s=60 x load 1.0): 2.0/2.0 CPU in use; "
        "given up, their episodes run on the 1 live worker(s)"
    ]
    pool.done(backend.workers[0])
    assert pool.seat() is backend.workers[0]  # a re-queued episode runs on the live worker's free slot


def test_a_run_asks_for_no_more_workers_than_the_cluster_holds_while_it_has_none():
    pool, backend, clock, lines = pool_of(6)
    backend.cluster = {"self": (0, 6)}  # the cluster holds 4 (FakeBackend.capacity)
    pool.tick(wanted=True)
    assert sorted(backend.killed) == [4, 5] and pool.given_up == 2
    assert lines == [
        "2 of this run's 6 pending worker(s) given up: the cluster holds 4 and 1 run(s) want some (2.0/2.0 CPU in use)"
    ]


def test_a_run_with_no_live_worker_stops_as_interrupted_within_the_bound():
    pool, backend, clock, _ = pool_of(2, starve_s=300.0)
    clock.now = 299.0
    pool.tick(wanted=True)  # within the bound: keeps waiting (a pending worker is never given up alone)
    assert backend.killed == []
    clock.now = 301.0
    with pytest.raises(
        ClusterStarved,
        match=r"2 worker\(s\) pending for 301 s and none live \(ray.starve_timeout_s=300 x load 1.0\): 2.0/2.0 CPU",
    ):
        pool.tick(wanted=True)


def test_a_lost_workers_replacement_is_bounded_like_any_other_and_idle_workers_are_freed_at_the_end():
    pool, backend, clock, _ = pool_of(2)
    for w in backend.workers:
        w.place.done = True
    pool.tick(wanted=True)
    first = pool.seat()
    assert pool.lost(first) and not pool.lost(first)  # one replacement per dead worker
    assert pool.crashes == 1 and len(backend.workers) == 3
    clock.now = 500.0  # the replacement never places; the other worker lives: give it up, no stop
    pool.tick(wanted=True)
    assert 2 in backend.killed and pool.given_up == 1
    pool.tick(wanted=False)  # nothing left to start: the idle worker frees its CPU for other runs now
    assert backend.released == [1] and pool.members == {}


def test_a_run_holding_more_than_its_share_makes_room_for_a_starved_one_and_a_starved_one_asks_for_its_share():
    pool, backend, clock, lines = pool_of(3)
    for w in backend.workers:
        w.place.done = True
    pool.tick(wanted=True)
    busy = [pool.seat(), pool.seat()]  # two of three workers run an episode
    backend.cluster = {"self": (3, 0), "other": (0, 4)}  # 4 workers fit; 2 runs want some: 2 each
    clock.now = 10.0
    pool.tick(wanted=True)
    assert backend.released == [next(w.n for w in backend.workers if w not in busy)]  # the idle one, at once
    assert lines[-1] == (
        "1 other run(s) on the cluster have no worker: retiring 1 of this run's 3 as their episodes end "
        "(a fair share is 2)"
    )
    starved, sbackend, sclock, _ = pool_of(4)
    sbackend.cluster = {"self": (0, 4), "other": (3, 0)}
    sclock.now = 10.0
    starved.tick(wanted=True)
    assert sorted(sbackend.killed) == [2, 3]  # keeps its share of requests pending, not all four


def backstop_of(load=1.0):
    backend, clock = FakeBackend(), Clock()
    worker = backend.new_worker(1)
    stop = Backstop(backend, Limits(check_every_s=10, hang_s=100, stuck_s=600), clock, lambda: load)
    stop.alive(worker)
    return stop, backend, clock, worker


def test_a_slow_worker_that_never_answers_a_check_but_makes_progress_is_never_killed():
    stop, backend, clock, worker = backstop_of()
    for t in range(10, 1000, 10):  # its checks stay unanswered (a busy GIL) for 1000 s
        clock.now = t
        backend.board["w0"] = t  # but its episodes step, render and call their model
        assert stop.verdicts([worker]) == []
    assert len(backend.asked) == 1  # one check outstanding, never a pile of them


def test_a_worker_with_no_sign_of_progress_is_killed_after_hang_s_times_load_saying_why():
    stop, backend, clock, worker = backstop_of(load=2.0)
    clock.now = 150.0
    assert stop.verdicts([worker]) == []  # 150 s < 100 s x load 2
    clock.now = 201.0
    [(killed, why)] = stop.verdicts([worker])
    assert killed is worker
    assert why.startswith("no sign of progress for 201 s") and "ray.hang_s=100 x load 2.0" in why


def test_an_answer_is_evidence_and_an_episode_stuck_in_one_simulator_call_is_named():
    stop, backend, clock, worker = backstop_of()
    clock.now = 90.0
    stop.verdicts([worker])
    (_, check, limit) = backend.asked[0]
    assert limit == 600
    check.done = True  # answered at 90 s: nothing stuck
    stop.verdicts([worker])
    clock.now = 180.0  # 90 s after the answer: still within hang_s
    assert stop.verdicts([worker]) == []
    (_, check, _) = backend.asked[-1]
    check.value, check.done = ["grasp_single_cube/seed0"], True
    [(_, why)] = stop.verdicts([worker])
    assert "inside one simulator call for over 600 s (ray.stuck_s=600 x load 1.0)" in why


@pytest.fixture(scope="module")
def ray_two_cpus():
    os.environ["RAY_AUTH_MODE"] = "disabled"
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["VABENCH_TEST_KEY"] = "sk-test"  # before Ray starts: its workers inherit it (never a runtime_env)
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def quiet(run, lines=None) -> Driver:
    return Driver(run, log=(lines.append if lines is not None else lambda *_: None), progress=False)


FULL = ("tasks=[grasp_single_cube]", "seeds=2", "ray.env_actors=2", "ray.episodes_per_actor=1", "ray.actor_cpus=2")


@RAY
def test_on_ray_a_worker_the_cluster_cannot_hold_is_given_up_and_its_slot_goes_to_the_live_one(
    ray_two_cpus, tmp_path, monkeypatch
):
    """Two workers of 1 CPU each on a 2-CPU Ray one CPU of which another user holds: one is
    placed, the other is given up after place_timeout_s and both episodes run on the live one."""
    monkeypatch.setattr(pool_mod, "load_factor", lambda: 1.0)  # the bound exact: 1 s, far less than an episode
    ray = ray_two_cpus
    blocker = ray.remote(num_cpus=1)(Blocker).remote()  # another user's work holds one of the two CPUs
    ray.get(blocker.ready.remote())
    lines: list[str] = []
    run = smoke(tmp_path, "full", *FULL[:-1], "ray.actor_cpus=1", "ray.place_timeout_s=1")
    driver = quiet(run, lines)
    try:
        df = driver.execute()
    finally:
        ray.kill(blocker)
    assert len(df) == 2 and (df["status"] == "ok").all() and (df["attempt"] == 1).all()
    assert driver.counts["given_up"] == 1 and driver.counts["worker_crashes"] == 0
    said = [line for line in lines if "pending for" in line]
    assert len(said) == 1 and "(ray.place_timeout_s=1 x load 1.0)" in said[0] and "CPU in use" in said[0], lines


class Ticks:
    """A clock each reading of which is ``step`` s after the one before; read ``most`` times, it fails
    the test (a run that never stops)."""

    def __init__(self, step: float, most: int = 100):
        self.now, self.step, self.most, self.reads = 0.0, step, most, 0

    def __call__(self) -> float:
        self.reads += 1
        assert self.reads <= self.most, f"the pool's clock was read {self.most} times and the run did not stop"
        self.now += self.step
        return self.now - self.step


@RAY
def test_on_ray_a_run_no_worker_of_which_can_be_placed_stops_as_interrupted_and_resumes(
    ray_two_cpus, tmp_path, monkeypatch
):
    """A blocker holds one of the two CPUs: no 2-CPU worker fits, the run says what the cluster has
    in use and stops at the pool's first look past starve_timeout_s (which counts a worker's start
    too: shaders compile); freed, the same run folder resumes to completion."""
    monkeypatch.setattr(pool_mod, "load_factor", lambda: 1.0)  # the bound exact: 45 s on the pool's clock
    ray = ray_two_cpus
    blocker = ray.remote(num_cpus=1)(Blocker).remote()
    ray.get(blocker.ready.remote())
    lines: list[str] = []
    run = smoke(tmp_path, "starved", *FULL, "ray.starve_timeout_s=45")
    driver = quiet(run, lines)
    driver.clock = Ticks(10.0)  # the pool reads it when made (0), at each worker it asks for (10, 20), at each look
    # its first look (30 s) keeps its fair share, the worker pending since 10 s; the look at 60 s is past the bound
    stopped = r"1 worker\(s\) pending for 50 s and none live \(ray.starve_timeout_s=45 x load 1.0\): .*/2.0 CPU in use"
    with pytest.raises(ClusterStarved, match=stopped):
        driver.execute()
    assert any(f"rerun with run_id={run.run_id} to resume" in line for line in lines)
    ray.kill(blocker)
    df = quiet(smoke(tmp_path, "starved", *FULL)).execute()  # the default bound outlasts a worker's start
    assert len(df) == 2 and (df["status"] == "ok").all()


class Blocker:
    def ready(self) -> bool:
        return True


def test_a_summary_another_driver_is_learning_is_waited_for_and_reused_not_learned_again(tmp_path):
    """Parallel jobs of a study share the summary store: the cube summary is being learned by
    another (live) driver, so this one learns only the bowl's, waits, and reuses the cube's."""
    from vabench.agents.summaries.summary_store import SummaryStore
    from vabench.run.folder.learnlock import _lock, learn_once

    store = SummaryStore(tmp_path)
    other = _lock(store, "m", "grasp_single_cube", lambda *_: None)
    other.acquire()
    learned, lines = [], []

    def other_finishes(line: str) -> None:  # told it waits: the other driver stores its summary, ends
        lines.append(line)
        store.path("m", "grasp_single_cube").write_text("{}")
        other.release()

    failed = learn_once(
        store,
        "m",
        ["grasp_single_cube", "place_cube_in_bowl"],
        lambda t: learned.append(t) or {},
        lambda: None,
        other_finishes,
    )
    assert failed == {} and learned == [["place_cube_in_bowl"]]
    assert lines == ["waiting for another driver learning summaries of: grasp_single_cube (they are then reused)"]


def test_the_progress_bar_ends_on_the_exact_tally(tmp_path, capfd):
    """The last line drawn counts the last episode (it once showed ok=118 at 120/120)."""
    run = smoke(tmp_path, "bar", "ray.address=none", "tasks=[grasp_single_cube]", "seeds=1")
    Driver(run, log=lambda *_: None, progress=True).execute()
    drawn = capfd.readouterr().err.replace("\r", "\n").splitlines()
    last = [line for line in drawn if "1/1" in line][-1]
    assert "ok=1" in last and "infra=0" in last, drawn[-5:]


@RAY
def test_on_ray_a_summary_learning_the_cluster_cannot_place_stops_the_run_as_interrupted(
    ray_two_cpus, tmp_path, demo_root
):
    """The learning of an own summary waits for a CPU like a worker: with both CPUs held, the run
    stops within starve_timeout_s x load instead of waiting forever."""
    from tests.openai_server import ScriptedServer

    ray = ray_two_cpus
    blocker = ray.remote(num_cpus=2)(Blocker).remote()
    ray.get(blocker.ready.remote())
    try:
        with ScriptedServer(default='{"stop": true}') as server:
            run = smoke(
                tmp_path,
                "unlearned",
                "model=openai",
                "model.id=openai/learner",
                "model.api_key_env=VABENCH_TEST_KEY",
                f"model.api_base={server.url}",
                "summary=own",
                f"demo_root={demo_root}",
                "tasks=[grasp_single_cube]",
                "seeds=1",
                "ray.starve_timeout_s=2",
            )
            with pytest.raises(ClusterStarved, match=r"summary learning not started for \d+ s .*2.0/2.0 CPU in use"):
                quiet(run).execute()
            assert server.requests == []
    finally:
        ray.kill(blocker)
