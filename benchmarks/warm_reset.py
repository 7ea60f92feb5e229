"""A reset's wall time, cold (build and settle: 2,500 physics steps) against warm (build and restore
the kept settled state, ``EnvConfig.warm_reset``; vabench.envs.settle_cache), in one run over
several tasks and manifest seeds (issue 49: a warm reset of a manifest seed at most 2x ManiSkill3's
0.054 s, i.e. about 0.11 s).

Per task: the median cold reset, the median warm reset with the state kept (a hit), and the first
warm reset of each seed (a miss: it settles a scratch scene, keeps the state, then restores into a
new scene), each over ``--seeds`` seeds x ``--repeats`` resets, at the ``--render`` preset with the
first observation rendered (a reset returns it), recording views off. The cache lives in a
temporary folder, so the run starts cold.

    .venv/bin/python benchmarks/warm_reset.py                       # small preset, 3 tasks x 3 seeds x 3
    .venv/bin/python benchmarks/warm_reset.py --render none         # physics only
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

from vabench.envs import EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.render import render_preset
from vabench.envs.seeds import eval_seeds
from vabench.envs.settle_cache import SettleCache

NO_RECORDING = RecordingConfig(enabled=False, video=False)


def timed_reset(env: VABenchEnv, task: str, seed: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process: every thread, the renderer's included)."""
    wall, cpu = time.perf_counter(), time.process_time()
    env.reset(task, seed)
    return time.perf_counter() - wall, time.process_time() - cpu


def config(render: str, warm: bool) -> EnvConfig:
    if render == "none":
        return EnvConfig(render=False, recording=NO_RECORDING, warm_reset=warm)
    return dataclasses.replace(EnvConfig(preset=render_preset(render), recording=NO_RECORDING), warm_reset=warm)


def measure(task: str, seeds: list[int], repeats: int, render: str, cache: Path) -> dict[str, list[tuple]]:
    cold, warm = VABenchEnv(config(render, False)), VABenchEnv(config(render, True))
    warm.settled = SettleCache(cache)
    out = {"cold": [], "miss": [], "hit": []}
    try:
        cold.reset(task, seeds[0])  # the shader compile and the first scene, before any clock
        for seed in seeds:
            out["miss"].append(timed_reset(warm, task, seed))
            for _ in range(repeats):
                out["cold"].append(timed_reset(cold, task, seed))
                out["hit"].append(timed_reset(warm, task, seed))
    finally:
        cold.close()
        warm.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=["grasp_single_cube", "lift_pot", "place_shoe"])
    p.add_argument("--seeds", type=int, default=3, help="the first N manifest seeds of each task")
    p.add_argument("--repeats", type=int, default=3, help="resets per seed, cold and warm")
    p.add_argument("--render", default="small", help="a render preset, or none (physics only)")
    args = p.parse_args()
    every: dict[str, list[tuple]] = {"cold": [], "miss": [], "hit": []}
    print(f"render={args.render}, {args.seeds} seeds x {args.repeats} resets per task; median seconds, wall (CPU)")
    print(f"{'task':<26} {'cold':>15} {'warm':>15} {'miss':>15} {'cold/warm':>10}")
    with tempfile.TemporaryDirectory(prefix="vabench-settled-") as cache:
        for task in args.tasks:
            times = measure(task, eval_seeds(task)[: args.seeds], args.repeats, args.render, Path(cache))
            for k, v in times.items():
                every[k] += v
            _line(task, times)
    hit = _line("all", every)
    print(f"goal: a warm reset <= 0.108 s wall (2x ManiSkill3's 0.054 s): {'met' if hit <= 0.108 else 'NOT met'}")


def _line(name: str, times: dict[str, list[tuple]]) -> float:
    """Print one row; return the median warm (hit) wall time."""
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}
    cells = " ".join(f"{med[k][0]:7.3f} ({med[k][1]:5.3f})" for k in ("cold", "hit", "miss"))
    print(f"{name:<26} {cells} {med['cold'][0] / med['hit'][0]:9.1f}x")
    return med["hit"][0]


if __name__ == "__main__":
    main()
