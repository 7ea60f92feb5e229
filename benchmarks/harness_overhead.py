"""What the agent harness adds per step on top of the env: prompt building, frame files, image
encoding, the event record, validation. Measured with the oracle (no model latency), per
protocol, as the median over several episodes, against the same episodes stepped directly
through the env API (the baseline).

    python benchmarks/harness_overhead.py [--seeds 3]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.offline import OracleAgent
from vabench.envs.env import VABenchEnv
from vabench.envs.seeds import eval_seeds

logging.getLogger("toppra").setLevel(logging.ERROR)
TASKS = ("grasp_single_cube", "place_cube_in_bowl")


def per_step_direct(env: VABenchEnv, task: str, seed: int, protocol: str) -> float:
    env.reset(task, seed, protocol)
    t = time.perf_counter()
    steps = sum(1 for _ in env.expert_steps())
    return (time.perf_counter() - t) / steps


def per_step_harness(env: VABenchEnv, task: str, seed: int, protocol: str, out: Path) -> float:
    """run_episode resets inside; a reset of the same scene just before estimates that share."""
    t = time.perf_counter()
    env.reset(task, seed, protocol)
    reset = time.perf_counter() - t
    t = time.perf_counter()
    r = run_episode(env, OracleAgent(), Episode.of(task, seed, protocol, env=env), out)
    total = time.perf_counter() - t
    assert r.success, r
    return (total - reset) / r.steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    env = VABenchEnv()
    env.reset(TASKS[0], eval_seeds(TASKS[0])[0])
    env.camera.render()  # compile shaders outside the timing
    for protocol in ("active", "passive"):
        direct, harness = [], []
        with tempfile.TemporaryDirectory() as tmp:
            for task in TASKS:
                for seed in eval_seeds(task)[: args.seeds]:
                    direct.append(per_step_direct(env, task, seed, protocol))
                    harness.append(per_step_harness(env, task, seed, protocol, Path(tmp) / f"{task}{seed}"))
        d, h = statistics.median(direct) * 1000, statistics.median(harness) * 1000
        print(
            f"{protocol:7s} per step: env API {d:6.1f} ms, through the harness {h:6.1f} ms "
            f"(overhead {h - d:5.1f} ms, ratio {h / d:4.2f}) over {len(direct)} episodes"
        )
    env.close()


if __name__ == "__main__":
    main()
