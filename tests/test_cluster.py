"""Keys on a real two-raylet Ray cluster on this machine (``ray start --head`` + ``ray start
--address``): the key reaches the workers through each node's own environment, never through
Ray's runtime environment (which Ray writes to its logs), and a cluster whose workers cannot see
the key is refused before any work."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pandas as pd
import psutil
import pytest

from tests.openai_server import ScriptedServer
from tests.test_bar_figures import last_figures
from vabench.results.outcomes import read_rows
from vabench.run.folder.scratch import SCRATCH_ENV

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
    """Two raylets (1 CPU each) in their own process groups, so stopping them touches no other Ray.

    ``private``: folders the second raylet sees as empty tmpfs mounts of its own (a mount namespace:
    what a separate machine without a shared filesystem sees there); the head then gets no CPU, so
    every worker runs on that node. ``worker_env``: extra variables for the second raylet only."""

    def __init__(self, env: dict, temp_dir: Path, private: tuple[Path, ...] = (), worker_env: dict | None = None):
        self.port, self.temp_dir, self.groups = _free_port(), temp_dir, []
        self.env = {**env, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
        self.private, self.worker_env = private, worker_env or {}

    def _start(self, *args: str, cpus: int = 1, private: tuple[Path, ...] = (), env: dict | None = None) -> None:
        cmd = [RAY, "start", "--num-cpus", str(cpus), *args]
        if private:
            mounts = " && ".join(f"mount -t tmpfs tmpfs {shlex.quote(str(p))}" for p in private)
            cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", f"{mounts} && exec {shlex.join(cmd)}"]
        proc = subprocess.Popen(
            cmd,
            env={**self.env, **(env or {})},
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.groups.append(proc.pid)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out[-2000:]

    def __enter__(self) -> Cluster:
        head = ("--head", "--port", str(self.port), "--temp-dir", str(self.temp_dir), "--include-dashboard=false")
        self._start(*head, cpus=0 if self.private else 1)
        self._start("--address", f"127.0.0.1:{self.port}", private=self.private, env=self.worker_env)
        return self

    def on_worker_node(self, *cmd: str) -> str:
        """Run ``cmd`` in the second raylet's mount namespace (as its workers see the files)."""
        ours = os.readlink("/proc/self/ns/mnt")
        for proc in psutil.process_iter(["name"]):
            try:
                if proc.info["name"] == "raylet" and os.readlink(f"/proc/{proc.pid}/ns/mnt") != ours:
                    done = subprocess.run(["nsenter", "--target", str(proc.pid), "--mount", *cmd], capture_output=True)
                    assert done.returncode == 0, done.stderr.decode()
                    return done.stdout.decode()
            except (psutil.Error, OSError):
                continue
        raise AssertionError("no raylet in a mount namespace of its own")

    def __exit__(self, *exc) -> None:
        for group in self.groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


def launch_cmd(tmp_path: Path, cluster: Cluster, server: ScriptedServer, *more: str) -> list[str]:
    cmd = [sys.executable, "-m", "vabench.launch", "+experiment=smoke", "model=openai", "model.id=openai/cluster"]
    cmd += [f"model.api_key_env={KEY_VAR}", f"model.api_base={server.url}", "tasks=[grasp_single_cube]", "seeds=2"]
    return cmd + [
        f"ray.address={cluster.address}",
        "ray.env_actors=2",
        f"results_dir={tmp_path}",
        "run_id=cluster",
        *more,
    ]


def launch(
    tmp_path: Path, cluster: Cluster, server: ScriptedServer, env: dict, *more: str
) -> subprocess.CompletedProcess:
    cmd = launch_cmd(tmp_path, cluster, server, *more)
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
            shown = last_figures(done.stderr)  # the bar's last line: the rows' calls and tokens, from both nodes
            tokens = df["prompt_tokens"].sum() + df["completion_tokens"].sum()
            assert (shown["calls"], shown["tokens"]) == (str(df["model_calls"].sum()), str(tokens)), shown
    finally:
        subprocess.run(["rm", "-rf", str(ray_tmp)], check=False)


def test_a_cluster_whose_workers_lack_the_key_is_refused_before_any_work(tmp_path):
    ray_tmp = Path(f"/tmp/vbr{uuid.uuid4().hex[:6]}")
    cluster_env = {k: v for k, v in os.environ.items() if k != KEY_VAR}
    try:
        with ScriptedServer(default=STOP) as server, Cluster(cluster_env, ray_tmp) as cluster:
            done = launch(tmp_path, cluster, server, {**os.environ, KEY_VAR: "sk-only-on-the-driver-0000"})
            assert done.returncode == 2, done.stderr[-3000:]  # refused, one line (vabench.launch.Exit)
            assert f"names {KEY_VAR}, which is not set for Ray's workers on 2 of 2 node(s)" in done.stderr
            assert "Traceback" not in done.stderr
            probe_only = [r["max_tokens"] for r in server.requests] == [1]  # the launcher's endpoint probe
            assert probe_only and not (tmp_path / "cluster" / "outcomes").exists()
    finally:
        subprocess.run(["rm", "-rf", str(ray_tmp)], check=False)


@pytest.mark.slow  # the default suite's longest test (150-320 s); nightly
@pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace of its own (unshare --mount) needs root")
def test_a_worker_node_without_the_run_folder_sends_every_result_back_to_the_driver(tmp_path, demo_root):
    """The second raylet has its own (empty) results folder and scratch, as a separate machine without
    a shared filesystem. Ctrl-C mid-episode keeps the partial records that lived there; then the
    summary it learned and each episode's row, record and frames end up in the driver's run folder,
    nothing stays on the worker's side, and a rerun skips every episode."""
    from tests.test_learning import SUMMARY, tool

    results, scratch = tmp_path / "results", tmp_path / "scratch"
    results.mkdir(), scratch.mkdir()
    env = {**os.environ, KEY_VAR: "sk-test-cluster", "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    ray_tmp = Path(f"/tmp/vbr{uuid.uuid4().hex[:6]}")
    node = {SCRATCH_ENV: str(scratch)}
    slow = stop_after(5)  # 6 replies of 1 s: an episode outlasts the driver's reaction to Ctrl-C (<= 2 s)
    try:
        with (
            ScriptedServer(default=lambda body: {"delay": 1.0, "then": slow(body)}) as server,
            Cluster(env, ray_tmp, (results, scratch), node) as cluster,
        ):
            assert cluster.on_worker_node("ls", "-A", str(results)) == ""  # its own, empty, results folder
            (results / "driver-side").write_text("only the driver sees this\n")
            assert cluster.on_worker_node("ls", "-A", str(results)) == ""
            server.script(
                tool("expert.retrieve"), tool("expert.frame", steps=[0, 2, 4]), tool("expert.learn", **SUMMARY)
            )
            more = ("summary=own", f"demo_root={demo_root}", "probe=false")  # the script is the learner's
            run_dir = results / "cluster"
            first = subprocess.Popen(
                launch_cmd(results, cluster, server, *more),
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            try:
                deadline = time.monotonic() + 300
                while len(server.requests) < 6 and time.monotonic() < deadline and first.poll() is None:
                    time.sleep(0.1)  # learning (3 requests), then the episodes' first replies are out
                first.send_signal(signal.SIGINT)
                assert first.wait(timeout=120) == 130, first.stderr.read().decode()[-2000:]
            finally:
                if first.poll() is None:
                    os.killpg(first.pid, signal.SIGKILL)
            cut = list((run_dir / "_records").rglob("events.jsonl"))
            assert not (run_dir / "outcomes").exists() and len(cut) == 2
            assert all('"type": "result"' not in f.read_text() for f in cut)  # cut short, and kept
            assert any('"type": "reply"' in f.read_text() for f in cut)
            done = launch(results, cluster, server, env, *more)
            assert done.returncode == 0, done.stderr[-3000:]
            df = pd.read_parquet(run_dir)
            assert len(df) == 2 and (df["status"] == "ok").all() and (df["end_reason"] == "stop").all()
            assert df["summary_learned"].all() and set(df["steps"]) == {5} and (df["attempt"] == 1).all()
            for rel in df["record"]:
                events = [json.loads(line) for line in (run_dir / rel).read_text().splitlines()]
                shown = {image for e in events for image in e.get("images", [])}
                assert events[-1]["type"] == "result" and len(shown) >= 6
                assert all(((run_dir / rel).parent / image).is_file() for image in shown)
                kept = sorted(p.name for p in (run_dir / rel).parent.parent.iterdir())
                assert kept == ["attempt1", "attempt1.interrupted-1"]
            assert (results / "_summaries" / "fast" / "openai_cluster" / "grasp_single_cube.json").is_file()
            assert len(list((run_dir / "_learning").rglob("events.jsonl"))) == 1
            assert cluster.on_worker_node("find", str(results), str(scratch), "-type", "f") == ""
            asked = len(server.requests)
            again = launch(results, cluster, server, env, *more)
            assert again.returncode == 0, again.stderr[-3000:]
            assert "2 already done, 0 to run" in again.stdout and len(server.requests) == asked
    finally:
        subprocess.run(["rm", "-rf", str(ray_tmp)], check=False)
