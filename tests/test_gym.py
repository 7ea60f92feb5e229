"""The Gymnasium env (vabench.gym): ids from the task registry with the task's budget, gymnasium's
checker on every task (about 4 s of CPU each at render=small: it resets 11 times), the paper's
command space round trip, manifest seeds, and the same physics and checker as the harness: the
oracle's actions replayed through the Gym env succeed, and a harness rollout and a Gym rollout of
the same actions agree step by step."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import vabench.gym.env  # the module, as well as the package (registers the ids)
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.offline import OracleAgent
from vabench.envs import EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.actions import parse_action
from vabench.envs.render import RENDER_PRESETS
from vabench.envs.seeds import eval_seeds
from vabench.envs.tasks import TASKS
from vabench.gym import spaces as sp
from vabench.gym.oracle import expert_decisions
from vabench.results.records import read_events

ROOT = Path(__file__).resolve().parents[1]
NOT_NORMALISED = "For Box action spaces, we recommend using a symmetric and normalized space"  # metric on purpose
SMALL = {"render": "small", "render_mode": "rgb_array"}


def checked(task: str, protocol: str) -> list[str]:
    """check_env on a task; the warnings it raised other than the metric action space's."""
    env = gym.make(vabench.gym.gym_id(task), protocol=protocol, **SMALL)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped)
    finally:
        env.close()
    return [str(w.message) for w in caught if NOT_NORMALISED not in str(w.message)]


def test_every_task_has_an_id_with_its_budget_from_the_registry():
    assert vabench.gym.ENV_IDS == tuple(vabench.gym.gym_id(t) for t in sorted(TASKS))
    assert vabench.gym.gym_id("grasp_single_cube") == "vabench/GraspSingleCube-v0"
    for task, cls in TASKS.items():
        spec = gym.spec(vabench.gym.gym_id(task))
        assert (spec.max_episode_steps, spec.kwargs) == (cls.budget, {"task": task})


def test_make_with_the_module_prefix_imports_and_registers_vabench():
    """gymnasium imports vabench for "vabench:vabench/<Task>-v0" (a fresh process: nothing imported)."""
    code = (
        "import gymnasium as gym\n"
        "env = gym.make('vabench:vabench/LiftPot-v0', protocol='passive', render='small')\n"
        "print(env.spec.max_episode_steps, sorted(env.observation_space['pixels']), env.unwrapped.command_labels[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[0] == (
        "50 ['front_side_45', 'oblique_45', 'side', 'side_top_45', 'topdown'] gripper.move_world arm=left"
    )


@pytest.mark.interop
@pytest.mark.parametrize("task", sorted(TASKS))
def test_the_checker_passes_on_every_task(task):
    protocol = ("active", "passive")[sorted(TASKS).index(task) % 2]  # both protocols, single and dual tasks
    assert checked(task, protocol) == []


@pytest.mark.parametrize("arms,camera", [(("right",), True), (("left", "right"), True), (("left", "right"), False)])
def test_every_action_is_a_valid_command_and_survives_the_round_trip(arms, camera):
    table = sp.commands(arms, camera)
    space = sp.action_space(arms, camera)
    space.seed(7)
    kinds = set()
    for _ in range(400):
        action = space.sample()
        decision = sp.decision(action, table, arms)
        act = parse_action(decision, arms, camera)  # the env's own parser accepts it
        kinds.add(table[int(action["command"])][0])
        assert sp.decision(sp.encode(decision, table, arms, camera), table, arms) == decision
        assert sp.encode(act, table, arms, camera)["command"] == int(action["command"])
    assert kinds == {name for name, _ in table}
    assert len(set(sp.command_labels(table))) == len(table)


def test_seeds_play_the_manifest_and_any_other_seed_is_mapped_or_warned():
    env = vabench.gym.env.VABenchGymEnv("grasp_single_cube", render="small")
    manifest = eval_seeds("grasp_single_cube")
    assert env.seeds == tuple(manifest)
    assert env.scene_seed_for(manifest[5]) == manifest[5]
    assert [env.scene_seed_for(i) for i in range(3)] == manifest[:3]
    assert env.scene_seed_for(len(manifest) + 2) == manifest[2]
    env.np_random  # noqa: B018 (seeded on first use)
    assert env.scene_seed_for(None) in manifest
    loose = vabench.gym.env.VABenchGymEnv("grasp_single_cube", render="small", unverified_seeds=True)
    rejected = 1199 if 1199 not in manifest else None
    with pytest.warns(UserWarning, match="not in the verified manifest"):
        assert loose.scene_seed_for(rejected) == rejected


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"robot": "kuka"}, "unknown robot 'kuka' choices: panda, ur5, xarm7"),
        ({"render": "huge"}, "unknown render preset 'huge' choices: fast, paper, small"),
        ({"protocol": "both"}, "unknown protocol 'both' choices: active, passive"),
        ({"perturbation": "fog:2"}, "unknown perturbation kind 'fog'"),
    ],
)
def test_bad_kwargs_are_refused_in_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gym.make("vabench/GraspSingleCube-v0", **kwargs)


# -- the same physics and checker as the launcher ---------------------------------------------------


def replay(env, seed: int, decisions: list[dict]) -> list[tuple]:
    """Each step's (reward, terminated, truncated, info) of ``decisions`` replayed through ``env``."""
    env.reset(seed=seed)
    return [env.step(env.unwrapped.encode(d))[1:] for d in decisions]


@pytest.mark.parametrize("task", ["grasp_single_cube", "lift_pot"])
def test_the_oracles_actions_replayed_through_gym_succeed(task):
    seed = eval_seeds(task)[0]
    steps = replay(gym.make(vabench.gym.gym_id(task), **SMALL), seed, expert_decisions(task, seed))
    assert [s[1] for s in steps] == [False] * (len(steps) - 1) + [True]  # terminated on the last, only
    assert steps[-1][3]["is_success"] and steps[-1][0] == 1.0 and not any(s[2] for s in steps)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["grasp_single_cube", "lift_pot"])
def test_the_oracle_replayed_through_gym_succeeds_on_every_manifest_seed(task):
    env = gym.make(vabench.gym.gym_id(task), **SMALL)
    failed = [s for s in eval_seeds(task) if not replay(env, s, expert_decisions(task, s))[-1][3]["is_success"]]
    assert failed == []


def test_a_harness_rollout_and_a_gym_rollout_of_the_same_actions_agree(tmp_path):
    task, seed = "grasp_single_cube", eval_seeds("grasp_single_cube")[1]
    sim = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["small"], recording=RecordingConfig(enabled=False, video=False)))
    row = run_episode(sim, OracleAgent(), Episode.of(task, seed, env=sim), tmp_path / "ep")
    events = read_events(tmp_path / "ep" / "events.jsonl")
    acted = [e for e in events if e["type"] == "action"]
    final = [e for e in events if e["type"] == "state"][-1]
    env = gym.make(vabench.gym.gym_id(task), **SMALL)
    steps = replay(env, seed, [e["payload"] for e in acted])
    assert row.success and steps[-1][3]["is_success"] and len(steps) == row.steps
    harness = [(e["label"], e["valid"], e["planner_success"], e["feedback"], e["success"]) for e in acted]
    gym_side = [
        (i["last_action"], i["action_valid"], i["planner_success"], i["feedback"], i["is_success"]) for *_, i in steps
    ]
    assert gym_side == harness
    state = env.unwrapped.api.evaluator_state()  # evaluator side, for this test only
    assert {k: state[k] for k in ("objects", "arms")} == {k: final[k] for k in ("objects", "arms")}
    assert np.array_equal(env.unwrapped.api.render(), sim.render())  # the same scene, the same pixels
