"""Many episodes per worker: decisions/s against a provider with fixed latency, memory of the whole
run, and how close a run stays to a provider's requests-per-minute limit.

A local OpenAI-compatible server (tests/openai_server.py) answers every request after a fixed
latency with the next action of a closed cycle (moves that cancel out, camera views, rotations),
so episodes run their whole budget and a worker keeps resetting new ones. The real driver runs
them on Ray through LiteLLM over HTTP. Scenarios:

- ``latency10``: 10 s latency, 64 episodes in flight (2 workers x 32). Target >= 0.90 of the
  ideal 6.4 decisions/s and peak RSS of workers + driver <= 8 GB.
- ``latency1``: 1 s latency, 12 in flight (2 workers x 6), against the old layout (12 workers x 1)
  in the same run. Target >= 0.85 of the ideal 12 decisions/s.
- ``ratelimit``: the server refuses more than 120 requests in any 60 s (429 + Retry-After); 40
  in flight, 0.5 s latency, ``model.rpm=120``. Target: 110-120 requests/min and no 429 after the
  first minute.

Decisions/s is the number of replies the server sent in a window, over the window's length, once
every episode has made its first call; the median over ``--windows`` consecutive windows. Memory
is sampled every 0.5 s over every process of the run: the driver (this process), the env workers
(``ray::EpisodeWorker``), and Ray's own (raylet, GCS, idle workers, the limiter actor).
``--scenes`` prints what one more scene costs in a worker, with and without render targets kept.

    python benchmarks/concurrency.py [--scenario all|latency10|latency1|ratelimit|scenes] [--window 40] [--windows 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from tests.openai_server import RateLimit, ScriptedServer  # noqa: E402
from tests.test_launch import composed  # noqa: E402
from vabench.core.errors import Interrupted  # noqa: E402
from vabench.run.config.run import from_config  # noqa: E402
from vabench.run.driver import Driver  # noqa: E402

KEY_VAR = "VABENCH_BENCH_KEY"
TASKS = ("grasp_single_cube", "place_cube_in_bowl", "place_single_cube", "place_cube_on_cube")

_MOVES = (
    {"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 20},
    {"action": "camera.view_topdown"},
    {"action": "gripper.move_world", "axis": "x", "sign": "-", "distance_mm": 20},
    {"action": "gripper.rotate_local", "axis": "rx", "sign": "+", "angle_deg": 10},
    {"action": "camera.view_side"},
    {"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": 20},
    {"action": "gripper.rotate_local", "axis": "rx", "sign": "-", "angle_deg": 10},
    {"action": "gripper.move_world", "axis": "z", "sign": "-", "distance_mm": 20},
)
CYCLE = [json.dumps({**m, "reason": "benchmark cycle"}) for m in _MOVES]


def cycle_after(latency: float):
    """The n-th reply of an episode is CYCLE[n % 8], after ``latency`` seconds (a closed loop: the
    gripper comes back where it was every 8 decisions, so no episode drifts out of reach)."""

    def reply(body: dict) -> dict:
        answered = sum(m.get("role") == "assistant" for m in body.get("messages", []))
        return {"delay": latency, "then": CYCLE[answered % len(CYCLE)]}

    return reply


def by_role(measure) -> dict:
    """``measure(process)`` summed over the run's processes by role: ``driver`` (this process, which
    also serves the fake provider), ``workers`` (``ray::EpisodeWorker``) and ``ray`` (Ray's own)."""
    me = psutil.Process()
    out = {"driver": measure(me), "workers": 0.0, "ray": 0.0}
    for p in me.children(recursive=True):
        try:
            value, cmd = measure(p), " ".join(p.cmdline()[:1])
        except psutil.Error:
            continue
        out["workers" if cmd.startswith("ray::EpisodeWorker") else "ray"] += value
    return out


class Memory:
    """Peak resident memory of this process and all its descendants (Ray's included), by role."""

    def __init__(self):
        self.peak = {"workers": 0.0, "driver": 0.0, "ray": 0.0, "workers+driver": 0.0, "all": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> Memory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            now = by_role(lambda p: p.memory_info().rss / 2**20)
            now["workers+driver"] = now["workers"] + now["driver"]
            now["all"] = now["workers+driver"] + now["ray"]
            for k, v in now.items():
                self.peak[k] = max(self.peak[k], v)


def _config(server: ScriptedServer, root: Path, run_id: str, in_flight: int, actors: int, *more: str):
    per_actor = -(-in_flight // actors)
    overrides = [
        "model=openai",
        "model.id=openai/bench-model",
        f"model.api_base={server.url}",
        f"model.api_key_env={KEY_VAR}",
        f"model.max_concurrency={in_flight}",
        "model.timeout_s=120",
        f"tasks=[{','.join(TASKS)}]",
        "seeds=all",
        f"ray.env_actors={actors}",
        f"ray.episodes_per_actor={per_actor}",
        f"ray.actor_cpus={2 / actors}",
        f"results_dir={root}",
        f"run_id={run_id}",
        *more,
    ]
    cfg = composed(*overrides)
    return from_config(cfg, root / run_id)


class Background:
    """The driver in a thread, stopped (as by Ctrl-C: workers killed, finished episodes kept) on exit."""

    def __init__(self, run):
        self.driver = Driver(run, log=lambda *_: None, progress=False)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.driver.execute()
        except Interrupted:
            pass
        except BaseException as e:  # surfaced by the caller
            self.error = e

    def __enter__(self) -> Background:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.driver._stop = True
        self.thread.join(timeout=120)


def cpu_s() -> dict:
    """CPU seconds used so far by the env workers and by every process of the run."""
    used = by_role(lambda p: sum(p.cpu_times()[:2]))  # user + system
    return {"workers": used["workers"], "all": sum(used.values())}


def _count(server: ScriptedServer, status: int = 200) -> int:
    return sum(s == status for s in list(server.statuses))


def _wait_for(condition, bg: Background, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if bg.error is not None:
            raise bg.error
        if time.monotonic() > deadline:
            raise TimeoutError("the run did not reach its steady state")
        time.sleep(0.2)


def decisions(latency: float, in_flight: int, actors: int, window: float, windows: int, root: Path) -> dict:
    """Decisions/s in consecutive windows once every episode has made its first call, and peak memory."""
    with ScriptedServer(default=cycle_after(latency), keep_bodies=False) as server, Memory() as mem:
        run = _config(server, root, f"lat{latency:g}-{in_flight}x{actors}-{time.time_ns()}", in_flight, actors)
        with Background(run) as bg:
            _wait_for(lambda: _count(server) >= in_flight, bg)  # every episode answered once: steady state
            time.sleep(latency)
            rates, first, cpu0 = [], _count(server), cpu_s()
            for _ in range(windows):
                before, t0 = _count(server), time.monotonic()
                time.sleep(window)
                rates.append((_count(server) - before) / (time.monotonic() - t0))
            done, cpu1 = _count(server) - first, cpu_s()
            bad = [s for s in server.statuses if s != 200]
    rate, ideal = statistics.median(rates), in_flight / latency
    return {
        "latency_s": latency,
        "in_flight": in_flight,
        "workers": actors,
        "decisions_per_s": round(rate, 3),
        "windows": [round(r, 3) for r in rates],
        "ideal": ideal,
        "ratio": round(rate / ideal, 3),
        "non_200": len(bad),
        "peak_rss_mb": {k: round(v) for k, v in mem.peak.items()},
        "rss_per_episode_mb": round(mem.peak["workers"] / in_flight, 1),
        "cpu_s_per_decision": {k: round((cpu1[k] - cpu0[k]) / max(done, 1), 4) for k in cpu0},
    }


def rate_limited(window: float, root: Path, limit: int = 120, in_flight: int = 40, latency: float = 0.5) -> dict:
    """Requests accepted per minute against a server enforcing ``limit`` per sliding minute, and its 429s."""
    gate = RateLimit(cycle_after(latency), rpm=limit, window_s=60.0)
    with ScriptedServer(default=gate, keep_bodies=False) as server:
        run = _config(server, root, f"limit-{time.time_ns()}", in_flight, 2, f"model.rpm={limit}")
        with Background(run) as bg:
            _wait_for(lambda: len(gate.accepted) >= 1, bg)
            start = gate.accepted[0]
            time.sleep(max(0.0, start + 60.0 + window - time.monotonic()))
    accepted = [t - start for t in gate.accepted]
    rejected = [t - start for t in gate.rejected]
    minutes = int((max(accepted) if accepted else 0) // 60)
    per_minute = [sum(m * 60 <= t < (m + 1) * 60 for t in accepted) for m in range(minutes)]
    sliding = max(
        (sum(a <= t < a + 60 for t in accepted) for a in accepted if a + 60 <= max(accepted)),
        default=0,
    )
    return {
        "server_limit_per_min": limit,
        "in_flight": in_flight,
        "latency_s": latency,
        "accepted_per_minute": per_minute,
        "after_first_minute_per_min": per_minute[1:],
        "max_in_any_60s": sliding,
        "rejected_total": len(rejected),
        "rejected_after_first_minute": sum(t >= 60 for t in rejected),
    }


SCENES = r"""
import json, sys, logging
logging.getLogger("toppra").setLevel(logging.ERROR)
from vabench.envs import EnvConfig, VABenchEnv
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
hold, n = sys.argv[1] == "hold", int(sys.argv[2])
envs = [VABenchEnv(EnvConfig(hold_cameras=hold))]
envs[0].reset("grasp_single_cube", 1000, "passive")
one = rss()
for i in range(1, n):
    env = VABenchEnv(EnvConfig(hold_cameras=hold))
    env.reset("grasp_single_cube", 1000 + i, "passive" if i % 2 else "active")
    env.step({"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 20})
    envs.append(env)
print(json.dumps({"first_scene_mb": round(one), "per_extra_scene_mb": round((rss() - one) / (n - 1), 1)}))
"""


def scenes(n: int = 9) -> dict:
    """What one more scene costs in a worker that already has one (640x480, half passive)."""
    out = {}
    for mode in ("hold", "transient"):
        res = subprocess.run([sys.executable, "-c", SCENES, mode, str(n)], cwd=ROOT, capture_output=True, text=True)
        if res.returncode:
            raise RuntimeError(res.stderr[-2000:])
        out[mode] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="all", choices=["all", "latency10", "latency1", "ratelimit", "scenes"])
    ap.add_argument("--window", type=float, default=40.0, help="seconds per measurement window")
    ap.add_argument("--windows", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault(KEY_VAR, "sk-bench-not-a-secret")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    todo = ["scenes", "latency10", "latency1", "ratelimit"] if args.scenario == "all" else [args.scenario]
    results = {}
    if "scenes" in todo:
        results["scenes"] = scenes()
        print(json.dumps({"scenes": results["scenes"]}), flush=True)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if "latency10" in todo:
            results["latency10"] = decisions(10.0, 64, 2, args.window, args.windows, root)
            print(json.dumps({"latency10": results["latency10"]}), flush=True)
        if "latency1" in todo:
            packed = decisions(1.0, 12, 2, args.window, args.windows, root)
            print(json.dumps({"latency1": packed}), flush=True)
            single = decisions(1.0, 12, 12, args.window, args.windows, root)
            print(json.dumps({"latency1_one_per_worker": single}), flush=True)
            results["latency1"] = {
                "packed_2x6": packed,
                "one_per_worker_12x1": single,
                "packed_over_one_per_worker": round(packed["decisions_per_s"] / single["decisions_per_s"], 3),
            }
        if "ratelimit" in todo:
            results["ratelimit"] = rate_limited(max(args.window * args.windows, 120.0), root)
            print(json.dumps({"ratelimit": results["ratelimit"]}), flush=True)
    ray.shutdown()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
