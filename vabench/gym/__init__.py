"""Gymnasium envs for every registered task: ``vabench/<TaskName>-v0`` (``grasp_single_cube`` ->
``vabench/GraspSingleCube-v0``), made from the task registry with ``max_episode_steps`` = the task's
step budget. Needs the ``gym`` extra (``pip install vabench[gym]``); docs/gym.md.

    import gymnasium as gym
    env = gym.make("vabench:vabench/GraspSingleCube-v0", protocol="passive", render="small")

``gym.make("vabench:...")`` imports ``vabench``, which registers the ids when gymnasium is loaded
(vabench/__init__.py); ``import vabench.gym`` registers them in any case.
"""

from __future__ import annotations

import gymnasium

NAMESPACE = "vabench"
ENTRY_POINT = "vabench.gym.env:VABenchGymEnv"


def gym_name(task: str) -> str:
    """``grasp_single_cube`` -> ``GraspSingleCube``."""
    return "".join(part.capitalize() for part in task.split("_"))


def gym_id(task: str) -> str:
    return f"{NAMESPACE}/{gym_name(task)}-v0"


def register_envs() -> tuple[str, ...]:
    """Register (once) an id for every task of the registry; returns the ids, sorted by task."""
    from vabench.envs.tasks import TASKS

    ids = []
    for name, cls in sorted(TASKS.items()):
        env_id = gym_id(name)
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"task": name}, max_episode_steps=cls.budget)
        ids.append(env_id)
    return tuple(ids)


ENV_IDS = register_envs()
