"""Sweeps on a real two-raylet Ray cluster (1 CPU each) that cannot hold every worker asked for:
four runs at once end with every episode judged and no worker killed; a cluster starved on
purpose makes a run say what it lacks and stop as interrupted within its bound, and the same run
folder then resumes to completion."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest

from tests.test_cluster import ROOT, Cluster

pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.slow]
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def ray_tmp() -> Path:
    return Path(f"/tmp/vbr{uuid.uuid4().hex[:6]}")  # short: Ray's socket paths have a length limit


def launch(cluster: Cluster, results, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "vabench.launch", *args, "model=oracle", f"ray.address={cluster.address}"]
    cmd += [f"results_dir={results}"]
    return subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)


def test_four_runs_at_once_on_a_full_cluster_end_with_every_episode_judged_and_no_worker_killed(tmp_path):
    """4 jobs x 2 workers of 0.5 CPU = 4 CPUs asked of a 2-CPU cluster: the jobs that cannot place
    a worker wait (a run's idle workers are released when it has nothing left to start), extra
    workers are given up, and the sweep folder reads as one table."""
    with Cluster(ENV, ray_tmp()) as cluster:
        began = time.monotonic()
        done = launch(
            cluster,
            tmp_path,
            "-m",
            "+experiment=smoke",
            "protocol=active,passive",
            "seeds=1,2",
            "ray.env_actors=2",
            "ray.episodes_per_actor=1",
            "ray.place_timeout_s=30",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=4",
            "run_id=full",
        )
        wall = time.monotonic() - began
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "killing a worker" not in out and "worker died" not in out, out[-4000:]
    df = pd.read_parquet(tmp_path / "full")  # the sweep folder, Hydra's files and all
    assert len(df) == 2 * (2 + 4)  # active and passive, each with 1 and 2 seeds of the 2 smoke tasks
    assert set(df["status"]) == {"ok"} and (df["attempt"] == 1).all(), df[["task", "status", "error"]]
    print(f"four parallel runs on a 2-CPU cluster: {wall:.0f} s, {len(df)} rows")


BLOCKER = """
import ray, sys
ray.init(address=sys.argv[1], log_to_driver=False)
@ray.remote(num_cpus=1)
class Hold:
    def ready(self):
        return True
held = [Hold.remote() for _ in range(2)]
ray.get([h.ready.remote() for h in held])
print("held", flush=True)
sys.stdin.read()
"""


def test_a_starved_cluster_stops_the_run_as_interrupted_within_the_bound_and_it_resumes(tmp_path):
    with Cluster(ENV, ray_tmp()) as cluster:
        blocker = subprocess.Popen(
            [sys.executable, "-c", BLOCKER, cluster.address],
            env=ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert blocker.stdout.readline().strip() == "held"  # both CPUs taken
            args = ("+experiment=smoke", "seeds=1", "run_id=starved", "ray.env_actors=2")
            done = launch(cluster, tmp_path, *args, "ray.starve_timeout_s=20")  # its timeout: the hang guard
        finally:
            blocker.kill()
            blocker.wait()
        out = done.stdout + done.stderr
        assert done.returncode != 0
        # stopped by its bound, judged on the pool's own clock (test_pool checks the bound on a fake one)
        stop = re.search(
            r"pending for (\d+) s and none live \(ray.starve_timeout_s=20 x load (\d+\.\d)\): 2.0/2.0 CPU in use", out
        )
        assert stop, out[-3000:]
        assert "rerun with run_id=starved to resume" in out
        resumed = launch(cluster, tmp_path, *args)
    assert resumed.returncode == 0, (resumed.stdout + resumed.stderr)[-3000:]
    df = pd.read_parquet(tmp_path / "starved")
    assert len(df) == 2 and set(df["status"]) == {"ok"}
    print(f"starved run stopped after {stop[1]} s on the pool's clock (ray.starve_timeout_s=20 x load {stop[2]})")
