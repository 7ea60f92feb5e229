"""Keys on a real two-raylet Ray cluster on this machine (``ray start --head`` + ``ray start
--address``): the key reaches the workers through each node's own environment, never through
Ray's runtime environment (which Ray writes to its logs), and a cluster whose workers cannot see
the key is refused before any work."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.openai_server import ScriptedServer
from vabench.outcomes import read_rows

ROOT = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).with_name("ray"))
KEY_VAR = "VABENCH_CLUSTER_KEY"
MOVE_UP = json.dumps({"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 10})
STOP = json.dumps({"stop": True, "reason": "test over"})
pytestmark = pytest.mark.xdist_group("ray")


def stop_after(moves: int):
    """A reply computed from the request: ``moves`` moves, then stop (per episode)."""

    def reply(body: dict) -> str:
        done = sum(m.get("role") == "assistant" for m in body.get("messages", []))
        return MOVE_UP if done < moves else STOP

    return reply


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """Two raylets (1 CPU each) in their own process groups, so stopping them touches no other Ray."""

    def __init__(self, env: dict, temp_dir: Path):
        self.port, self.temp_dir, self.groups = _free_port(), temp_dir, []
        self.env = {**env, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}

    def _start(self, *args: str) -> None:
        proc = subprocess.Popen(
            [RAY, "start", "--num-cpus", "1", *args],
            env=self.env,
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.groups.append(proc.pid)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out[-2000:]

    def __enter__(self) -> Cluster:
        self._start("--head", "--port", str(self.port), "--temp-dir", str(self.temp_dir), "--include-dashboard=false")
        self._start("--address", f"127.0.0.1:{self.port}")
        return self

    def __exit__(self, *exc) -> None:
        for group in self.groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


def launch(tmp_path: Path, cluster: Cluster, server: ScriptedServer, env: dict) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "vabench.launch", "+experiment=smoke", "model=openai", "model.id=openai/cluster"]
    cmd += [f"model.api_key_env={KEY_VAR}", f"model.api_base={server.url}", "tasks=[grasp_single_cube]", "seeds=2"]
    cmd += [f"ray.address={cluster.address}", "ray.env_actors=2", f"results_dir={tmp_path}", "run_id=cluster"]
    env = {**env, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def files_holding(secret: str, *roots: Path) -> list[str]:
    hits = []
    for root in roots:
        for path in root.rglob("*"):
            try:
                if path.is_file() and not path.is_symlink() and secret.encode() in path.read_bytes():
                    hits.append(str(path))
            except OSError:
                continue  # sockets, vanished temp files
    return hits


def test_the_key_reaches_the_workers_of_both_nodes_and_no_file_of_the_run_or_of_ray(tmp_path):
    secret = f"sk-cluster-{uuid.uuid4().hex}"
    env = {**os.environ, KEY_VAR: secret}  # exported before `ray start` on each node, as the README says
    ray_tmp = Path(f"/tmp/vbr{uuid.uuid4().hex[:6]}")  # short: Ray's socket paths have a length limit
    try:
        with ScriptedServer(default=stop_after(2)) as server, Cluster(env, ray_tmp) as cluster:
            done = launch(tmp_path, cluster, server, env)
            assert done.returncode == 0, done.stderr[-3000:]
            df = read_rows(tmp_path / "cluster")
            assert len(df) == 2 and (df["status"] == "ok").all() and (df["end_reason"] == "stop").all()
            assert server.headers and all(h["authorization"] == f"Bearer {secret}" for h in server.headers)
            assert list(ray_tmp.rglob("runtime_env_agent.log"))  # Ray's logs were written where we look
            assert files_holding(secret, tmp_path, ray_tmp) == []
            assert secret not in done.stdout + done.stderr
    finally:
        subprocess.run(["rm", "-rf", str(ray_tmp)], check=False)


def test_a_cluster_whose_workers_lack_the_key_is_refused_before_any_work(tmp_path):
    ray_tmp = Path(f"/tmp/vbr{uuid.uuid4().hex[:6]}")
    cluster_env = {k: v for k, v in os.environ.items() if k != KEY_VAR}
    try:
        with ScriptedServer(default=STOP) as server, Cluster(cluster_env, ray_tmp) as cluster:
            done = launch(tmp_path, cluster, server, {**os.environ, KEY_VAR: "sk-only-on-the-driver-0000"})
            assert done.returncode == 1, done.stderr[-3000:]
            assert f"names {KEY_VAR}, which is not set for Ray's workers on 2 of 2 node(s)" in done.stderr
            assert "Traceback" not in done.stderr
            assert server.requests == [] and not (tmp_path / "cluster" / "outcomes").exists()
    finally:
        subprocess.run(["rm", "-rf", str(ray_tmp)], check=False)
