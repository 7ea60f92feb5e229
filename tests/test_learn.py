"""The learned baseline (docs/learn.md): an export of oracle episodes becomes samples in the served
policy's terms, a few training steps write a checkpoint, and ``serve_policy`` serves it to the
policy agent over a real websocket for a real episode. The ``slow`` test runs the whole loop from
the command line: oracle run -> export -> train -> serve -> launcher on a held-out seed -> analysis."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from tests.test_policy import ENV, launch, policy, small_env
from tests.test_verify import run_folder
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.kinds import make_model
from vabench.agents.models.policy_actions import vectors_of
from vabench.core.errors import VabenchError
from vabench.envs.seeds import eval_seeds
from vabench.export.__main__ import export
from vabench.launch import Exit
from vabench.learn.data import DatasetError, chunks, held_out, prompt_features, read_export
from vabench.learn.model import NetConfig, choices_of, decode, loss_of
from vabench.learn.policy import LearnedPolicy
from vabench.learn.train import FORMAT, TrainConfig, train
from vabench.results.outcomes import read_rows
from vabench.results.recordfile import read_events
from vabench.serve_policy import PolicyServer, checkpoint

ROOT = Path(__file__).resolve().parents[1]
TASK = "grasp_single_cube"
TINY = NetConfig(width=48, height=36, channels=8, keypoints=4, hidden=32, horizon=3)


def train_bc():
    """experiments/train_bc.py as a module (experiments/ is no package)."""
    spec = importlib.util.spec_from_file_location("train_bc", ROOT / "experiments" / "train_bc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Path]:
    """The oracle on the task's first manifest seed (small images, in process), exported."""
    results = tmp_path_factory.mktemp("learn")
    run = run_folder(results, "oracle", f"[{TASK}]")
    export(run, results / "ds", "vabench/learn-test", progress=False)
    return run, results / "ds"


@pytest.fixture(scope="module")
def trained(exported, tmp_path_factory) -> tuple[Path, dict, list[str]]:
    lines: list[str] = []
    out = tmp_path_factory.mktemp("ckpt") / "bc.pt"
    meta = train(exported[1], out, net_cfg=TINY, cfg=TrainConfig(steps=5, batch=4, log_every=1), log=lines.append)
    return out, meta, lines


def test_the_samples_are_the_oracles_commands_as_the_agents_vectors(exported):
    run, ds = exported
    samples = read_export(ds, TINY.horizon, (TINY.width, TINY.height))
    record = samples.episodes.iloc[0]["record"]
    commands = [e["payload"] for e in read_events(run / record) if e["type"] == "action" and e["kind"] == "robot"]
    n = len(commands)
    assert len(samples) == n and samples.images.shape == (n, 36, 48, 3) and samples.images.dtype == np.uint8
    np.testing.assert_allclose(samples.targets[:, 0], vectors_of(commands, ("right",)), atol=1e-6)
    np.testing.assert_array_equal(samples.targets[:-1, 1], samples.targets[1:, 0])  # the chunk looks ahead
    assert samples.mask[-1].tolist() == [True, False, False] and samples.mask[:-2].all()
    assert samples.states.shape == (n, 11) and samples.states[0, 10] == 0.0  # the gripper starts open
    np.testing.assert_allclose(np.linalg.norm(samples.states[:, 3:7], axis=1), 1.0, atol=1e-3)  # the quaternion
    assert samples.prompts[0] == "Use the right arm to grasp the red cube and lift it off the table."


def test_chunks_and_prompt_features():
    vectors = np.arange(14, dtype=float).reshape(2, 7)
    out, mask = chunks(vectors, 3)
    assert out[0, 1].tolist() == vectors[1].tolist() and not out[1, 1].any()
    assert mask.tolist() == [[True, True, False], [True, False, False]]
    a, b = prompt_features("Grasp the red cube.", 64), prompt_features("grasp the red cube", 64)
    assert np.array_equal(a, b) and np.isclose(np.linalg.norm(a), 1.0)  # case and punctuation aside, the words
    assert not np.array_equal(a, prompt_features("click the bell", 64))


def test_the_head_names_one_axis_per_command_as_the_expert_does():
    scale = torch.tensor([0.05, 0.05, 0.05, 0.5, 0.5, 0.5])
    targets = torch.tensor([[0, 0, -0.1, 0, 0, 0, 0.0], [0, 0, 0, 0, 0, 0, 1.0], [0, 0, 0, np.radians(-30), 0, 0, 1]])
    assert choices_of(targets[:, :6] / scale).tolist() == [2, 6, 3]  # z, the gripper alone, rx
    out = torch.zeros(3, 14)
    out[0, 2], out[0, 7 + 2], out[0, 7 + 0], out[0, 13] = 5.0, -2.0, 1.0, -9.0  # z (x's magnitude is ignored)
    out[1, 6], out[1, 13] = 5.0, 9.0
    out[2, 3], out[2, 7 + 3], out[2, 13] = 5.0, np.radians(-30) / 0.5, 9.0
    np.testing.assert_allclose(decode(out, scale).numpy(), targets.numpy(), atol=1e-3)
    mask = torch.ones(1, 3, dtype=torch.bool)
    right = loss_of(out[None] * torch.tensor([4.0] * 7 + [1.0] * 7), targets[None], mask, scale)
    wrong = loss_of(out[None].roll(1, dims=1), targets[None], mask, scale)
    assert right < 0.05 < wrong


def test_training_writes_a_checkpoint_torch_loads_without_pickle(trained, exported):
    out, meta, lines = trained
    blob = torch.load(out, weights_only=True)  # plain tensors and values only
    assert blob["format"] == FORMAT and blob["net"] == TINY.asdict()
    assert meta["tasks"] == [TASK] and meta["episodes"] == [[TASK, eval_seeds(TASK)[0]]]
    assert meta["samples"] == blob["meta"]["samples"] > 0 and meta["parameters"] > 0 and meta["checkpoint_mb"] > 0
    assert lines[0].startswith(f"{meta['samples']} samples from 1 episodes") and lines[-1].startswith("step 5/5: loss")


def test_the_served_checkpoint_drives_the_policy_agent_for_an_episode(trained, tmp_path):
    served = checkpoint(trained[0])
    received = []
    infer_batch = served.infer_batch  # what the server's batcher calls
    served.infer_batch = lambda batch: received.extend(batch) or infer_batch(batch)
    server = PolicyServer(served, port=0).start()
    try:
        env = small_env()
        agent = make_model(policy(f"ws://127.0.0.1:{server.port}"))
        episode = Episode.of(TASK, eval_seeds(TASK)[-1], env=env, budget_scale=0.1)  # 5 steps
        row = run_episode(env, agent, episode, tmp_path / "ep")
        env.close()
    finally:
        server.shutdown()
    # the budget is the condition's: its own column, never in the model's name
    assert (row.status, row.model, row.budget, row.budget_scale) == ("ok", "policy", 5, 0.1)
    assert 1 <= row.model_calls <= row.steps <= 5
    assert row.model_calls == len(received) and received[0]["observation/state"].shape == (11,)
    replies = [e for e in read_events(tmp_path / "ep" / "events.jsonl") if e["type"] == "action"]
    assert replies and all(e["reason"].startswith("policy: inference") for e in replies)


def test_a_batch_is_one_forward_pass_with_each_observations_own_answer(trained):
    """serve_policy's batching window hands the checkpoint several clients' observations at once:
    one forward pass, the same answers as one at a time; its metadata names the seeds it was
    trained on (the launcher warns when a run evaluates them) and the one image it reads (the
    client sends no other)."""
    served = checkpoint(trained[0], horizon=3)
    rng = np.random.default_rng(0)
    batch = [
        {
            "observation/image": rng.integers(0, 255, (240, 320, 3), dtype=np.uint8),
            "observation/state": rng.normal(size=11).astype(np.float32),
            "prompt": prompt,
        }
        for prompt in ("grasp the red cube", "put the cube in the bowl", "grasp the red cube")
    ]
    passes = []
    served.net.register_forward_hook(lambda *_: passes.append(1))
    together = served.infer_batch(batch)
    assert len(passes) == 1 and len(together) == 3
    for obs, answer in zip(batch, together, strict=True):
        assert np.allclose(answer["actions"], served.infer(obs)["actions"], atol=1e-5)
    assert answer["actions"].shape == (3, 7) and not np.allclose(together[0]["actions"], together[1]["actions"])
    assert served.metadata["trained_on"] == {TASK: [eval_seeds(TASK)[0]]}
    assert served.metadata["images"] == ["observation/image"]


def test_a_file_that_is_not_a_checkpoint_is_one_line(tmp_path):
    with pytest.raises(VabenchError, match="no such checkpoint; train one with python experiments/train_bc.py"):
        checkpoint(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(VabenchError, match=r"junk.pt: not a readable checkpoint \(UnpicklingError\)"):
        checkpoint(tmp_path / "junk.pt")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(VabenchError, match=f"other.pt: not a {FORMAT} checkpoint"):
        checkpoint(tmp_path / "other.pt")
    torch.save({"format": FORMAT, "net": TINY.asdict(), "state_dict": {"w": torch.zeros(2)}}, tmp_path / "old.pt")
    with pytest.raises(VabenchError, match="old.pt: its network is not this trainer's; retrain it"):
        checkpoint(tmp_path / "old.pt")


def test_train_bc_refuses_what_is_not_an_export_in_one_line(tmp_path, capsys):
    assert train_bc().main([str(tmp_path), "--out", str(tmp_path / "bc.pt")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"{tmp_path}: not a LeRobot export (no meta/info.json); make one with " \
                  "python -m vabench.export lerobot RUN --out DIR"  # fmt: skip


def test_the_validation_split_is_each_tasks_highest_successful_seeds():
    episodes = pd.DataFrame(
        {
            "task": ["a", "a", "a", "a", "b", "b", "b"],
            "seed": [100003, 100001, 100002, 100009, 100005, 100004, 100006],
            "success": [True, True, True, False, True, True, True],  # a failed episode trains nothing
        }
    )
    assert held_out(episodes, 1) == {("a", 100003), ("b", 100006)}
    assert held_out(episodes, 2) == {("a", 100002), ("a", 100003), ("b", 100005), ("b", 100006)}
    assert held_out(episodes, 0) == set()
    with pytest.raises(DatasetError, match="a: 3 successful episode.s., none left to train on after holding out 3"):
        held_out(episodes, 3)


def test_a_held_out_episode_is_read_apart_and_never_trained_on(exported, tmp_path, capsys):
    ds = exported[1]
    pair = (TASK, eval_seeds(TASK)[0])
    size = (TINY.width, TINY.height)
    assert len(read_export(ds, TINY.horizon, size, only={pair})) == len(read_export(ds, TINY.horizon, size)) > 0
    with pytest.raises(DatasetError, match="no successful episode"):
        read_export(ds, TINY.horizon, size, without={pair})
    assert train_bc().main([str(ds), "--out", str(tmp_path / "bc.pt"), "--hold-out", "1"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"{TASK}: 1 successful episode(s), none left to train on after holding out 1"
    )


def test_the_error_figures_compare_the_policys_first_command_with_the_oracles(trained, exported):
    spec = importlib.util.spec_from_file_location("bc_errors", ROOT / "benchmarks" / "bc_errors.py")
    bc_errors = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bc_errors)
    policy = LearnedPolicy(trained[0])
    out = bc_errors.figures(policy, exported[1], None)
    samples = read_export(exported[1], TINY.horizon, (TINY.width, TINY.height))
    assert out["frames"] == len(samples) and out["episodes"] == 1
    assert 0.0 <= out["axis_choice_agreement"] <= 1.0 and 0.0 <= out["gripper_agreement"] <= 1.0
    moves = samples.targets[:, 0, :6]
    assert sum(row["frames"] for row in out["per_axis"].values()) == int((np.abs(moves).sum(axis=1) > 0).sum())
    z = np.abs(moves[np.argmax(np.abs(moves) / policy.motion_scale.numpy(), axis=1) == 2, 2]).mean() * 1000
    assert out["per_axis"]["z"]["unit"] == "mm" and np.isclose(
        out["per_axis"]["z"]["oracle_mean_magnitude"], z, rtol=1e-3
    )


def test_torch_is_imported_by_the_learn_package_only():
    modules = "vabench.serve_policy, vabench.agents.models.policy, vabench.learn.data"
    probe = f"import sys, {modules}; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "False", done.stderr[-2000:]


# -- the whole loop, from the command line -----------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(*cmd: str) -> subprocess.CompletedProcess:
    env = {**ENV, "PYTHONPATH": str(ROOT)}  # experiments/train_bc.py imports this checkout's vabench
    return subprocess.run([sys.executable, *cmd], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)


@pytest.mark.slow
def test_export_train_serve_and_evaluate_on_a_held_out_seed(tmp_path):
    seeds = eval_seeds(TASK)
    done = launch(tmp_path, "model=oracle", f"tasks=[{TASK}]", f"seeds=[{seeds[0]},{seeds[1]}]", "render=small",
                  run_id="oracle")  # fmt: skip
    assert done.returncode == Exit.JUDGED, done.stderr[-3000:]
    done = _run("-m", "vabench.export", "lerobot", str(tmp_path / "oracle"), "--out", str(tmp_path / "ds"))
    assert done.returncode == 0 and "wrote 2 episodes" in done.stdout, done.stderr[-3000:]
    ckpt = tmp_path / "bc.pt"
    done = _run("experiments/train_bc.py", str(tmp_path / "ds"), "--out", str(ckpt), "--steps", "200")
    assert done.returncode == 0 and f"serve it: python -m vabench.serve_policy {ckpt}" in done.stdout, done.stderr
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "vabench.serve_policy", str(ckpt), "--port", str(port)], cwd=ROOT,
                              env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        assert server.stdout.readline().startswith("serving {'policy': 'bc'")  # printed once it listens
        done = launch(tmp_path, "model=policy", f"model.extra.url=ws://127.0.0.1:{port}", "budget_scale=1",
                      f"tasks=[{TASK}]", f"seeds=[{seeds[-1]}]", "render=small", run_id="bc")  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert done.returncode == Exit.JUDGED, done.stderr[-3000:]
    row = read_rows(tmp_path / "bc").iloc[0]
    assert (row.model, row.seed, row.status, row.budget) == ("policy", seeds[-1], "ok", 50) and row.model_calls >= 1
    done = _run("-m", "vabench.analysis", str(tmp_path / "oracle"), str(tmp_path / "bc"))
    assert done.returncode == 0 and "policy | active" in done.stdout and "oracle | active" in done.stdout
    assert os.path.getsize(ckpt) > 0
