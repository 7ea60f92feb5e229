"""The Ray driver end to end with the oracle: outcome files, resume, a killed worker, a killed driver."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.test_launch import composed
from vabench.actors.config import from_config
from vabench.actors.driver import Driver, infra_row, plan
from vabench.actors.specs import expand
from vabench.outcomes import read_rows, write_row

ROOT = Path(__file__).resolve().parents[1]
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


def test_smoke_run_writes_one_row_per_episode(reference):
    run, df = reference
    assert len(df) == 4 and df["success"].all() and (df["status"] == "ok").all() and (df["attempt"] == 1).all()
    assert df["privileged"].all() and set(df["condition"]) == {"oracle | active | summary none"}
    assert set(df["base_task"]) == {"grasp_single_cube", "place_cube_in_bowl"}
    for rel in df["record"]:
        assert (run.run_dir / rel).is_file()
    assert (run.run_dir / "_run.json").is_file()
    assert len(list((run.run_dir / "outcomes").rglob("*.parquet"))) == 4
    assert pd.read_parquet(run.run_dir).shape[0] == 4  # plain pandas reads the whole run folder


def test_rerun_skips_finished_episodes_and_retries_infra_errors(reference):
    run, _ = reference
    files = sorted((run.run_dir / "outcomes").rglob("*.parquet"))
    before = {f: f.stat().st_mtime_ns for f in files}
    assert plan(run) == ([], 4)
    spec = expand(run)[0]
    write_row(spec.outcome_path(run.run_dir), infra_row(run, spec, 1, "provider down"))
    todo, done = plan(run)
    assert (todo, done) == ([(spec, 2)], 3)
    df = Driver(run, log=lambda *_: None, progress=False).execute()
    again = df.set_index(KEY).loc[(spec.task, spec.seed, spec.protocol, spec.run_index)]
    assert (again["status"], again["attempt"], bool(again["success"])) == ("ok", 2, True)
    untouched = [f for f in files if f != spec.outcome_path(run.run_dir)]
    assert all(f.stat().st_mtime_ns == before[f] for f in untouched)


def _worker_pids() -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if cmd.startswith("ray::EpisodeWorker.run"):
                pids.append(int(proc.name))
    return pids


def test_a_killed_worker_is_replaced_and_every_episode_is_judged_once(reference, tmp_path):
    _, ref = reference
    run = smoke(tmp_path, "kill")
    killed = []

    def killer():
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed:
            started = list((run.run_dir / "_records").rglob("events.jsonl")) if run.run_dir.exists() else []
            pids = _worker_pids()
            if started and pids:
                os.kill(pids[0], signal.SIGKILL)  # mid-episode
                killed.append(pids[0])
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
        "ray.env_actors=1",
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
