"""Shared fixtures: one env per test module kind, because building an env is cheap but the
first rendered frame of a process compiles shaders (~4 s)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from vabench.envs.env import EnvConfig, VABenchEnv

logging.getLogger("toppra").setLevel(logging.ERROR)


@pytest.fixture(scope="session")
def physics_env():
    """An env without rendering (fast): for executor, task and seed tests."""
    env = VABenchEnv(EnvConfig(render=False))
    yield env
    env.close()


@pytest.fixture(scope="session")
def render_env():
    env = VABenchEnv(EnvConfig())
    yield env
    env.close()


def scene_digest(env) -> dict[str, np.ndarray]:
    """Every object pose and joint state of the current episode (privileged; tests only)."""
    out = {name: body.matrix().copy() for name, body in env.world.bodies.items()}
    for arm, a in env.world.arms.items():
        out[f"{arm}_qpos"] = a.qpos.copy()
        out[f"{arm}_qvel"] = np.asarray(a.robot.get_qvel(), dtype=float).copy()
    return out
