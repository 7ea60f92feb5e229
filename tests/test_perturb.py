"""Visual perturbations (issue 28): the look changes, the physics does not. Under every perturbation
the oracle's trajectory is bitwise the unperturbed one, so every manifest seed stays valid; the
instruction's named colours survive; distractors keep clear of the task; the config is checked and
recorded in the row and the condition."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from vabench.core.condition import Condition
from vabench.core.vocab import Perturbation, Track
from vabench.envs import EnvConfig, VABenchEnv
from vabench.envs.perturb import PerturbationConfig, every_level, parse
from vabench.envs.perturb import scene as look
from vabench.envs.render import RENDER_PRESETS
from vabench.envs.seeds import eval_seeds
from vabench.envs.tasks import tasks_of_track
from vabench.results.episodes import EpisodeSpec
from vabench.results.outcomes import OutcomeRow

FAST_CASES = [PerturbationConfig.of(k, 3) for k in Perturbation if k != Perturbation.NONE]


def _env(p: PerturbationConfig) -> VABenchEnv:
    return VABenchEnv(EnvConfig(preset=RENDER_PRESETS["small"], perturbation=p))


def _oracle(task: str, seed: int, p: PerturbationConfig) -> tuple[bool, np.ndarray, np.ndarray]:
    """Success, every body pose and both arms' joints after the scripted expert (full precision)."""
    env = _env(p)
    try:
        env.reset(task, seed)
        success = False
        for result in env.expert_steps():
            success = result.success
        poses = np.array([np.concatenate([b.entity.pose.p, b.entity.pose.q]) for b in env.world.bodies.values()])
        joints = np.concatenate([a.qpos for a in env.world.arms.values()])
        return success, poses, joints
    finally:
        env.close()


def _unchanged(task: str, seed: int, cases) -> None:
    ok, poses, joints = _oracle(task, seed, PerturbationConfig())
    assert ok, f"the unperturbed oracle fails {task} seed {seed}"
    for p in cases:
        got = _oracle(task, seed, p)
        assert got[0], f"oracle fails {task} seed {seed} under {p.label}"
        np.testing.assert_array_equal(got[1], poses, err_msg=f"{task} {seed} {p.label}: bodies moved differently")
        np.testing.assert_array_equal(got[2], joints, err_msg=f"{task} {seed} {p.label}: arms moved differently")


@pytest.mark.parametrize("task", ["grasp_single_cube"])
def test_oracle_trajectory_is_bitwise_unchanged_under_every_kind(task):
    _unchanged(task, eval_seeds(task)[0], FAST_CASES)


@pytest.mark.slow
@pytest.mark.parametrize("task", tasks_of_track(Track.BASE))
def test_oracle_unchanged_under_every_level_on_every_base_task(task):
    _unchanged(task, eval_seeds(task)[0], every_level())


def test_images_change_and_are_seeded():
    base = _env(PerturbationConfig()).reset("place_cube_in_bowl", 1000).images["active"]
    for p in FAST_CASES:
        a = _env(p).reset("place_cube_in_bowl", 1000).images["active"]
        b = _env(p).reset("place_cube_in_bowl", 1000).images["active"]
        np.testing.assert_array_equal(a, b, err_msg=f"{p.label} is not reproducible")
        changed = (np.abs(a.astype(int) - base).max(axis=2) > 12).mean()  # a fraction of the pixels
        assert changed > 0.002, f"{p.label} leaves the image as it was ({changed:.4f} of the pixels changed)"


def test_named_colours_are_kept_and_others_change():
    env = _env(PerturbationConfig.of(Perturbation.COLOUR, 3))
    env.reset("place_cube_in_bowl", 1000)  # "... the red cube ... inside the bowl": the bowl may change
    red = [look._hsv(s.material.base_color) for s in look._shapes(env.world.bodies["cube"].entity)]
    assert all(h < 5 or h > 355 for h, _, _ in red), red
    bowl = [look._hsv(s.material.base_color)[0] for s in look._shapes(env.world.bodies["bowl"].entity)]
    assert not any(195 < h < 245 for h in bowl[:1]), f"the bowl kept its blue: {bowl[:1]}"
    assert all(not look._guarded(h, [0.0]) or abs(h - 25) < 5 for h in bowl), "a recoloured part turned red"


def test_distractors_keep_clear_of_bodies_and_robot_paths():
    for seed in eval_seeds("place_cube_in_bowl")[:3]:
        env = _env(PerturbationConfig.of(Perturbation.DISTRACTORS, 3))
        env.reset("place_cube_in_bowl", seed)
        extra = [e for e in env.world.scene.get_entities() if e.name.startswith("distractor")]
        assert len(extra) == 6
        bodies = look._body_xy(env.world)
        for e in extra:
            assert e.find_component_by_type(__import__("sapien").physx.PhysxRigidBaseComponent) is None
            xy = np.asarray(e.pose.p[:2])
            assert all(np.linalg.norm(xy - c) >= r + look.DISTRACTOR_CLEARANCE - 1e-9 for c, r in bodies)


def test_config_checks_and_labels():
    assert parse("lighting:2") == PerturbationConfig.of("lighting", 2) and parse("none").label == "none"
    assert (parse("blur:3").kind, parse("blur:3").level) == ("blur", 3)
    with pytest.raises(ValueError, match="unknown perturbation kind 'fog'"):
        PerturbationConfig("fog:1")
    for bad in ("blur:4", "blur", "blur:x"):
        with pytest.raises(ValueError, match="needs a level: perturbation=<kind>:<level>"):
            PerturbationConfig(bad)
    spec = EpisodeSpec(Condition("m", "active", "none"), "grasp_single_cube", 1000)
    assert spec.condition.label == "m | active | summary none"
    other = EpisodeSpec(spec.condition.but(perturbation="blur:2", robot="ur5"), "grasp_single_cube", 1000)
    assert other.condition.label == "m | active | summary none | robot ur5 | perturbation blur:2"
    assert "robot_ur5/perturbation_blur_2/" in other.key
    assert OutcomeRow(**other.identity()).row()["perturbation"] == "blur:2"


def test_the_robustness_experiment_sweeps_none_and_every_level():
    from tests.test_launch import composed, validate

    sweep = composed("+experiment=robustness", "run_id=x")  # compose keeps the sweep list as its string
    assert sweep["experiment"] == "robustness"
    conf = Path(__file__).parents[1] / "conf/experiment/robustness.yaml"
    listed = yaml.safe_load(conf.read_text())["hydra"]["sweeper"]["params"]["perturbation"].split(",")
    assert listed == ["none"] + [p.name for p in every_level()]
    run = validate("+experiment=robustness", "run_id=x", "perturbation=texture:3")
    assert run.condition.perturbation == "texture:3" and run.render == "paper"
    with pytest.raises(ValueError, match="'perturbation': unknown perturbation kind 'fog'"):
        validate("run_id=x", "perturbation=fog:1")


def test_the_robustness_table_pairs_each_episode_with_its_unperturbed_twin():
    from vabench.analysis import robustness

    rows = []
    for name, wins in (("none", [1, 1, 1, 0]), ("blur:3", [1, 0, 0, 1])):
        for seed, y in zip(range(1000, 1004), wins, strict=True):
            rows.append(
                dict(
                    model="m", protocol="active", summary_source="none", track="base", task="grasp_single_cube",
                    arms="single", seed=seed, run_index=1, status="ok", success=bool(y), end_reason="stop",
                    perturbation=name, experiment="robustness",
                )
            )  # fmt: skip
    t = robustness(pd.DataFrame(rows)).set_index("perturbation")
    assert t.loc["none", "k"] == 3 and t.loc["blur:3", "k"] == 2
    assert (t.loc["blur:3", "pairs"], t.loc["blur:3", "lost"], t.loc["blur:3", "gained"]) == (4, 2, 1)
    assert t.loc["blur:3", "delta_pp"] == pytest.approx(-25.0)
