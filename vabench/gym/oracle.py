"""The oracle's decisions on a scene, as a Gym user replays them (tests, benchmarks, examples): the
task's scripted expert run on a physics-only env of the same physics, until done."""

from __future__ import annotations

from vabench.envs import EnvConfig, VABenchEnv


def expert_decisions(task: str, seed: int, sim: VABenchEnv | None = None) -> list[dict]:
    """The expert's decisions on ``task`` at ``seed`` (``sim``: an env to reuse; a fresh
    physics-only one otherwise)."""
    env = sim or VABenchEnv(EnvConfig(render=False))
    try:
        env.reset(task, seed)
        decisions = []
        for action in env.expert():
            decisions.append(action)
            if env.step(action).done:
                break
        return decisions
    finally:
        if sim is None:
            env.close()
