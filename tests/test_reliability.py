"""Issue 12: an interruption never costs an attempt, a rerun retries infra rows with a fresh budget,
one driver per run folder, and provider retries are visible in the rows."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from subprocess import DEVNULL, PIPE

import psutil
import pytest

from tests.fakeclock import FakeClock
from tests.openai_server import ScriptedServer
from tests.test_driver import ROOT, smoke
from vabench.core.errors import Interrupted
from vabench.results.outcomes import read_rows, write_row
from vabench.run.actors.workerconfig import NodeCheckFailed
from vabench.run.config.specs import expand
from vabench.run.driver import Driver, infra_row, todo
from vabench.run.folder import lock as runlock
from vabench.run.folder.lock import LOCK_NAME, DriverWatch, RunLock, RunLocked

RAY = pytest.mark.xdist_group("ray")  # tests on Ray share one xdist worker (kill tests look for Ray's processes)

ONE = ("ray.address=none", "seeds=1", "tasks=[grasp_single_cube]")
KEY_VAR = "VABENCH_TEST_KEY"
MOVE_UP = json.dumps({"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 10})
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def quiet(run, said=None):
    return Driver(run, log=(said.append if said is not None else lambda *_: None), progress=False)


def test_stale_record_folders_of_interrupted_attempts_are_set_aside_and_cost_no_attempt(tmp_path):
    run = smoke(tmp_path, "stale", *ONE)
    spec = expand(run)[0]
    for n in (1, 2, 3):  # what three interrupted drivers used to leave behind
        stale = spec.record_dir(run.run_dir) / f"attempt{n}"
        (stale / "frames").mkdir(parents=True)
        (stale / "events.jsonl").write_text('{"seq": 1, "type": "episode_start"}\n')
    df = quiet(run).execute()
    assert len(df) == 1
    row = df.iloc[0]
    assert (row["status"], int(row["attempt"]), bool(row["success"])) == ("ok", 1, True)
    names = sorted(p.name for p in spec.record_dir(run.run_dir).iterdir())
    assert names == ["attempt1", "attempt1.interrupted-1", "attempt2", "attempt3"]
    kept = spec.record_dir(run.run_dir) / "attempt1.interrupted-1" / "events.jsonl"
    assert kept.read_text().startswith('{"seq": 1')


def test_a_rerun_gives_exhausted_infra_rows_a_fresh_budget_unless_told_not_to(tmp_path):
    run = smoke(tmp_path, "outage", *ONE)
    spec = expand(run)[0]
    write_row(spec.outcome_path(run.run_dir), infra_row(run, spec, run.options.max_attempts, "model: provider down"))
    skip = smoke(tmp_path, "outage", *ONE, "retry_infra=false")
    assert todo(skip) == ([], 1)
    assert todo(run) == ([(spec, run.options.max_attempts + 1)], 0)
    said = []
    df = quiet(run, said).execute()
    assert "1 infra_error row(s) retried" in said[0]
    assert (df.iloc[0]["status"], int(df.iloc[0]["attempt"])) == ("ok", run.options.max_attempts + 1)


def test_within_a_run_an_episode_gets_max_attempts_counting_on_from_its_last_attempt(tmp_path, monkeypatch):
    from vabench.run.actors.worker import EpisodeWorker

    run = smoke(tmp_path, "budget", *ONE)
    spec = expand(run)[0]
    write_row(spec.outcome_path(run.run_dir), infra_row(run, spec, 5, "worker died"))
    calls = []

    def crash(self, episode):
        calls.append(episode.attempt)
        raise RuntimeError("simulated worker bug")

    monkeypatch.setattr(EpisodeWorker, "run", crash)
    df = quiet(run).execute()
    assert calls == [6, 7, 8]
    assert (df.iloc[0]["status"], int(df.iloc[0]["attempt"])) == ("infra_error", 8)
    assert len(read_rows(run.run_dir)) == 1


def test_a_crashed_attempt_stays_counted_when_the_driver_is_then_interrupted(tmp_path, monkeypatch):
    from vabench.run.actors.worker import EpisodeWorker

    run = smoke(tmp_path, "crash_then_stop", *ONE)
    spec = expand(run)[0]
    real, calls = EpisodeWorker.run, []

    def crash_then_interrupt(self, episode):
        calls.append(episode.attempt)
        raise RuntimeError("simulated worker bug") if episode.attempt == 1 else KeyboardInterrupt

    monkeypatch.setattr(EpisodeWorker, "run", crash_then_interrupt)
    with pytest.raises(Interrupted):
        quiet(run).execute()
    row = read_rows(run.run_dir).iloc[0]  # the crash's row was written before attempt 2 started
    assert calls == [1, 2] and (row["status"], int(row["attempt"])) == ("infra_error", 1)
    assert "simulated worker bug" in row["error"]
    monkeypatch.setattr(EpisodeWorker, "run", real)
    assert todo(run) == ([(spec, 2)], 0)
    df = quiet(run).execute()
    assert (df.iloc[0]["status"], int(df.iloc[0]["attempt"])) == ("ok", 2)


def test_a_second_driver_is_refused_while_the_first_runs_and_takes_over_once_it_is_gone(tmp_path):
    with ScriptedServer(default={"delay": 1.0, "then": MOVE_UP}) as server:  # an episode of about a minute
        cmd = [sys.executable, "-m", "vabench.launch", "+experiment=smoke", "model=openai", "model.id=openai/slow"]
        cmd += [f"model.api_key_env={KEY_VAR}", f"model.api_base={server.url}", *ONE]
        cmd += [f"results_dir={tmp_path}", "run_id=locked"]
        env = {**ENV, KEY_VAR: "sk-test-not-a-secret-123"}
        first = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True, stdout=DEVNULL, stderr=DEVNULL)
        lock = tmp_path / "locked" / LOCK_NAME
        run = smoke(tmp_path, "locked", *ONE)  # the oracle, on the same run folder
        try:
            _wait_for(lambda: lock.exists() and len(server.requests) > 1, first)  # past the endpoint probe
            info = json.loads(lock.read_text())
            assert (info["pid"], info["host"]) == (first.pid, socket.gethostname())
            with pytest.raises(RunLocked, match=f"in use by another driver .*pid {first.pid}"):
                quiet(run).execute()
            second = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
            assert second.returncode == 2 and "in use by another driver" in second.stderr  # Exit.REFUSED
            assert "Traceback" not in second.stderr and first.poll() is None
        finally:
            os.killpg(first.pid, signal.SIGKILL)  # kill -9: its lock stays behind
            first.wait()
    assert lock.exists()
    said = []
    df = quiet(run, said).execute()
    assert any("taking over the lock of a driver that has ended" in s and f"pid {first.pid}" in s for s in said)
    assert len(df) == 1 and df.iloc[0]["status"] == "ok" and not lock.exists()


def _wait_for(condition, proc, timeout: float = 300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        assert proc.poll() is None, "the process ended before the condition held"
        time.sleep(0.1)
    raise AssertionError("timed out")


@RAY
def test_three_ctrl_c_and_one_kill_of_the_driver_cost_no_attempt_and_lose_nothing(tmp_path):
    """Real Ray, the real launcher, a slow local model: interrupt the same episode four times."""
    from tests.test_cluster import stop_after

    slow = stop_after(6)
    with ScriptedServer(default=lambda body: {"delay": 0.3, "then": slow(body)}) as server:
        cmd = [sys.executable, "-m", "vabench.launch", "+experiment=smoke", "model=openai", "model.id=openai/slow"]
        cmd += [f"model.api_key_env={KEY_VAR}", f"model.api_base={server.url}", "tasks=[grasp_single_cube]"]
        cmd += ["seeds=1", "ray.env_actors=1", f"results_dir={tmp_path}", "run_id=resumed"]
        env = {**ENV, KEY_VAR: "sk-test-not-a-secret-123"}
        records = tmp_path / "resumed" / "_records"

        def mid_episode(i: int):  # this run's attempt (after i set aside) has had a model answer
            def check() -> bool:
                try:
                    aside = len(list(records.rglob("attempt1.interrupted-*")))
                    replies = ('"type": "reply"' in f.read_text() for f in records.rglob("attempt1/*.jsonl"))
                    return aside == i and any(replies)
                except FileNotFoundError:  # the driver set a folder aside while we walked it: look again
                    return False

            return check

        for i, how in enumerate((signal.SIGINT, signal.SIGINT, signal.SIGINT, signal.SIGKILL)):
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True, stdout=DEVNULL, stderr=PIPE)
            try:
                _wait_for(mid_episode(i), proc)
                if how == signal.SIGINT:
                    proc.send_signal(signal.SIGINT)
                    assert proc.wait(timeout=120) == 130, proc.stderr.read().decode()[-2000:]
            finally:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # the driver and the Ray it started, at once
                except ProcessLookupError:
                    pass  # Ctrl-C already ended them all
                proc.wait()
            assert not list((tmp_path / "resumed" / "outcomes").rglob("*.parquet"))
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    df = read_rows(tmp_path / "resumed")
    assert len(df) == 1
    row = df.iloc[0]
    assert (row["status"], row["end_reason"], int(row["attempt"]), int(row["steps"])) == ("ok", "stop", 1, 6)
    folder = next(records.rglob("attempt1")).parent
    kept = sorted(p.name for p in folder.iterdir())
    assert kept == ["attempt1"] + [f"attempt1.interrupted-{n}" for n in (1, 2, 3, 4)]
    assert all((folder / name / "events.jsonl").exists() for name in kept)


@RAY
def test_workers_of_a_killed_driver_stop_at_once_and_write_no_outcome(tmp_path):
    from tests.test_cluster import stop_after
    from tests.test_driver import _worker_pids

    slow = stop_after(8)
    with ScriptedServer(default=lambda body: {"delay": 0.3, "then": slow(body)}) as server:
        cmd = [sys.executable, "-m", "vabench.launch", "+experiment=smoke", "model=openai", "model.id=openai/slow"]
        cmd += [f"model.api_key_env={KEY_VAR}", f"model.api_base={server.url}", "tasks=[grasp_single_cube]"]
        cmd += ["seeds=1", "ray.env_actors=1", f"results_dir={tmp_path}", "run_id=orphans"]
        env = {**ENV, KEY_VAR: "sk-test-not-a-secret-123"}
        old = frozenset(_worker_pids())
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True, stdout=DEVNULL, stderr=DEVNULL)
        try:
            _wait_for(lambda: len(server.requests) >= 7 and _worker_pids(old), proc)  # 2 calls to go
            workers = _worker_pids(old)
            os.kill(proc.pid, signal.SIGKILL)  # the driver only: the Ray it started lives on for a while
            proc.wait()
            _, alive = psutil.wait_procs(_processes(workers), timeout=120)  # a hang guard, not a measure
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
    assert alive == []
    # each stopped itself on its driver watch (Ray's own clean-up of a dead driver's actors says nothing there)
    said = {pid: _stderr_of_ray_worker(pid) for pid in workers}
    assert all(f"stopping, the driver (pid {proc.pid}) has ended" in text for text in said.values()), said
    assert not (tmp_path / "orphans" / "outcomes").exists()


def _processes(pids: list[int]) -> list[psutil.Process]:
    out = []
    for pid in pids:
        try:
            out.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass  # gone already
    return out


def _stderr_of_ray_worker(pid: int) -> str:
    """What a Ray worker process wrote to stderr: Ray keeps it in its session's log folder."""
    root = Path(os.environ.get("RAY_TMPDIR", tempfile.gettempdir())) / "ray"
    return "".join(p.read_text(errors="replace")[-5000:] for p in root.glob(f"session_*/logs/worker-*-{pid}.err"))


def _fault_injection(episodes: int, address: str) -> dict:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import fault_injection
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return fault_injection.measure(episodes, rate=0.3, address=address, seed=1)


def test_a_flaky_provider_loses_nothing_and_the_rows_count_what_the_server_saw():
    out = _fault_injection(6, "none")
    assert out["checks"] == dict.fromkeys(out["checks"], True), out
    assert sum(out["faults_logged"].values()) >= 3 and out["rows_provider_retries"] >= 3


@RAY
@pytest.mark.slow
def test_forty_episodes_on_ray_against_a_provider_failing_thirty_percent():
    out = _fault_injection(40, "local")
    assert out["checks"] == dict.fromkeys(out["checks"], True), out
    assert set(out["faults_logged"]) == {"500", "429", "timeout", "malformed"}


def _lock_file(run_dir: Path, **info) -> Path:
    path = run_dir / LOCK_NAME
    run_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**runlock._place(), "started": "then", "token": "theirs", **info}))
    return path


def test_the_run_lock_refuses_a_live_driver_and_takes_over_dead_and_reused_pids(tmp_path):
    said = []
    with RunLock(tmp_path / "a", said.append) as lock:
        assert lock.held() and DriverWatch(lock.path, lock.token).gone() is None
        with pytest.raises(RunLocked, match=f"pid {os.getpid()}"):
            RunLock(tmp_path / "a").acquire()  # this very process is alive
        assert DriverWatch(lock.path, "not-the-token").gone() == "another driver took this run folder over"
    assert not lock.path.exists()
    assert DriverWatch(lock.path, lock.token).gone() == "the run folder's driver lock is gone"
    dead = subprocess.Popen(["true"])
    dead.wait()
    for name, info in {"dead": dict(pid=dead.pid), "reused": dict(pid=os.getpid(), start_ticks=1)}.items():
        path = _lock_file(tmp_path / name, **info)  # "reused": a live pid, but not the process that wrote the lock
        assert DriverWatch(path, "theirs").gone() == f"the driver (pid {info['pid']}) has ended"
        with RunLock(tmp_path / name, said.append) as lock:
            assert lock.held() and json.loads(path.read_text())["pid"] == os.getpid()
        assert "taking over the lock of a driver that has ended" in said[-1], name


def test_a_lock_from_another_host_is_judged_by_its_heartbeat_on_the_observers_clock(tmp_path, monkeypatch):
    monkeypatch.setattr(runlock, "STALE_S", 0.6)
    monkeypatch.setattr(runlock, "HEARTBEAT_S", 0.1)
    path = _lock_file(tmp_path, host="elsewhere", pid=1)
    os.utime(path, (0, 0))  # an mtime from a clock far behind ours means nothing by itself
    clock = FakeClock()  # the watch's own clock
    watch = DriverWatch(path, "theirs", clock=clock)
    assert watch.gone() is None
    stop = threading.Event()

    def beat():  # the remote driver's heartbeat
        while not stop.wait(0.05):
            os.utime(path)

    beating = threading.Thread(target=beat, daemon=True)
    beating.start()
    with pytest.raises(RunLocked, match="host elsewhere"):
        RunLock(tmp_path).acquire()  # it watched the heartbeat move for longer than STALE_S
    clock.t += 1.0  # longer than STALE_S since the watch first looked
    assert watch.gone() is None  # it saw the heartbeat move
    stop.set()
    beating.join()
    assert watch.gone() is None  # the last beat, first seen now
    clock.t += 0.5
    assert watch.gone() is None  # unchanged for less than STALE_S
    clock.t += 0.2
    assert watch.gone() == "the driver on elsewhere has not refreshed its lock for 0.6 s"
    said = []
    with RunLock(tmp_path, said.append) as lock:  # the heartbeat stopped: taken over after STALE_S
        assert lock.held()
    assert "watching its heartbeat" in said[0] and "taking over" in said[-1]


def test_a_driver_that_lost_its_lock_stops_and_never_removes_the_new_one(tmp_path):
    with RunLock(tmp_path) as lock:
        _lock_file(tmp_path, pid=1, host="elsewhere")  # another driver took over after a long stall
        assert not lock.held()
        assert DriverWatch(lock.path, lock.token).gone() == "another driver took this run folder over"
    assert (tmp_path / LOCK_NAME).exists()


def test_a_missing_key_variable_stops_the_run_before_any_work(tmp_path, monkeypatch):
    from vabench.run.driver import run_experiment

    monkeypatch.delenv("VABENCH_UNSET_KEY", raising=False)
    with ScriptedServer(default=MOVE_UP) as server:
        unset = ("model=openai", "model.api_key_env=VABENCH_UNSET_KEY", f"model.api_base={server.url}")
        run = smoke(tmp_path, "nokey", *ONE, *unset)
        with pytest.raises(NodeCheckFailed, match="names VABENCH_UNSET_KEY, which is not set in this environment"):
            run_experiment(run, log=lambda *_: None, progress=False)
        assert server.requests == [] and not (run.run_dir / "outcomes").exists()
