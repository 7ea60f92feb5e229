"""The driver end to end: with the oracle on Ray (outcome files, resume, a killed worker, a killed
driver) and in process (the same rows; own summaries learned over real HTTP, once)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from tests.openai_server import ScriptedServer
from tests.test_launch import composed
from tests.test_learning import SUMMARY, tool
from vabench.agents.models.ratelimit import RateLimiter
from vabench.agents.summaries.summary_store import SummaryStore
from vabench.analysis import success_matrix
from vabench.core.errors import Interrupted
from vabench.results.layout import RUN_INFO, RunInfo
from vabench.results.outcomes import read_rows, write_row
from vabench.run.actors import backends, inprocess
from vabench.run.actors.backends import backend_for
from vabench.run.actors.inprocess import InProcessBackend
from vabench.run.config.run import from_config
from vabench.run.config.specs import expand
from vabench.run.driver import Driver, infra_row, todo

ROOT = Path(__file__).resolve().parents[1]
RAY = pytest.mark.xdist_group("ray")  # tests that start Ray share one xdist worker: kill tests look for any worker
KEY = ["task", "seed", "protocol", "run_index"]
SAME = ["success", "steps", "end_reason", "robot_actions", "checkpoints_done"]


@pytest.fixture(scope="module")
def ray_session():
    os.environ["RAY_AUTH_MODE"] = "disabled"
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def smoke(results: Path, run_id: str, *overrides: str):
    cfg = composed("+experiment=smoke", f"results_dir={results}", f"run_id={run_id}", *overrides)
    return from_config(cfg, results / run_id)


def table(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(KEY).set_index(KEY)[SAME]


@pytest.fixture(scope="module")
def reference(ray_session, tmp_path_factory):
    """An uninterrupted smoke run (2 tasks x 2 seeds)."""
    results = tmp_path_factory.mktemp("results")
    run = smoke(results, "ref")
    df = Driver(run, log=lambda *_: None, progress=False).execute()
    return run, df


@RAY
def test_smoke_run_writes_one_row_per_episode(reference):
    run, df = reference
    assert len(df) == 4 and df["success"].all() and (df["status"] == "ok").all() and (df["attempt"] == 1).all()
    assert df["privileged"].all() and set(df["condition"]) == {"oracle | active | summary none | render fast"}
    assert set(df["base_task"]) == {"grasp_single_cube", "place_cube_in_bowl"}
    for rel in df["record"]:
        assert (run.run_dir / rel).is_file()
    assert (run.run_dir / RUN_INFO).is_file()
    assert len(list((run.run_dir / "outcomes").rglob("*.parquet"))) == 4
    assert pd.read_parquet(run.run_dir).shape[0] == 4  # plain pandas reads the whole run folder


@RAY
def test_rerun_skips_finished_episodes_and_retries_infra_errors(reference):
    run, _ = reference
    files = sorted((run.run_dir / "outcomes").rglob("*.parquet"))
    before = {f: f.stat().st_mtime_ns for f in files}
    assert todo(run) == ([], 4)
    spec = expand(run)[0]
    write_row(spec.outcome_path(run.run_dir), infra_row(run, spec, 1, "provider down"))
    pending, done = todo(run)
    assert (pending, done) == ([(spec, 2)], 3)
    df = Driver(run, log=lambda *_: None, progress=False).execute()
    again = df.set_index(KEY).loc[(spec.task, spec.seed, spec.protocol, spec.run_index)]
    assert (again["status"], again["attempt"], bool(again["success"])) == ("ok", 2, True)
    untouched = [f for f in files if f != spec.outcome_path(run.run_dir)]
    assert all(f.stat().st_mtime_ns == before[f] for f in untouched)


@RAY
def test_in_process_run_writes_the_same_run_folder_as_ray(reference, tmp_path, monkeypatch):
    """The laptop path (``ray.address=none``) is the same driver: same rows, records, resume."""
    _, ref = reference
    run = smoke(tmp_path, "local", "ray.address=none")
    assert isinstance(backend_for(run), InProcessBackend)
    monkeypatch.setattr(backends, "RayBackend", None)  # Ray is up in this process: make sure it is not used
    df = Driver(run, log=lambda *_: None, progress=False).execute()
    assert table(df).equals(table(ref)) and (df["status"] == "ok").all()
    assert all((run.run_dir / rel).is_file() for rel in df["record"]) and (run.run_dir / RUN_INFO).is_file()
    assert todo(run) == ([], 4)


def test_in_process_a_crashed_episode_is_retried_and_ctrl_c_writes_nothing(tmp_path, monkeypatch):
    from vabench.run.actors.worker import EpisodeWorker

    run = smoke(tmp_path, "crash", "ray.address=none", "seeds=1", "tasks=[grasp_single_cube]")
    real, calls = EpisodeWorker.run, []

    def crash_once(self, episode):
        calls.append(episode.attempt)
        if len(calls) == 1:
            raise RuntimeError("simulated worker bug")
        return real(self, episode)

    monkeypatch.setattr(EpisodeWorker, "run", crash_once)
    df = Driver(run, log=lambda *_: None, progress=False).execute()
    assert calls == [1, 2] and len(df) == 1
    assert (df.iloc[0]["status"], int(df.iloc[0]["attempt"]), bool(df.iloc[0]["success"])) == ("ok", 2, True)

    def interrupted(self, episode):
        raise KeyboardInterrupt

    monkeypatch.setattr(EpisodeWorker, "run", interrupted)
    said = []
    again = smoke(tmp_path, "stopped", "ray.address=none", "seeds=1", "tasks=[grasp_single_cube]")
    with pytest.raises(Interrupted):
        Driver(again, log=said.append, progress=False).execute()
    assert not list(again.run_dir.rglob("*.parquet")) and "rerun with run_id=stopped to resume" in said[-1]


LEARNER = ["model=openai", "model.id=openai/learner", "model.api_key_env=VABENCH_TEST_KEY", "model.max_retries=0"]


def learner_run(tmp_path, server, demo_root, run_id: str, *more: str, root: str | None = "summaries"):
    """An in-process run of a scripted HTTP model; ``root=None``: the default store, <results_dir>/_summaries."""
    cfg = composed(
        *LEARNER,
        f"model.api_base={server.url}",
        "render=fast",
        "summary=own",
        "tasks=[grasp_single_cube]",
        "seeds=1",
        "ray.address=none",
        f"results_dir={tmp_path}",
        f"run_id={run_id}",
        f"demo_root={demo_root}",
        *([f"summary_root={tmp_path / root}"] if root else []),
        *more,
    )
    return from_config(cfg, tmp_path / run_id)


def summary_block(request: dict) -> str:
    """The summary text an evaluation request carried: the system prompt's last block."""
    system = request["messages"][0]["content"]
    return system[system.rindex("\n\nSummary of ") + 2 :]


def test_own_summaries_are_learned_once_over_http_and_reach_the_episode(tmp_path, demo_root, monkeypatch):
    monkeypatch.setenv("VABENCH_TEST_KEY", "sk-test-driver")
    limiters = []  # the run's limiter: learning and the episode both ask it (model.rpm)
    monkeypatch.setattr(
        inprocess, "make_limiter", lambda run: limiters.append(RateLimiter(run.model.rpm, None)) or limiters[-1]
    )
    stop = json.dumps({"stop": True})
    with ScriptedServer() as server:
        server.script(tool("expert.retrieve"), tool("expert.frame", steps=[0, 2, 4]), tool("expert.learn", **SUMMARY))
        server.script(stop)
        run = learner_run(tmp_path, server, demo_root, "a", "model.rpm=6000")
        first = Driver(run, log=lambda *_: None, progress=False).execute()
        assert len(limiters) == 1 and limiters[0].stats()["requests"] == len(server.requests) == 4
        learned = len(server.requests)
        server.script(stop)  # a second run with the same summary root learns nothing new
        second = Driver(learner_run(tmp_path, server, demo_root, "b"), log=lambda *_: None, progress=False).execute()
        system = server.requests[-1]["messages"][0]["content"]
    assert learned == 4 and len(server.requests) == 5
    for df in (first, second):
        row = df.iloc[0]
        assert (row["status"], row["end_reason"], row["summary_source"], row["summary_model"]) == (
            "ok",
            "stop",
            "own",
            "openai/learner",
        )
        assert not row["privileged"] and row["condition"] == "openai/learner | active | summary own | render fast"
    assert SUMMARY["grasp_region"] in system
    assert (tmp_path / "summaries" / "fast" / "openai_learner" / "grasp_single_cube.json").is_file()


def test_summary_learning_that_cannot_reach_the_provider_leaves_retryable_infra_rows(tmp_path, demo_root, monkeypatch):
    monkeypatch.setenv("VABENCH_TEST_KEY", "sk-test-driver")
    with ScriptedServer(default={"status": 503}) as server:
        run = learner_run(tmp_path, server, demo_root, "down")
        df = Driver(run, log=lambda *_: None, progress=False).execute()
    row = df.iloc[0]
    assert (row["status"], row["end_reason"], int(row["steps"]), int(row["attempt"])) == (
        "infra_error",
        "infra_error",
        0,
        1,
    )
    assert row["error"].startswith("summary: ") and "gave up after" in row["error"]
    assert pd.isna(row["summary_learned"]) and pd.isna(row["summary_digest"])  # never ran: nothing to say
    assert todo(run) == ([(expand(run)[0], 2)], 0)  # a rerun tries again


def test_a_passive_run_in_the_same_results_folder_reuses_the_base_runs_summary(tmp_path, demo_root, monkeypatch):
    """Paper 5.1: the passive run keeps "its own demonstration summary". The default store is
    <results_dir>/_summaries, so the second run sends no learning request, and its row's digest is
    that of the summary text its request carried."""
    monkeypatch.setenv("VABENCH_TEST_KEY", "sk-test-driver")
    stop = json.dumps({"stop": True})
    quiet = {"log": lambda *_: None, "progress": False}
    with ScriptedServer() as server:
        server.script(tool("expert.retrieve"), tool("expert.frame", steps=[0, 2, 4]), tool("expert.learn", **SUMMARY))
        server.script(stop)
        base = Driver(learner_run(tmp_path, server, demo_root, "base", root=None), **quiet).execute()
        learned = len(server.requests)
        server.script(stop)
        said = []
        passive = learner_run(tmp_path, server, demo_root, "passive", "protocol=passive", root=None)
        again = Driver(passive, log=said.append, progress=False).execute()
        requests = server.requests[learned - 1 :]  # the base episode's request, then the passive one's
    store = tmp_path / "_summaries" / "fast"  # one store per results folder and render preset
    assert passive.summary_root == store and learned == 4 and len(requests) == 2
    assert RunInfo.read(passive.run_dir).summary_root == str(store)
    assert "expert.learn" not in json.dumps(requests[1]) and "learning summaries" not in " ".join(said)
    assert (store / "openai_learner" / "grasp_single_cube.json").is_file()
    assert not list((tmp_path / "base").rglob("_summaries")) and not list((tmp_path / "passive").rglob("_summaries"))
    assert len(read_rows(tmp_path)) == 2  # the store holds no outcome files
    for df, request, protocol in ((base, requests[0], "active"), (again, requests[1], "passive")):
        row = df.iloc[0]
        assert (row["status"], row["protocol"], row["summary_source"], bool(row["summary_learned"])) == (
            "ok",
            protocol,
            "own",
            True,
        )
        block = summary_block(request)
        assert SUMMARY["grasp_region"] in block and "openai/learner" not in block
        assert row["summary_digest"] == hashlib.sha256(block.encode()).hexdigest()[:12]
    assert base.iloc[0]["summary_digest"] == again.iloc[0]["summary_digest"]


def test_a_shared_summary_reaches_the_reader_without_its_authors_name(tmp_path, demo_root, monkeypatch):
    monkeypatch.setenv("VABENCH_TEST_KEY", "sk-test-driver")
    author = "prov/author-model-7"
    SummaryStore(tmp_path / "_summaries" / "fast").save(
        author, "grasp_single_cube", SUMMARY, [("grasp_single_cube", 0)]
    )
    with ScriptedServer(default=json.dumps({"stop": True})) as server:
        shared = ("summary=shared", f"summary.source={author}")
        run = learner_run(tmp_path, server, demo_root, "shared", *shared, root=None)
        df = Driver(run, log=lambda *_: None, progress=False).execute()
        requests = list(server.requests)
    assert len(requests) == 1 and SUMMARY["grasp_region"] in json.dumps(requests)
    assert "author-model-7" not in json.dumps(requests)  # not in the summary, nor anywhere in the request
    row = df.iloc[0]
    assert (row["summary_source"], row["summary_model"], bool(row["summary_learned"])) == (
        f"shared:{author}",
        author,
        True,
    )
    assert row["summary_digest"] == hashlib.sha256(summary_block(requests[0]).encode()).hexdigest()[:12]


def test_an_own_summary_never_learned_runs_without_it_and_the_analysis_counts_it(tmp_path, demo_root, monkeypatch):
    """A learner that never saves (not infra): the episode runs without a summary, labelled own as
    its condition says, with summary_learned false, and the tables' notes count it."""
    monkeypatch.setenv("VABENCH_TEST_KEY", "sk-test-driver")
    said = []
    with ScriptedServer(default=json.dumps({"stop": True})) as server:  # a stop is no tool: learning fails
        df = Driver(learner_run(tmp_path, server, demo_root, "unlearned"), log=said.append, progress=False).execute()
        system = server.requests[-1]["messages"][0]["content"]
    row = df.iloc[0]
    assert (row["status"], row["summary_source"], bool(row["summary_learned"])) == ("ok", "own", False)
    assert pd.isna(row["summary_digest"]) and pd.isna(row["summary_model"]) and "Summary of" not in system
    assert any("none learned" in line for line in said)
    notes = " ".join(success_matrix(df).attrs["notes"])
    assert "without the summary their condition names" in notes
    assert "1 (openai/learner | active | summary own | render fast: grasp_single_cube 1/1)" in notes


def _worker_pids(old: frozenset[int] = frozenset()) -> list[int]:
    """Env worker processes (idle, or running episodes), less ``old`` ones: a previous run's workers
    may still be exiting. Ray hands actors pre-started processes, so age cannot tell them apart."""
    pids = []
    for proc in psutil.process_iter(["cmdline"]):
        if " ".join(proc.info["cmdline"] or []).startswith("ray::EpisodeWorker") and proc.pid not in old:
            pids.append(proc.pid)
    return pids


@RAY
def test_a_killed_worker_is_replaced_and_every_episode_is_judged_once(reference, tmp_path):
    _, ref = reference
    run = smoke(tmp_path, "kill")
    killed, old = [], frozenset(_worker_pids())

    def killer():
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed:
            started = list((run.run_dir / "_records").rglob("events.jsonl")) if run.run_dir.exists() else []
            pids = _worker_pids(old)
            if started and pids:  # every worker, mid-episode: one may be idle already, released by the pool
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
                killed.extend(pids)
            time.sleep(0.2)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    driver = Driver(run, log=lambda *_: None, progress=False)
    df = driver.execute()
    thread.join()
    assert killed and driver.counts["worker_crashes"] >= 1
    assert len(df) == 4 and (df["status"] == "ok").all() and (df["attempt"] >= 1).all()
    assert df["attempt"].max() == 2  # the killed episode was re-run once, and recorded so
    assert table(df).equals(table(ref))


@RAY
@pytest.mark.slow  # 100-190 s; nightly: test_reliability's Ctrl-C-and-kill test covers a killed driver by default
def test_a_killed_driver_resumes_to_the_uninterrupted_table(reference, tmp_path):
    _, ref = reference
    cmd = [sys.executable, "-m", "vabench.launch", "+experiment=smoke", f"results_dir={tmp_path}", "run_id=resume"]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    outcomes = tmp_path / "resume" / "outcomes"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if list(outcomes.rglob("*.parquet")):
                break
            time.sleep(0.2)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and the Ray processes it started
        proc.wait()
    first = {f: f.stat().st_mtime_ns for f in outcomes.rglob("*.parquet")}
    assert 1 <= len(first) < 4
    run = smoke(tmp_path, "resume")
    df = Driver(run, log=lambda *_: None, progress=False).execute()
    assert all(f.stat().st_mtime_ns == t for f, t in first.items())  # finished episodes were not rerun
    assert table(df).equals(table(ref)) and len(read_rows(tmp_path / "resume")) == 4


def test_multirun_over_summary_sources_gives_one_run_folder_per_job(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "vabench.launch",
        "-m",
        "+experiment=summary_sources",
        "model=random",
        "summary=own,none",
        "tasks=[grasp_single_cube]",
        "seeds=1",
        "ray.address=none",  # the launcher's multirun is what is tested; Ray's start-up would double its time
        f"results_dir={tmp_path}",
        "run_id=grid",
    ]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    jobs = sorted(p.name for p in (tmp_path / "grid").iterdir() if p.is_dir())
    assert jobs == ["job0", "job1"]
    df = read_rows(tmp_path / "grid")
    assert len(df) == 2 and set(df["experiment"]) == {"summary_sources"} and (df["status"] == "ok").all()
    assert set(df["summary_source"]) == {"none"}  # an offline agent reads no summary, whatever was asked
    assert "Per-task success" in done.stdout


class AllAtOnce:
    """Holds each model's first request until every one of ``models`` has sent one (or ``wait_s``
    passed, which it notes in ``waited_out``): jobs run one after another could never all be here.
    ``by``: the request field that tells the jobs apart; a request without it passes."""

    def __init__(self, models: set[str], reply, wait_s: float = 150.0, by: str = "model"):
        self.models, self.reply, self.wait_s, self.by = models, reply, wait_s, by
        self.seen: set[str] = set()
        self.waited_out: list[str] = []
        self._cv = threading.Condition()

    def __call__(self, body: dict):
        job = body.get(self.by)
        if job is not None:
            with self._cv:
                self.seen.add(job)
                self._cv.notify_all()
                if not self._cv.wait_for(lambda: self.seen >= self.models, timeout=self.wait_s):
                    self.waited_out.append(job)
        return self.reply(body)


def test_a_parallel_sweep_runs_three_models_at_once_and_loads_as_one_table(tmp_path):
    """``-m`` over three models with the joblib launcher: every model's first request is in flight
    while the others' are (sequential jobs would each wait out the server), one run folder per job,
    and the sweep folder loads as one table with each row's condition."""
    from tests.test_cluster import stop_after
    from vabench.analysis import load_runs

    server_models = {"a", "b", "c"}
    gate = AllAtOnce(server_models, stop_after(1))
    with ScriptedServer(default=gate) as server:
        cmd = [sys.executable, "-m", "vabench.launch", "-m", "+experiment=smoke", "model=openai"]
        cmd += ["model.id=openai/a,openai/b,openai/c", "model.api_key_env=VABENCH_TEST_KEY", "model.max_retries=0"]
        cmd += [f"model.api_base={server.url}", "tasks=[grasp_single_cube]", "seeds=1", "ray.address=none"]
        cmd += ["hydra/launcher=joblib", "hydra.launcher.n_jobs=3", f"results_dir={tmp_path}", "run_id=sweep"]
        env = {**os.environ, "VABENCH_TEST_KEY": "sk-test-sweep", "RAY_USAGE_STATS_ENABLED": "0"}
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert gate.seen == server_models and gate.waited_out == []
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir()) == ["job0", "job1", "job2"]
    assert (tmp_path / "sweep" / "_multirun.yaml").is_file()  # Hydra's record, under a name Parquet skips
    assert len(pd.read_parquet(tmp_path / "sweep")) == 3  # the sweep folder is a table, as a run folder is
    df = load_runs(tmp_path / "sweep")
    assert sorted(df["model"]) == ["openai/a", "openai/b", "openai/c"] and (df["status"] == "ok").all()
    assert sorted(df["condition"]) == [f"openai/{m} | active | summary none | render fast" for m in "abc"]


@RAY
@pytest.mark.slow  # the default run has Ctrl-C on Ray in test_reliability.py and test_cluster.py
def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "vabench.launch",
        "+experiment=smoke",
        "seeds=5",
        f"results_dir={tmp_path}",
        "run_id=stop",
    ]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not list((tmp_path / "stop").rglob("events.jsonl")):
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = out.decode() + err.decode()
    assert proc.returncode == 130, text[-2000:]
    assert "rerun with run_id=stop to resume" in text and "Traceback" not in text
    assert len(list((tmp_path / "stop" / "outcomes").rglob("*.parquet"))) < 10  # it stopped early
