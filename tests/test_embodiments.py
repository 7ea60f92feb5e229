"""Embodiments (issue 28): the xArm7 and the UR5 carry the Panda hand, so the proprioception means
the same (GC between the pads, end effector, gripper-local axes); their homes hold the hand as the
Panda's does; each robot has its own verified seeds, on which its oracle succeeds; the config names
the robot and refuses one it does not know."""

from __future__ import annotations

import numpy as np
import pytest

from vabench.core.vocab import Robot, Split, Track
from vabench.envs import EnvConfig, VABenchEnv
from vabench.envs.seeds import eval_seeds, load_manifest, manifest_path
from vabench.envs.sim.embodiments import EMBODIMENTS, embodiment
from vabench.envs.tasks import TASKS, tasks_of_track

OTHERS = [r for r in Robot if r != Robot.PANDA]


def _home(robot: str):
    env = VABenchEnv(EnvConfig(render=False, robot=robot))
    env.reset("grasp_single_cube", eval_seeds("grasp_single_cube")[0])
    proprio = env.world.arms["right"].proprio()
    env.close()
    return proprio


@pytest.mark.parametrize("robot", OTHERS)
def test_home_holds_the_hand_as_the_panda_does(robot):
    panda, other = _home(Robot.PANDA), _home(robot)
    for axis in ("rx", "ry", "rz"):
        np.testing.assert_allclose(getattr(other, axis), getattr(panda, axis), atol=5e-3, err_msg=axis)
    ahead = embodiment(robot).home_reach - embodiment(Robot.PANDA).home_reach
    np.testing.assert_allclose(np.subtract(other.gc, panda.gc), [0.0, ahead, 0.0], atol=3e-3)
    assert np.linalg.norm(np.subtract(other.ee_position, other.gc)) == pytest.approx(
        np.linalg.norm(np.subtract(panda.ee_position, panda.gc)), abs=1e-3
    )  # the same hand: the end effector sits as far from the GC


@pytest.mark.parametrize("robot", OTHERS)
def test_the_oracle_succeeds_on_a_verified_seed_of_each_robot(robot):
    env = VABenchEnv(EnvConfig(render=False, robot=robot))
    seed = eval_seeds("grasp_single_cube", robot)[0]
    env.reset("grasp_single_cube", seed)
    results = list(env.expert_steps())
    assert results[-1].success and all(r.planner_success for r in results), results[-1].feedback
    assert len(env.world.arms["right"].qpos) == embodiment(robot).dof + 2


def test_robot_manifests_are_their_own_and_say_why_when_short():
    for robot in OTHERS:
        for task in sorted(TASKS):  # every track: base, held-out transfer, long-horizon
            if not manifest_path(task, robot).exists():
                continue
            data = load_manifest(task, robot)
            assert data["robot"] == robot and data["demo_seed"] == load_manifest(task)["demo_seed"]
            assert (len(data["accepted"]) == 20) == (data["declared"] is None), (robot, task)


def _playable_on(robot: str, track: str) -> set[str]:
    """The screened tasks of a track the robot can do (a declared one has no accepted seed)."""
    return {t for t in tasks_of_track(track) if manifest_path(t, robot).exists() and eval_seeds(t, robot)}


def test_config_names_the_robot(monkeypatch):
    from tests.test_launch import composed, validate
    from vabench.envs import seeds

    assert validate("run_id=x", "robot=xarm7", "tasks=[grasp_single_cube]").condition.robot == "xarm7"
    assert validate("run_id=x").condition.robot == "panda"
    for robot, track in [(r, t) for r in OTHERS for t in Track]:  # tasks=all: the screened ones it can do
        if playable := _playable_on(robot, track):  # a declared one is left out
            assert set(validate("run_id=x", f"robot={robot}", f"track={track}").tasks) == playable
        else:  # the xArm7's basket: declared, so its one-task track has nothing to play
            with pytest.raises(ValueError, match="can play none of the tasks of this track"):
                validate("run_id=x", f"robot={robot}", f"track={track}")
    assert _playable_on(Robot.UR5, Track.TRANSFER) == set(tasks_of_track(Track.TRANSFER))  # all screened
    real = seeds.manifest_path  # a listed task not yet screened for the robot is refused, naming the command

    def unscreened(task, robot=Robot.PANDA, split=Split.EVAL):
        path = real(task, robot, split)
        return path.with_suffix(".missing") if robot == Robot.UR5 else path

    monkeypatch.setattr(seeds, "manifest_path", unscreened)
    with pytest.raises(ValueError, match="no seed manifest for 'grasp_single_cube_heldout' on ur5; run"):
        validate("run_id=x", "robot=ur5", "track=transfer", "tasks=[grasp_single_cube_heldout]")
    monkeypatch.undo()
    declared = r"'tasks': place_single_bottle_upright: xarm7 cannot do it \(vabench/envs/seed_manifests/xarm7/"
    with pytest.raises(ValueError, match=declared):  # none accepted: the upright placement is out of its reach
        validate("run_id=x", "robot=xarm7", "tasks=[place_single_bottle_upright]")
    assert composed("+experiment=embodiments", "run_id=x")["experiment"] == "embodiments"
    cfg = composed("run_id=x", "robot=kuka")
    with pytest.raises(ValueError, match="'robot': unknown robot 'kuka' choices: panda, ur5, xarm7"):
        from pathlib import Path

        from vabench.run.config.run import from_config

        from_config(cfg, Path("/tmp/vabench-test-run"))
    assert set(EMBODIMENTS) == set(Robot)


def test_a_run_folder_config_from_before_embodiments_is_the_panda(tmp_path):
    """A run info written before robot=NAME holds no ``robot`` key: verify and plan.calibrate
    rebuild its RunConfig, which must be the Panda's (it was refused: "'robot.name' ... got None")."""
    from tests.test_launch import composed
    from vabench.run.config.run import from_config

    cfg = composed("run_id=x", "tasks=[grasp_single_cube]")
    del cfg["robot"]
    assert from_config(cfg, tmp_path / "x", log=lambda *_: None).condition.robot == Robot.PANDA
    old = composed("run_id=x", "tasks=[grasp_single_cube]")  # and one from before robot was a plain key
    old["robot"] = {"name": "ur5"}
    assert from_config(old, tmp_path / "x", log=lambda *_: None).condition.robot == "ur5"


@pytest.mark.slow
@pytest.mark.parametrize("robot", OTHERS)
def test_the_oracle_succeeds_on_every_verified_seed(robot):
    env = VABenchEnv(EnvConfig(render=False, robot=robot))
    for task in sorted(TASKS):  # every track
        if not manifest_path(task, robot).exists():
            continue
        for seed in eval_seeds(task, robot):
            env.reset(task, seed)
            results = list(env.expert_steps())
            assert results[-1].success, (robot, task, seed, results[-1].feedback)


def test_screening_stops_at_the_cap_and_resumes_after_its_last_candidate(monkeypatch):
    """The cap bounds one screening; a capped task is declared short by the cap (with the count
    tried), and a resumed screening continues after the last candidate instead of starting over."""
    from vabench.envs import seeds

    visited = []

    def probe(env, task, seed):  # every third candidate fails; the loop's bookkeeping is under test
        visited.append(seed)
        return seeds.Verdict(seed, seed % 3 != 0, "ok" if seed % 3 else "planner failure at step 2: no path")

    monkeypatch.setattr(seeds, "probe", probe)
    accepted, rejected = seeds.screen(None, "lift_pot", strict=False, max_tries=6)
    assert len(accepted) + len(rejected) == 6 and visited == list(range(1000, 1006))
    why = seeds._why_short(accepted, rejected, 6)
    assert why == (
        "4 of 6 candidates accepted; rejected: planner failure (2); commonest (2): no path; "
        "stopped at the cap of 6 tries (resume with --resume)"
    )
    accepted, rejected = seeds.screen(None, "lift_pot", strict=False, max_tries=40, prior=(accepted, rejected))
    assert visited[6] == 1006 and len(accepted) == 20 and len(set(visited)) == len(visited)
    gave_up = seeds._why_short([], [{"seed": s, "reason": "unstable: x"} for s in range(30)], 40)
    assert gave_up == "0 of 30 candidates accepted; rejected: unstable (30); commonest (30): x"  # not the cap


def test_provenance_digests_the_seed_manifests_of_the_run_robot():
    """A run on another robot plays that robot's seeds, so its provenance names their manifests."""
    from tests.test_launch import validate
    from vabench.envs.seeds import MANIFEST_DIR
    from vabench.run.folder.provenance import digest_files
    from vabench.run.folder.state import run_manifest

    task = "grasp_single_cube"
    digests = {}
    for robot in Robot:
        digests[robot] = run_manifest(validate("run_id=x", f"robot={robot}", f"tasks=[{task}]"))["inputs"]
        assert digests[robot]["seed_manifests"] == {task: digest_files([manifest_path(task, robot)], MANIFEST_DIR)}
    assert len({d["seed_manifests"][task] for d in digests.values()}) == len(Robot)
