"""The oracle's actions replayed through the Gym env (vabench.gym) on every manifest seed of some
tasks: the same scenes, physics and checker as the launcher, so each replay must succeed.

For each seed the task expert runs on a physics-only VABenchEnv (its decisions are recorded), then
the decisions, encoded as Gym actions, are replayed through ``gymnasium.make("vabench/<Task>-v0")``.
Prints per task: successes / seeds, the replay's median steps, and the seeds that failed.

    .venv/bin/python benchmarks/gym_oracle_replay.py --tasks grasp_single_cube lift_pot
    .venv/bin/python benchmarks/gym_oracle_replay.py --tasks place_shoe --protocol passive --seeds 5
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym

import vabench.gym
from vabench.core.vocab import ACTIVE, Render
from vabench.envs import EnvConfig, VABenchEnv
from vabench.envs.seeds import eval_seeds
from vabench.gym.oracle import expert_decisions


def replay(env, seed: int, decisions: list[dict]) -> tuple[bool, int]:
    """(success, steps) of ``decisions`` replayed from a reset to ``seed``."""
    env.reset(seed=seed)
    info, steps = {"is_success": False}, 0
    for d in decisions:
        _, _, terminated, truncated, info = env.step(env.unwrapped.encode(d))
        steps += 1
        if terminated or truncated:
            break
    return bool(info["is_success"]), steps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=["grasp_single_cube", "lift_pot"])
    p.add_argument("--protocol", default=ACTIVE.name)
    p.add_argument("--render", default=Render.SMALL)
    p.add_argument("--seeds", type=int, default=None, help="the first N manifest seeds (default: all)")
    args = p.parse_args()
    sim = VABenchEnv(EnvConfig(render=False))
    for task in args.tasks:
        env = gym.make(vabench.gym.gym_id(task), protocol=args.protocol, render=args.render)
        seeds = eval_seeds(task)[: args.seeds]
        started, results = time.perf_counter(), {}
        for seed in seeds:
            results[seed] = replay(env, seed, expert_decisions(task, seed, sim))
        env.close()
        wins = sum(ok for ok, _ in results.values())
        failed = [s for s, (ok, _) in results.items() if not ok]
        steps = statistics.median(n for _, n in results.values())
        print(
            f"{vabench.gym.gym_id(task)} ({args.protocol}): {wins}/{len(seeds)} succeeded "
            f"({100 * wins / len(seeds):.0f}%), median {steps:g} steps, failed seeds {failed or 'none'} "
            f"[{time.perf_counter() - started:.0f} s]",
            flush=True,
        )
    sim.close()


if __name__ == "__main__":
    main()
