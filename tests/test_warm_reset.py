"""The warm reset (``EnvConfig.warm_reset``, vabench.envs.settle_cache; issue 49): the settled state
kept on disk equals the one a cold reset settles into, and an episode from the kept state is the
same whether the state was just settled (a miss) or read back (a hit)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vabench.envs import EnvConfig, VABenchEnv
from vabench.envs import settle_cache as sc
from vabench.envs.seeds import eval_seeds
from vabench.envs.tasks import make_task

PHYSICS_ONLY = EnvConfig(render=False)


def warm_env(tmp_path) -> VABenchEnv:
    env = VABenchEnv(dataclasses.replace(PHYSICS_ONLY, warm_reset=True))
    env.settled = sc.SettleCache(tmp_path / "settled")
    return env


def settled_now(env: VABenchEnv) -> sc.Settled:
    return sc.capture(env.world, env.stability.max_drift_deg, env.stability.worst_body)


def assert_same(a: sc.Settled, b: sc.Settled) -> None:
    assert (a.step_count, a.drift_deg, a.worst_body) == (b.step_count, b.drift_deg, b.worst_body)
    for mine, theirs in ((a.arms, b.arms), (a.bodies, b.bodies)):
        assert mine.keys() == theirs.keys()
        for name in mine:
            assert mine[name].keys() == theirs[name].keys()
            for part in mine[name]:
                assert np.array_equal(mine[name][part], theirs[name][part]), (name, part)


def expert_episode(env: VABenchEnv, task: str, seed: int) -> tuple[list[dict], bool]:
    env.reset(task, seed)
    states = [env.evaluator_state()]
    states += [env.evaluator_state() for _ in env.expert_steps()]
    return states, env.success


@pytest.mark.parametrize("task", ["grasp_single_cube", "lift_pot"])  # a parked arm; both arms
def test_the_kept_state_is_the_cold_settle_and_a_hit_plays_as_the_miss(task, tmp_path):
    seed = eval_seeds(task)[0]
    cold = VABenchEnv(PHYSICS_ONLY)
    cold.reset(task, seed)
    warm = warm_env(tmp_path)
    miss, miss_ok = expert_episode(warm, task, seed)
    assert (warm.settled.hits, warm.settled.misses) == (0, 1)
    warm.reset(task, seed)
    assert (warm.settled.hits, warm.settled.misses) == (1, 1)
    assert_same(settled_now(warm), settled_now(cold))  # read back from disk: the cold settle's state
    assert settled_now(warm).bodies and all(len(parts["qpos"]) for parts in settled_now(warm).arms.values())
    hit, hit_ok = expert_episode(warm, task, seed)
    assert (warm.settled.hits, warm.settled.misses) == (2, 1)
    assert hit == miss and hit_ok == miss_ok  # every step's object, gripper and joint state
    for env in (cold, warm):
        env.close()


def test_the_key_names_everything_a_settle_depends_on():
    task = make_task("grasp_single_cube")
    base = sc.key(task, 1000, PHYSICS_ONLY)
    assert base == sc.key(make_task("grasp_single_cube"), 1000, EnvConfig(render=False, warm_reset=True))
    others = [
        sc.key(task, 1001, PHYSICS_ONLY),
        sc.key(make_task("grasp_single_cube_heldout"), 1000, PHYSICS_ONLY),
        sc.key(task, 1000, EnvConfig(render=False, robot="ur5")),
        sc.key(task, 1000, EnvConfig(render=False, settle_steps=1000)),
        sc.key(task, 1000, EnvConfig(render=False, stability_window=300)),
    ]
    assert len({base, *others}) == 1 + len(others)
    assert sc.key(task, 1000, EnvConfig(render=True)) == base  # the look is applied after the settle
    files = {p.relative_to(sc.PHYSICS).as_posix() for p in sc.physics_files()}
    assert {"env.py", "config.py", "settle_cache.py", "sim/scene.py", "sim/robot.py", "tasks/base.py"} <= files


def test_a_damaged_entry_is_a_miss_and_is_settled_again(tmp_path):
    env = warm_env(tmp_path)
    task, seed = "grasp_single_cube", eval_seeds("grasp_single_cube")[0]
    env.reset(task, seed)
    first = settled_now(env)
    (entry,) = (tmp_path / "settled").glob("*.npz")
    entry.write_bytes(entry.read_bytes()[:100])
    env.reset(task, seed)
    assert (env.settled.hits, env.settled.misses) == (0, 2)
    assert_same(settled_now(env), first)
    env.close()


def test_gym_resets_warm_when_asked_and_a_hit_shows_what_the_miss_showed(tmp_path):
    import vabench.gym.env

    env = vabench.gym.env.VABenchGymEnv("grasp_single_cube", render="small", warm_reset=True)
    assert env.api.config.warm_reset and not EnvConfig().warm_reset  # the cold reset unless asked
    env.api.settled = sc.SettleCache(tmp_path / "settled")
    try:
        first, _ = env.reset(seed=0)
        again, info = env.reset(seed=0)
        assert (env.api.settled.hits, env.api.settled.misses) == (1, 1) and info["scene_seed"] == env.seeds[0]
        assert np.array_equal(first["agent_pos"], again["agent_pos"])
        assert np.array_equal(first["pixels"]["active"], again["pixels"]["active"])
    finally:
        env.close()
