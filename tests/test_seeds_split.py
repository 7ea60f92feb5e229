"""The training split (issue 49): seeds screened like the evaluation manifests, from a pool that
shares no seed with any of them, drawn by Gym (``split="train"``), the launcher (``split=train``)
and the export of the expert's episodes, each of which records the split."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import vabench.gym.env
from tests.test_launch import validate
from tests.test_verify import run_folder
from vabench.analysis.load import load_runs, prepare
from vabench.analysis.tables import success_matrix
from vabench.core.condition import Condition
from vabench.core.vocab import TRAIN_SEEDS_PER_TASK, Robot, Split
from vabench.envs import EnvConfig, VABenchEnv
from vabench.envs.seeds import (
    DEMO_POOL,
    EVAL_POOL,
    HELD_OUT,
    MANIFEST_DIR,
    TRAIN_POOL,
    demo_seed,
    eval_seeds,
    held_out,
    load_manifest,
    manifest_path,
    probe,
    screen,
    split_seeds,
    train_seeds,
)
from vabench.envs.tasks import TASKS
from vabench.export.__main__ import export, export_oracle, main
from vabench.results.episodes import EpisodeSpec
from vabench.results.layout import RUN_INFO, RunInfo
from vabench.results.outcomes import OutcomeRow, read_rows, write_row
from vabench.run.config.run import ConfigError
from vabench.run.config.specs import expand
from vabench.verify import verify

TASK = "click_bell_right"  # the expert's shortest episode


def _on_disk(task: str) -> set[int]:
    """Read from the files themselves: every seed any evaluation manifest of ``task`` holds (any
    robot's, wherever it lies outside ``train/``) and every demonstration seed they name."""
    held = set()
    for path in MANIFEST_DIR.rglob(f"{task}.json"):
        if Split.TRAIN not in path.relative_to(MANIFEST_DIR).parts:
            data = json.loads(path.read_text())
            held |= {*data["accepted"], data["demo_seed"]}
    return held


TRAIN_MANIFESTS = [(r, t) for r in Robot for t in sorted(TASKS) if manifest_path(t, r, Split.TRAIN).exists()]


def test_the_pools_share_no_seed():
    train = set(range(TRAIN_POOL[0], TRAIN_POOL[1] + 1))
    assert not train & set(range(EVAL_POOL[0], EVAL_POOL[1] + 1))
    assert not train & set(range(DEMO_POOL[0], DEMO_POOL[1] + 1))


@pytest.mark.parametrize("task", sorted(TASKS))
def test_the_held_out_seeds_are_every_robots_evaluation_manifest_and_the_demo_seed(task):
    assert held_out(task) == _on_disk(task) and demo_seed(task) in held_out(task)
    assert {r for r in Robot if manifest_path(task, r).exists()} == set(Robot)  # every robot's was read


@pytest.mark.parametrize(("robot", "task"), TRAIN_MANIFESTS, ids=[f"{r}-{t}" for r, t in TRAIN_MANIFESTS])
def test_every_train_manifest_is_screened_and_disjoint_from_every_evaluation_manifest(robot, task):
    data = load_manifest(task, robot, Split.TRAIN)
    seeds = train_seeds(task, robot)
    assert data["split"] == Split.TRAIN and data["robot"] == robot and data["candidate_pool"] == list(TRAIN_POOL)
    assert len(seeds) == len(set(seeds)) and (len(seeds) == TRAIN_SEEDS_PER_TASK or data.get("declared"))
    assert all(TRAIN_POOL[0] <= s <= TRAIN_POOL[1] for s in seeds)
    assert not set(seeds) & _on_disk(task), f"{robot} {task}: a train seed is an evaluation or demonstration seed"
    tried = {*seeds, *(r["seed"] for r in data["rejected"])}
    assert tried == set(range(TRAIN_POOL[0], TRAIN_POOL[0] + len(tried))), "candidates are visited in order"
    assert split_seeds(task, robot, Split.TRAIN) == seeds and split_seeds(task, robot) == eval_seeds(task, robot)


def test_every_task_has_a_panda_train_manifest():
    assert {t for r, t in TRAIN_MANIFESTS if r == Robot.PANDA} == set(TASKS)


def test_the_screening_rejects_a_held_out_seed_unplayed():
    seed = sorted(held_out(TASK))[0]
    accepted, rejected = screen(None, TASK, pool=(seed, seed), n_accept=1, strict=False, held=held_out(TASK))
    assert (accepted, rejected) == ([], [{"seed": seed, "reason": HELD_OUT}])  # no env: never probed


def test_a_train_seed_is_solved_by_the_expert_as_the_screening_said():
    env = VABenchEnv(EnvConfig(render=False))
    try:
        verdict = probe(env, TASK, train_seeds(TASK)[-1])
    finally:
        env.close()
    assert verdict.ok, verdict.reason


def test_a_missing_train_manifest_names_the_command_that_makes_it():
    cannot = "put_everything_in_basket"  # the xarm7 cannot do it (its evaluation manifest's 'declared'): no train seeds
    assert not eval_seeds(cannot, Robot.XARM7)
    with pytest.raises(FileNotFoundError, match=f"--task {cannot} --robot xarm7 --split train --write"):
        train_seeds(cannot, Robot.XARM7)


def test_gym_trains_on_the_train_split_and_evaluates_on_the_manifests():
    train = vabench.gym.env.VABenchGymEnv(TASK, render="small", split="train")
    evaluation = vabench.gym.env.VABenchGymEnv(TASK, render="small")
    assert train.seeds == tuple(train_seeds(TASK)) and evaluation.seeds == tuple(eval_seeds(TASK))
    assert [train.scene_seed_for(i) for i in range(2)] == train_seeds(TASK)[:2]
    assert train.scene_seed_for(eval_seeds(TASK)[0]) in train.seeds  # an evaluation seed maps into the pool
    try:
        _, info = train.reset(seed=3)
        assert (info["scene_seed"], info["split"]) == (train_seeds(TASK)[3], "train")
    finally:
        train.close()
    train.unverified_seeds = True  # as unverified_seeds=True makes it
    with pytest.raises(ValueError, match="evaluation or demonstration scene"):
        train.scene_seed_for(eval_seeds(TASK)[0])
    with pytest.raises(
        ValueError, match="evaluation or demonstration scene"
    ):  # the xarm7's, though Gym plays the Panda
        train.scene_seed_for(min(set(eval_seeds(TASK, Robot.XARM7)) - set(eval_seeds(TASK))))
    with pytest.warns(UserWarning, match="not in the verified manifest"):
        assert train.scene_seed_for(TRAIN_POOL[1]) == TRAIN_POOL[1]
    with pytest.raises(ValueError, match="split must be one of"):
        vabench.gym.env.VABenchGymEnv(TASK, render="small", split="test")


def test_the_launcher_plays_the_splits_seeds_and_refuses_an_evaluation_seed_under_train():
    run = validate("tasks=[click_bell_right]", "seeds=3", "split=train")
    assert run.split == "train" and [s.seed for s in expand(run)] == train_seeds(TASK)[:3]
    default = validate("tasks=[click_bell_right]", "seeds=3")
    assert default.split == "eval" and [s.seed for s in expand(default)] == eval_seeds(TASK)[:3]
    with pytest.raises(ConfigError, match="'split': unknown split 'test' choices: eval, train"):
        validate("tasks=[click_bell_right]", "split=test")
    with pytest.raises(ConfigError, match=f"{eval_seeds(TASK)[0]} of {TASK} is an evaluation or demonstration seed"):
        validate("tasks=[click_bell_right]", f"seeds=[{eval_seeds(TASK)[0]}]", "split=train")
    xarm7 = min(set(eval_seeds(TASK, Robot.XARM7)) - set(eval_seeds(TASK)))  # another robot's scene: held out too
    with pytest.raises(ConfigError, match=f"{xarm7} of {TASK} is an evaluation or demonstration seed"):
        validate("tasks=[click_bell_right]", f"seeds=[{xarm7}]", "split=train")


@pytest.fixture(scope="module")
def train_run(tmp_path_factory):
    return run_folder(tmp_path_factory.mktemp("results"), "t", f"[{TASK}]", "split=train")


def test_a_train_split_run_records_its_split_plays_a_train_seed_and_verifies(train_run):
    info = RunInfo.read(train_run)
    rows = read_rows(train_run / "outcomes")
    assert info.split == "train" and list(rows["seed"]) == train_seeds(TASK)[:1] and rows["success"].all()
    assert list(rows["split"]) == ["train"] and rows["condition"][0].endswith("| split train")
    assert "/split_train/" in rows["record"][0]  # its own folder: never resumed as an evaluation episode
    digest = info.provenance["inputs"]["seed_manifests"][TASK]
    assert digest and verify(train_run).ok


def test_a_train_split_runs_rows_from_before_the_column_read_as_train(train_run, tmp_path):
    """Schema 12 rows named no split; a split=train run's must not read as scored rows."""
    (tmp_path / "outcomes").mkdir()
    (tmp_path / RUN_INFO).write_text((train_run / RUN_INFO).read_text())
    for k, path in enumerate(sorted((train_run / "outcomes").rglob("*.parquet"))):
        pq.write_table(pq.read_table(path).drop_columns(["split"]), tmp_path / "outcomes" / f"old{k}.parquet")
    rows = load_runs(tmp_path)
    assert len(rows) >= 1 and set(rows["split"]) == {"train"}


def test_an_export_records_the_split_of_a_run_and_of_the_experts_train_episodes(train_run, tmp_path):
    export(train_run, tmp_path / "run", progress=False)
    done = export_oracle(tmp_path / "oracle", (TASK,), Split.TRAIN, seeds=1, progress=False)
    assert done["episodes"] == 1
    for name in ("run", "oracle"):
        info = json.loads((tmp_path / name / "meta" / "info.json").read_text())
        episodes = pd.read_parquet(tmp_path / name / "meta" / "episodes")
        assert info["vabench"]["split"] == "train" and list(episodes["split"]) == ["train"]
        assert list(episodes["seed"]) == train_seeds(TASK)[:1] and episodes["success"].all()
    oracle = pd.read_parquet(tmp_path / "oracle" / "meta" / "episodes").iloc[0]
    assert (oracle["condition"], oracle["record"]) == ("oracle", f"small/{TASK}/{train_seeds(TASK)[0]}")


def test_the_oracle_export_command_says_what_to_fix_in_one_line(tmp_path, capsys):
    assert main(["lerobot", "--oracle", "--out", str(tmp_path / "x")]) == 2
    assert main(["lerobot", "--out", str(tmp_path / "y")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and "--oracle needs --tasks" in lines[0] and "or --oracle with --tasks" in lines[1]


def test_rows_record_their_split_older_rows_read_as_eval_and_the_analysis_never_pools_the_two(tmp_path):
    scored = Condition("oracle")
    training = scored.but(split="train")
    assert training.label == "oracle | active | summary none | split train" and training.folders() == ("split_train",)
    assert Condition.of_row(training.columns()) == training
    done = dict(status="ok", success=True, end_reason="success", steps=3)
    for name, cond, seed in (("eval", scored, eval_seeds(TASK)[0]), ("train", training, train_seeds(TASK)[0])):
        write_row(tmp_path / f"{name}.parquet", OutcomeRow(**EpisodeSpec(cond, TASK, seed).identity(), **done))
    old = OutcomeRow(**EpisodeSpec(scored, TASK, eval_seeds(TASK)[1]).identity(), **done).row()
    del old["split"]  # a row written before the column (schema 12): an evaluation episode
    pq.write_table(pa.Table.from_pylist([old]), tmp_path / "old.parquet")
    p, _ = prepare(load_runs(tmp_path))
    assert sorted(p["split"]) == ["eval", "eval", "train"]
    m = success_matrix(p)
    assert sorted(set(m["condition"])) == sorted([scored.label, training.label])
    assert dict(zip(m["condition"], m["n"], strict=True)) == {scored.label: 2, training.label: 1}
