"""Tasks and their verified seeds: the expert (acting only through protocol actions) succeeds
on the manifest seeds; the screener rejects scenes that do not settle."""

import json

import pytest

from vabench.envs import seeds
from vabench.envs.tasks import TASKS, make_task

from .probes import ShortBudgetProbe, SpinningProbe


def run_expert(env, task, seed):
    env.reset(task, seed)
    result = None
    for result in env.expert_steps():
        assert result.action_valid and result.planner_success, (task, seed, result.step, result.feedback)
    return result


@pytest.mark.parametrize("task", sorted(TASKS))
def test_manifest_is_complete_and_well_formed(task):
    data = seeds.load_manifest(task)
    assert len(data["accepted"]) == 20 == len(set(data["accepted"]))
    assert data["accepted"] == sorted(data["accepted"])
    assert all(seeds.EVAL_POOL[0] <= s <= seeds.EVAL_POOL[1] for s in data["accepted"])
    assert seeds.DEMO_POOL[0] <= data["demo_seed"] <= seeds.DEMO_POOL[1]
    assert data["demo_seed"] not in data["accepted"]
    assert data["budget"] == TASKS[task].budget


def _expert_succeeds(env, task, seeds_to_run):
    for seed in seeds_to_run:
        r = run_expert(env, task, seed)
        assert r.success and r.done, (task, seed)
        assert all(env.checkpoints().values()), (task, seed, env.checkpoints())


@pytest.mark.parametrize("task", sorted(TASKS))
def test_expert_succeeds_on_a_sample_of_manifest_seeds(physics_env, task):
    """CI's sample: the first and last verified seed and the demo seed of every family."""
    verified = seeds.eval_seeds(task)
    _expert_succeeds(physics_env, task, [verified[0], verified[-1], seeds.demo_seed(task)])


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(TASKS))
def test_expert_succeeds_on_every_manifest_seed(physics_env, task):
    _expert_succeeds(physics_env, task, [*seeds.eval_seeds(task), seeds.demo_seed(task)])


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(TASKS))
def test_rescreening_reproduces_the_committed_manifest(physics_env, task):
    data = seeds.load_manifest(task)
    accepted, rejected = seeds.screen(physics_env, task, log=lambda *_: None)
    assert accepted == data["accepted"] and rejected == data["rejected"]


def test_paper_parameters():
    cube, bowl = make_task("grasp_single_cube"), make_task("place_cube_in_bowl")
    assert (cube.budget, bowl.budget) == (50, 50)
    assert cube.X == (0.18, 0.26) and cube.Y == (-0.16, -0.06) and cube.YAW_DEG == 45 and cube.LIFT_M == 0.05
    assert bowl.BOWL_X == (0.10, 0.14) and bowl.BOWL_Y == (0.00, 0.04)
    assert bowl.CUBE_X == (0.22, 0.27) and bowl.CUBE_Y == (-0.17, -0.10)
    assert bowl.RADIUS_M == 0.055 and bowl.HEIGHT_M == (0.015, 0.095) and bowl.BOWL_MOVE_M == 0.005


def test_layouts_stay_inside_the_paper_ranges(physics_env):
    for seed in range(1000, 1010):
        physics_env.reset("place_cube_in_bowl", seed)
        s = physics_env.privileged()
        t = physics_env.task
        c, b = s.start["cube"][:3, 3], s.start["bowl"][:3, 3]
        assert t.CUBE_X[0] - 0.003 <= c[0] <= t.CUBE_X[1] + 0.003 and t.CUBE_Y[0] - 0.003 <= c[1] <= t.CUBE_Y[1] + 0.003
        assert t.BOWL_X[0] <= b[0] <= t.BOWL_X[1] and t.BOWL_Y[0] <= b[1] <= t.BOWL_Y[1]


def test_success_needs_the_gripper_closed_and_the_lift(physics_env):
    env = physics_env
    env.reset("grasp_single_cube", 1000)
    s = env.privileged()
    for action in env.task.expert(s):
        r = env.step(action)
        if action["action"] == "gripper.close":
            assert not r.success and env.checkpoints()["grasped"] and not env.checkpoints()["lifted"]
        if r.done:
            break
    assert r.success and s.lift("cube") > 0.05 and s.closed("right")


def test_bowl_success_requires_release(physics_env):
    env = physics_env
    env.reset("place_cube_in_bowl", seeds.eval_seeds("place_cube_in_bowl")[0])
    s = env.privileged()
    history = []
    for action in env.task.expert(s):
        r = env.step(action)
        history.append((action["action"], r.success))
        if r.done:
            break
    assert history[-1] == ("gripper.open", True)
    assert len(history) > 10 and not any(ok for _, ok in history[:-1])


def test_budget_ends_the_episode(physics_env):
    env = physics_env
    env.reset(ShortBudgetProbe(), 0)
    results = [env.step({"action": "camera.view_topdown"}) for _ in range(3)]
    assert [r.done for r in results] == [False, False, True] and results[-1].budget_left == 0
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step({"action": "camera.view_topdown"})


def test_screener_rejects_a_scene_that_never_settles(physics_env):
    v = seeds.probe(physics_env, SpinningProbe(), 7)
    assert not v.ok and v.reason.startswith("unstable: ball turned")


def test_missing_manifest_error_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(seeds, "MANIFEST_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match="--write"):
        seeds.load_manifest("grasp_single_cube")
    (tmp_path / "grasp_single_cube.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ValueError, match="not a vabench.seed_manifest.v1"):
        seeds.load_manifest("grasp_single_cube")


def test_unknown_task_and_bad_protocol_are_clear_errors(physics_env):
    with pytest.raises(ValueError, match="unknown task 'grasp_everything'.* choices: beat_block_hammer_right, "):
        physics_env.reset("grasp_everything", 0)
    with pytest.raises(ValueError, match="unknown protocol 'blind' choices: active, passive"):
        physics_env.reset("grasp_single_cube", 0, protocol="blind")
    with pytest.raises(ValueError, match="seed must be an integer"):
        physics_env.reset("grasp_single_cube", 1.5)
