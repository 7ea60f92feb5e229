"""Policy episodes per hour per core (issue 49), for benchmarks/policy_rate.py: a scripted policy
served by ``python -m vabench.serve_policy --script`` (a separate process, batching as configured),
``--in-flight`` episodes at once on one worker's seats (vabench.run.actors.worker.EpisodeWorker, the
path a Ray worker takes: rows, records and videos written as in a run), against the bare env loop
(``VABenchEnv.reset`` and ``step`` of the same vectors on the same seeds, no agent, no records),
and served again with the run's recording view and video off (``recording.enabled=false``), to
show what of the gap the reviewer's picture and video take.

Both under ``control=ee_delta`` at ``render=small`` on grasp_single_cube's manifest seeds, each
episode at most ``--steps`` control steps: a short cycle of 1 cm moves served by the script (the
figure is the harness's, not a policy's), or with ``checkpoint`` a trained policy served by
``python -m vabench.serve_policy CHECKPOINT`` (its inference counted), whose episodes may end
sooner on success: the rates count control steps, as episodes of ``--steps`` steps. Per core means
per CPU second: the CPU time of every process that did the work (this one's threads and any child
it waited for, and the server's), so a shared, loaded machine does not count others' work; wall
time is printed beside it, and the rate per CPU second of this process alone (the env side, as when
the server has a machine or a GPU of its own).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import requests
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from vabench.agents.episode import Episode
from vabench.envs import EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.control import control_budget
from vabench.envs.render import RENDER_PRESETS
from vabench.envs.seeds import eval_seeds
from vabench.envs.tasks import task_class
from vabench.serve_policy import BATCH_WINDOW_MS

ROOT = Path(__file__).resolve().parents[1]
TASK = "grasp_single_cube"
NO_RECORDING = ("recording.enabled=false", "recording.video=false")  # the run's reviewer view and video off
MOVES = np.array([[0.01, 0, 0], [0, 0.01, 0], [-0.01, 0, 0], [0, -0.01, 0]], dtype=np.float32)


def script(steps: int) -> np.ndarray:
    """The vectors every episode plays: 1 cm moves round a square, the gripper open."""
    moves = MOVES[np.arange(steps) % len(MOVES)]
    return np.concatenate([moves, np.zeros((steps, 4), np.float32)], axis=1)


def bare_env() -> VABenchEnv:
    """The bare loop's env (its shaders compiled before any clock)."""
    env = VABenchEnv(
        EnvConfig(preset=RENDER_PRESETS["small"], control="ee_delta", recording=RecordingConfig(enabled=False))
    )
    env.reset(TASK, eval_seeds(TASK)[0])
    return env


def bare(env: VABenchEnv, seeds: list[int], steps: int) -> dict:
    """The bare env loop: reset and step each seed's episode, nothing else."""
    vectors = script(steps)
    wall, cpu = time.perf_counter(), own_cpu()
    for seed in seeds:
        env.reset(TASK, seed)
        for v in vectors:
            env.step({"ee_delta": v.tolist()})
    wall, cpu = time.perf_counter() - wall, own_cpu() - cpu
    return {"wall_s": wall, "cpu_s": cpu, "env_cpu_s": cpu, "episodes": len(seeds), "steps": len(seeds) * steps}


def serve(
    vectors: np.ndarray, folder: Path, checkpoint: Path | None = None, window_ms: float = BATCH_WINDOW_MS
) -> tuple[subprocess.Popen, str]:
    """serve_policy in its own process (the script's vectors, or ``checkpoint``; its batching window
    ``window_ms``), and its URL (read from the line it prints once listening)."""
    path = folder / "script.npy"
    np.save(path, vectors)
    policy = [str(checkpoint)] if checkpoint else ["--script", str(path), "--horizon", "8"]
    cmd = [sys.executable, "-m", "vabench.serve_policy", *policy, "--port", "0", "--batch-window-ms", str(window_ms)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if " on ws://" not in line:
        proc.kill()
        raise RuntimeError(f"serve_policy did not start: {line!r}")
    return proc, line.split(" on ", 1)[1].split()[0]


def run_config(url: str, folder: Path, seeds: int, steps: int, extra: tuple[str, ...] = ()):
    from vabench.run.config.run import from_config

    scale = steps / control_budget(task_class(TASK).budget, TASK)
    overrides = ["model=policy", f"model.extra.url={url}", "control=ee_delta", "render=small", f"tasks=[{TASK}]",
                 f"seeds={seeds}", f"budget_scale={scale}", f"results_dir={folder}", "run_id=rate", *extra]  # fmt: skip
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = OmegaConf.to_container(compose(config_name="config", overrides=overrides), resolve=True)
    return from_config(cfg, folder / "rate")


class Served:
    """One worker's seats against the served policy (``extra``: more run overrides), warmed by one
    unclocked episode per seat on the manifest's first seeds; :meth:`batch` plays and clocks a few."""

    def __init__(self, url: str, folder: Path, batch: tuple[int, int, int, int], extra: tuple[str, ...]):
        from vabench.run.actors.worker import EpisodeWorker
        from vabench.run.actors.workerconfig import WorkerConfig
        from vabench.run.config.specs import expand

        episodes, steps, in_flight, repeats = batch
        folder.mkdir()
        run = run_config(url, folder, in_flight + episodes, steps, (*extra, f"runs={repeats}"))
        self.worker, self.specs = EpisodeWorker(WorkerConfig.of(run, slots=in_flight)), expand(run)
        self.steps, self.in_flight, self.per_run = steps, in_flight, in_flight + episodes
        _together(self.worker, self.specs[:in_flight], in_flight)  # each seat's first scene and shader compile

    def clocked(self, repeat: int, k: int) -> list:
        """The specs of repeat ``repeat``'s ``k``-th batch (each repeat a run index: its own records)."""
        first = repeat * self.per_run + self.in_flight * (k + 1)
        return self.specs[first : first + self.in_flight]

    def batch(self, repeat: int, k: int, server: int) -> dict:
        """One batch's ``in_flight`` episodes, at once; the server's CPU (process ``server``) counted."""
        specs = self.clocked(repeat, k)
        server_cpu, wall, cpu = _cpu(server), time.perf_counter(), own_cpu()
        rows = _together(self.worker, specs, self.in_flight)
        wall, cpu, server_cpu = time.perf_counter() - wall, own_cpu() - cpu, _cpu(server) - server_cpu
        ok = sum(r["status"] == "ok" and (r["steps"] == self.steps or r["success"]) for r in rows)
        return {"wall_s": wall, "cpu_s": cpu + server_cpu, "env_cpu_s": cpu, "episodes": len(rows), "ok": ok,
                "steps": sum(r["steps"] for r in rows)}  # fmt: skip


def _together(worker, specs, in_flight: int) -> list[dict]:
    """The rows of ``specs`` played ``in_flight`` at a time, one thread per seat."""
    rows: list[dict] = []

    def play(mine) -> None:
        for spec in mine:
            rows.append(worker.run(Episode(spec))["row"])

    threads = [threading.Thread(target=play, args=(specs[k::in_flight],)) for k in range(in_flight)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return rows


def own_cpu() -> float:
    """CPU seconds of this process's threads (the in-process video encoder's among them) and of any
    child process it has waited for: whatever the run starts to do its work is the run's cost."""
    t = os.times()
    return time.process_time() + t.children_user + t.children_system


def _cpu(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def batches(url: str) -> dict[str, int]:
    """The server's batches by size so far (``GET /stats``): how often observations went together."""
    http = url.replace("ws://", "http://", 1).rstrip("/") + "/stats"
    return requests.get(http, timeout=10).json()["batches"]


def episodes_per_hour(
    episodes: int,
    steps: int,
    in_flight: int,
    repeats: int = 3,
    checkpoint: Path | None = None,
    window_ms: float = BATCH_WINDOW_MS,
) -> dict:
    """Episodes (of ``steps`` control steps) per hour per core (per CPU hour) and per wall hour,
    served and bare (the same seeds), and their ratio. The cells take turns batch by batch
    (``in_flight`` episodes each, ``episodes`` in all, ``repeats`` times), every cell warm, and each
    cell's median CPU and wall time per step is taken: on a shared machine one cell's minute can
    cost a fifth more than the next's, so only close turns compare."""
    with tempfile.TemporaryDirectory(prefix="vabench-rate-") as tmp:
        proc, url = serve(script(steps), Path(tmp), checkpoint, window_ms)
        env = bare_env()
        try:
            runs = {
                "served": Served(url, Path(tmp) / "on", (episodes, steps, in_flight, repeats), ()),
                "served, no recording view": Served(
                    url, Path(tmp) / "off", (episodes, steps, in_flight, repeats), NO_RECORDING
                ),
            }
            done: dict[str, list[dict]] = {"bare": [], **{name: [] for name in runs}}
            for repeat in range(repeats):
                for k in range(episodes // in_flight):
                    seeds = [spec.seed for spec in runs["served"].clocked(repeat, k)]
                    done["bare"].append(bare(env, seeds, steps))
                    for name, cell in runs.items():
                        done[name].append(cell.batch(repeat, k, proc.pid))
            for cell in runs.values():
                cell.worker.close()
            sizes = batches(url)
        finally:
            env.close()
            proc.kill()
            proc.wait()
    out = {name: _median(turns) for name, turns in done.items()}
    for cell in out.values():
        cell["per_core_hour"] = 3600 / steps / cell["cpu_step_s"]
        cell["per_wall_hour"] = 3600 / steps / cell["wall_step_s"]
        cell["per_env_core_hour"] = 3600 / steps / cell["env_cpu_step_s"]  # the server's CPU elsewhere (a GPU's)
    out["ratio"] = out["served"]["per_core_hour"] / out["bare"]["per_core_hour"]
    policy = f"the checkpoint {checkpoint.name} served" if checkpoint else "scripted (serve_policy --script)"
    return out | {"in_flight": in_flight, "steps": steps, "repeats": repeats, "policy": policy, "batches": sizes,
                  "window_ms": window_ms}  # fmt: skip


def _median(done: list[dict]) -> dict:
    """One cell's batches: median CPU and wall seconds per control step; the episodes played whole
    (or to success) over all of them."""
    cell = {
        f"{k}_step_s": statistics.median(d[f"{k}_s"] / d["steps"] for d in done) for k in ("wall", "cpu", "env_cpu")
    }
    if "ok" in done[0]:
        cell |= {"ok": sum(d["ok"] for d in done), "played": sum(d["episodes"] for d in done)}
    return cell
