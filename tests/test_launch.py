"""Every experiment config composes and validates (or fails with a message naming the key)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from vabench.run.config.run import ConfigError, from_config

ROOT = Path(__file__).resolve().parents[1]
CONF = str(ROOT / "conf")
EXPERIMENTS = sorted(p.stem for p in Path(CONF, "experiment").glob("*.yaml"))


def composed(*overrides: str) -> dict:
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose(config_name="config", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)


def validate(*overrides: str):
    return from_config(composed(*overrides), Path("/tmp/vabench-test-run"))


def test_the_paper_studies_all_have_an_experiment():
    assert set(EXPERIMENTS) >= {
        "smoke",
        "main",
        "passive_ablation",
        "summary_sources",
        "transfer",
        "long_horizon",
        "local_models",
    }


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_composes(name):
    cfg = composed(f"+experiment={name}", "run_id=x")
    assert cfg["experiment"] == name and cfg["protocols"] and cfg["track"] in ("base", "transfer", "long_horizon")


def test_smoke_validates_with_the_oracle_on_two_tasks():
    run = validate("+experiment=smoke", "run_id=r1")
    assert (run.model.id, run.tasks, run.seeds, run.options.runs, run.protocols) == (
        "oracle",
        ("grasp_single_cube", "place_cube_in_bowl"),
        2,
        1,
        ("active",),
    )
    assert run.summary_root == Path.cwd() / "results" / "_summaries" / "fast"  # per results_dir and render preset


@pytest.mark.parametrize("name", ["main", "passive_ablation", "local_models"])
def test_base_track_experiments_cover_the_fourteen_families(name):
    from vabench.envs.tasks import demo_tasks

    run = validate(f"+experiment={name}", "run_id=x")
    assert run.track == "base" and len(run.tasks) == 14 and set(run.tasks) == set(demo_tasks())
    assert {"place_shoe", "handover_horizontal_block", "lift_pot"} <= set(run.tasks)


def test_long_horizon_is_the_basket_track_with_own_summaries():
    run = validate("+experiment=long_horizon", "run_id=x", "model=openai")
    assert (run.track, run.tasks, str(run.summary)) == ("long_horizon", ("put_everything_in_basket",), "own")
    offline = validate("+experiment=long_horizon", "run_id=x")  # the oracle reads no summary, whatever was asked
    assert str(offline.summary) == "none" and offline.resolved["summary"]["mode"] == "own"


def test_transfer_covers_the_seven_held_out_variants():
    run = validate("+experiment=transfer", "run_id=x")
    assert run.track == "transfer" and len(run.tasks) == 7 and all(t.endswith("_heldout") for t in run.tasks)


def test_passive_ablation_runs_both_protocols_on_the_same_seeds():
    run = validate("+experiment=passive_ablation", "tasks=[grasp_single_cube]", "seeds=3", "model=openai")
    assert run.protocols == ("active", "passive") and str(run.summary) == "own"


def test_summary_modes_compose_for_multirun_grids():
    assert str(validate("+experiment=summary_sources", "summary=none", "tasks=[place_cube_in_bowl]").summary) == "none"
    run = validate("summary=shared", "summary.source=openai/gpt-4o", "tasks=[place_cube_in_bowl]", "model=openai")
    assert (run.summary.kind, run.summary.source) == ("shared", "openai/gpt-4o")
    with pytest.raises(Exception, match="source"):  # ??? left unset
        from_config(composed("summary=shared"), Path("/tmp/x"))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["seeds=-3"], "'seeds' must be >= 1"),
        (["seeds=[1000,-1]"], "'seeds\\[\\]' must be >= 0"),
        (["runs=0"], "'runs' must be >= 1"),
        (["tasks=[grasp_single_cube,nope]"], "'tasks': unknown task 'nope' choices: beat_block_hammer_right"),
        (["tasks=[grasp_single_cub]"], "'tasks': unknown task 'grasp_single_cub'; did you mean 'grasp_single_cube'\\?"),
        (["robot=ur6"], "'robot': unknown robot 'ur6'; did you mean 'ur5'\\? choices: panda, ur5, xarm7"),
        (["intervention=object_pose"], "'intervention': unknown intervention 'object_pose'; did you mean"),
        (["perturbation=blurr:2"], "'perturbation': unknown perturbation kind 'blurr'; did you mean 'blur'"),
        (["run_id=../escape"], "'run_id'"),
        (["ray.env_actors=0"], "'ray.env_actors' must be >= 1"),
        (["+ray.gpus=1"], "unknown key\\(s\\) ray.gpus"),
        (["ray.hang_s=0"], "'ray.hang_s' must be > 0"),
        (["ray.place_timeout_s=soon"], "'ray.place_timeout_s' must be a number"),
        (["harness.max_images=0"], "'harness.max_images' must be >= 1"),
        (["+harness.colour=red"], "unknown key\\(s\\) harness.colour; allowed: context_tokens"),
        (["+harness.max_image=3"], "harness.max_image \\(did you mean 'max_images'\\?\\)"),
        (["harness.max_repairs=two"], "'harness.max_repairs' must be an integer, got 'two'"),
        (["recording.fps=0"], "'recording.fps' must be in"),
        (["ray.actor_cpus=0"], "'ray.actor_cpus' must be > 0"),
        (["model.temperature=0.5", "model=anthropic"], "'model.temperature' = 0.5: with extended thinking"),
        (["model.id=gpt-4o"], "LiteLLM provider string"),
        (["+model.colour=red"], "unknown key\\(s\\) model.colour; allowed: api_base"),
        (["model.max_concurrency=0"], "'model.max_concurrency' must be >= 1"),
        (["+model.extra.api_key=x"], "looks like a secret"),
        (["+model.extra.timeout=3", "model.id=openai/x"], "'model': ModelConfig.extra must not set 'timeout'"),
        (["tasks=[grasp_single_cube_heldout]"], "grasp_single_cube_heldout \\(track transfer\\) not on track base"),
        (["protocols=[active,active]"], "lists a protocol twice"),
        (["+model.api_key=sk-123"], "looks like a secret"),
        (["render=huge"], "'render': unknown render preset 'huge' choices: fast, paper, small"),
    ],
)
def test_config_errors_name_the_key(overrides, message):
    with pytest.raises(ConfigError, match=message):
        validate("+experiment=smoke", *overrides)


def test_replay_needs_a_record():
    with pytest.raises(Exception, match="record"):
        validate("model=replay")
    cfg = composed("model=replay", "model.extra.record=''", "tasks=[grasp_single_cube]")
    with pytest.raises(ConfigError, match="model.extra.record"):
        from_config(cfg, Path("/tmp/x"))


def test_model_defaults_live_once_in_the_model_config_dataclass():
    """Every conf/model/*.yaml composes onto ModelConfig's defaults; a key it does not set is the
    dataclass default, and any key can be overridden without a '+'."""
    import dataclasses

    from vabench.agents.chat.model import ModelConfig

    defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig) if f.default is not dataclasses.MISSING}
    for name in sorted(p.stem for p in Path(CONF, "model").glob("*.yaml")):
        model = composed(f"model={name}", "model.extra.record=x.jsonl" if name == "replay" else "seeds=1")["model"]
        assert set(model) == {"id"} | set(defaults) | {"extra"}, name
    for path in Path(CONF, "model").glob("*.yaml"):  # a template states only what differs
        own = OmegaConf.to_container(OmegaConf.load(path))
        repeated = {k: v for k, v in own.items() if k in defaults and defaults[k] == v}
        extra = ["_policy"] if path.stem == "policy" else []  # PolicyConfig's model.extra defaults
        assert own["defaults"] == ["_defaults", *extra, "_self_"] and repeated == {}, path.name
    openai = composed("model=openai", "model.timeout_s=30")["model"]
    assert openai["timeout_s"] == 30 and openai["max_tokens"] == defaults["max_tokens"] == 4096
    run = validate("+experiment=smoke", "model=openai", "model.id=openai/gpt-4o-mini")
    assert (run.model.id, run.condition.model, run.privileged, run.model.max_concurrency) == (
        "openai/gpt-4o-mini",
        "openai/gpt-4o-mini",
        False,
        defaults["max_concurrency"],
    )
    assert validate("+experiment=smoke").privileged  # the oracle reads simulator state
    hand_built = composed("+experiment=smoke")
    hand_built["model"] = {"id": "random"}  # a config built without model/_defaults
    assert from_config(hand_built, Path("/tmp/x")).model == ModelConfig(id="random")


def test_tasks_all_means_every_registered_task_of_the_track():
    from vabench.envs.tasks import tasks_of_track

    for track in ("base", "transfer", "long_horizon"):
        assert validate(f"track={track}", "run_id=x").tasks == tasks_of_track(track)


def test_ray_address_none_runs_in_process():
    assert validate("+experiment=smoke", "ray.address=none").ray.in_process
    assert validate("+experiment=smoke", "ray.address=null").ray.in_process
    assert not validate("+experiment=smoke").ray.in_process


def test_unknown_model_group_is_refused_by_hydra():
    with pytest.raises(Exception, match="model"):
        composed("model=gpt5")


def test_a_run_begun_before_stores_were_shared_keeps_its_own_summaries(tmp_path):
    (tmp_path / "old" / "_summaries").mkdir(parents=True)
    cfg = composed("+experiment=smoke", f"results_dir={tmp_path}", "run_id=old")
    assert from_config(cfg, tmp_path / "old").summary_root == (tmp_path / "old" / "_summaries")
    fresh = composed("+experiment=smoke", f"results_dir={tmp_path}", "run_id=new")
    assert from_config(fresh, tmp_path / "new").summary_root == tmp_path / "_summaries" / "fast"


def test_the_paper_study_sweeps_every_condition_base_runs_first_side_by_side():
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose(config_name="config", overrides=["+study=paper"], return_hydra_config=True)
    sweep = cfg.hydra.sweeper.params["+experiment"].split(",")
    assert sweep[0] == "main" and set(sweep) == {"main", "passive_ablation", "transfer", "long_horizon"}
    assert cfg.hydra.launcher._target_.endswith("JoblibLauncher") and cfg.hydra.mode.name == "MULTIRUN"
    for name in sweep:  # each condition validates on its own
        assert validate(f"+experiment={name}", "model=oracle").experiment == name


def test_the_words_users_type_are_condition_keys():
    """intervention=, perturbation=, robot=, render= and observation= are plain keys of the one
    condition; intervention=expert_summary is the summary source expert; a view intervention keeps
    the protocol it changes."""
    run = validate("model=posetext", "intervention=object_poses", "perturbation=blur:2", "robot=ur5", "seeds=1")
    c = run.condition
    assert (c.intervention, c.perturbation, c.robot, c.render) == ("object_poses", "blur:2", "ur5", "paper")
    assert c.label == "posetext | active | summary none | intervention object_poses | robot ur5 | perturbation blur:2"
    expert = validate("model=openai", "intervention=expert_summary", "tasks=[grasp_single_cube]")
    assert (str(expert.summary), expert.condition.interventions) == ("expert", "expert_summary")
    said = []
    views = from_config(composed("protocol=both", "intervention=views_1", "model=openai"), Path("/x"), said.append)
    assert views.protocols == ("passive",) and said == [
        "intervention=views_1 changes the passive observation only: protocol passive"
    ]


def test_the_words_users_type_work_on_the_command_line(tmp_path):
    """Through the launcher itself (plan=true: composed, validated, planned, nothing made)."""
    import subprocess
    import sys

    args = ["model=posetext", "intervention=object_poses", "perturbation=blur:2", "robot=ur5", "plan=true"]
    args += ["tasks=[grasp_single_cube]", "seeds=1", f"results_dir={tmp_path}/r"]
    done = subprocess.run([sys.executable, "-m", "vabench.launch", *args], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (
        "posetext | active | summary none | intervention object_poses | robot ur5 | perturbation blur:2" in done.stdout
    )
    assert not (tmp_path / "r").exists()
