"""Ray under load (issue 41): a worker start that fails (a busy node's worker that never
registered, a constructor that failed) is tried again after a bounded wait, and the run goes on; a
run whose worker no node can hold stops at once with one line saying what the cluster lacks; and
the launcher's terminal shows vabench's lines only, Ray's own going to its log folder. The rules
on a scripted backend and clock, then the launcher on a real local Ray, as a user runs it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pandas as pd
import pytest

from tests.test_pool import pool_of
from vabench.core.errors import one_line
from vabench.run.actors.pool import RETRY_S, START_TRIES, ClusterStarved
from vabench.run.actors.raylines import RAY_LOG

ROOT = Path(__file__).resolve().parents[1]
RAY = pytest.mark.xdist_group("ray")
# what Ray itself prints: its Python logger, lines raylets push to the driver, its C++ logs, worker prefixes
RAY_LINE = re.compile(
    r"\b(INFO|WARNING|ERROR|DEBUG) \w+\.py:\d+ --|^\s*\((raylet|autoscaler|\w+ pid=\d+|pid=\d+)\)?"
    r"|^\[\d{4}-\d\d-\d\d [\d:,]+ [DIWEF] \d+ \d+\]|^\*\*\* |Traceback \(most recent call last\)|^\s+File \""
)


def fail_start(worker, why: str) -> None:
    worker.place.done, worker.place.error = True, RuntimeError(why)


def test_a_worker_that_dies_starting_is_started_again_after_a_bounded_wait_and_the_run_goes_on():
    pool, backend, clock, lines = pool_of(1)
    fail_start(backend.workers[0], "worker not registered within the timeout\n\t(90 more lines of Ray)\nstill busy")
    pool.tick(wanted=True)  # no stop: its place waits RETRY_S to be tried again
    assert backend.killed == [0] and len(backend.workers) == 1 and pool.seat() is None
    assert lines == [
        "a worker died while starting (RuntimeError: worker not registered within the timeout ... still busy); "
        f"starting it again in {RETRY_S:g} s (try 2 of {START_TRIES})"
    ]
    clock.now = RETRY_S - 0.1
    pool.tick(wanted=True)
    assert len(backend.workers) == 1  # not before its wait is over
    clock.now = RETRY_S
    pool.tick(wanted=True)
    assert len(backend.workers) == 2
    backend.workers[1].place.done = True
    pool.tick(wanted=True)
    assert pool.seat() is backend.workers[1] and pool.crashes == 0


def test_a_worker_that_never_starts_is_tried_a_bounded_number_of_times_then_the_run_stops_in_one_line():
    pool, backend, clock, lines = pool_of(1)
    with pytest.raises(ClusterStarved) as stop:
        for _ in range(START_TRIES + 1):
            fail_start(backend.workers[-1], "no Vulkan device\nat line 2")
            pool.tick(wanted=True)
            clock.now += RETRY_S * 2**START_TRIES  # past any wait
            pool.tick(wanted=True)
    assert len(backend.workers) == START_TRIES and clock.now <= (START_TRIES + 1) * RETRY_S * 2**START_TRIES
    line = stop.value.line("r1")
    assert "\n" not in line and f"no worker could start ({START_TRIES} tries each): RuntimeError: no Vulkan" in line
    assert lines[-1].endswith(f"given up after {START_TRIES} tries") and all("\n" not in x for x in lines)


def test_no_start_is_tried_again_once_no_episode_is_left_to_start():
    pool, backend, clock, _ = pool_of(1)
    fail_start(backend.workers[0], "busy")
    pool.tick(wanted=True)
    clock.now = 100.0
    pool.tick(wanted=False)
    assert len(backend.workers) == 1 and pool.members == {}


def test_an_error_is_one_line_whatever_ray_puts_in_it():
    many = "The actor died in its creation task, \x1b[36mray::W.__init__()\x1b[39m (pid=1, ip=2, repr=<a>)\n"
    many += "  File x\n\nRuntimeError: boom\n"
    assert one_line(RuntimeError(many)) == (
        "RuntimeError: The actor died in its creation task, ray::W.__init__() ... RuntimeError: boom"
    )
    assert one_line(ValueError("")) == "ValueError: " and len(one_line(OSError("x" * 999))) == 300


def launch(tmp_path: Path, run_id: str, *overrides: str, fails: int = 0) -> tuple[subprocess.CompletedProcess, Path]:
    """The launcher in a process of its own, on a private local Ray under a temp folder of its own
    (short: Ray's socket paths have a length limit), its first ``fails`` worker starts failing."""
    ray_tmp = Path(f"/tmp/vbr{uuid.uuid4().hex[:6]}")
    (tmp_path / "fails").mkdir(exist_ok=True)
    env = {
        **os.environ,
        "RAY_TMPDIR": str(ray_tmp),
        "RAY_USAGE_STATS_ENABLED": "0",
        "VABENCH_TEST_FAILS": str(tmp_path / "fails"),
        "VABENCH_TEST_FAILS_N": str(fails),
    }
    cmd = [sys.executable, "-m", "tests.startup_fault", "+experiment=smoke", "tasks=[grasp_single_cube]", "seeds=1"]
    cmd += [f"results_dir={tmp_path}", f"run_id={run_id}", *overrides]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600), ray_tmp


def ray_lines(done: subprocess.CompletedProcess) -> list[str]:
    """Lines of Ray's own that reached the terminal (the bar redraws with \\r)."""
    return [line for line in (done.stdout + done.stderr).replace("\r", "\n").splitlines() if RAY_LINE.search(line)]


@RAY
def test_a_worker_whose_first_start_fails_is_started_again_and_the_terminal_shows_no_line_of_ray(tmp_path):
    done, ray_tmp = launch(tmp_path, "fails", fails=1)
    try:
        assert done.returncode == 0, done.stderr[-3000:]
        said = done.stdout + done.stderr
        assert ray_lines(done) == []
        assert "a worker died while starting (" in said and f"again in {RETRY_S:g} s (try 2 of {START_TRIES})" in said
        assert "injected: start 1" in said
        rows = pd.read_parquet(tmp_path / "fails")
        assert len(rows) == 1 and rows["status"].eq("ok").all()
        logs = list(ray_tmp.rglob("*.log")) + list(ray_tmp.rglob("*.err")) + list(ray_tmp.rglob("*.out"))
        assert any("injected: start 1" in p.read_text(errors="replace") for p in logs)  # Ray's lines: its folder
        assert list(ray_tmp.rglob(RAY_LOG))
    finally:
        subprocess.run(["rm", "-rf", str(ray_tmp)], check=False)


@RAY
def test_a_run_asking_more_cpus_than_a_node_has_stops_at_once_in_one_line(tmp_path):
    done, ray_tmp = launch(tmp_path, "big", "ray.num_cpus=2", "ray.actor_cpus=4")
    subprocess.run(["rm", "-rf", str(ray_tmp)], check=False)
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.rstrip().splitlines()[-1] == (
        "stopped: no node of the cluster can hold a worker: each worker asks for ray.actor_cpus=4 CPU, but the "
        "largest of the cluster's 1 node(s) has 2 CPU; lower ray.actor_cpus or raise ray.num_cpus; "
        "rerun with run_id=big once one fits"
    )
    assert ray_lines(done) == [] and "Traceback" not in done.stderr
