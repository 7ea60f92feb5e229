"""The learned baseline under control=ee_delta (docs/learn.md): an ee_delta export's control steps
are the samples' targets, the head regresses them, the checkpoint records its interface, the served
policy's control steps pass straight through the policy agent to the controller, and a checkpoint
of the other interface is refused in one line naming the fix, by the launcher before any episode."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.openpi_server import OpenpiServer, Scripted
from tests.test_policy import launch, policy
from tests.test_verify import run_folder
from vabench.agents.chat.model import ModelError
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.kinds import make_model
from vabench.agents.models.policy import control_mismatch
from vabench.core.boundary import Brief
from vabench.envs import RENDER_PRESETS, EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.control import control_budget
from vabench.envs.seeds import eval_seeds
from vabench.envs.tasks import task_class
from vabench.export.__main__ import export
from vabench.launch import Exit
from vabench.learn.data import read_export
from vabench.learn.model import NetConfig, decode, loss_of
from vabench.learn.policy import LearnedPolicy
from vabench.learn.train import TrainConfig, train
from vabench.results.recordfile import read_events
from vabench.serve_policy import PolicyServer, checkpoint

ROOT = Path(__file__).resolve().parents[1]
TASK = "grasp_single_cube"
TINY = NetConfig(width=48, height=36, channels=8, keypoints=4, hidden=32, horizon=3)
NO_RECORDING = RecordingConfig(enabled=False, video=False)


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Path]:
    """The oracle under ee_delta on the task's first manifest seed (small images), exported."""
    results = tmp_path_factory.mktemp("learn_ctl")
    run = run_folder(results, "oracle", f"[{TASK}]", "control=ee_delta")
    export(run, results / "ds", "vabench/learn-ctl-test", progress=False)
    return run, results / "ds"


@pytest.fixture(scope="module")
def trained(exported, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("ckpt") / "bc.pt"
    meta = train(exported[1], out, net_cfg=TINY, cfg=TrainConfig(steps=5, batch=4), log=lambda _: None)
    return out, meta


def test_the_samples_are_the_control_steps_the_oracle_sent(exported):
    run, ds = exported
    samples = read_export(ds, TINY.horizon, (TINY.width, TINY.height))
    record = samples.episodes.iloc[0]["record"]
    sent = [e["payload"]["ee_delta"]["right"] for e in read_events(run / record) if e["type"] == "action"]
    assert samples.control == "ee_delta" and len(samples) == len(sent) > 20
    np.testing.assert_allclose(samples.targets[:, 0], np.array(sent), atol=1e-6)
    np.testing.assert_array_equal(samples.targets[:-1, 1], samples.targets[1:, 0])  # the chunk looks ahead


def test_the_continuous_head_regresses_the_deltas_and_snaps_the_gripper():
    scale = torch.tensor([0.01] * 3 + [0.05] * 3)
    targets = torch.tensor([[[0.02, 0, -0.005, 0, 0.1, 0, 1.0], [0, 0, 0, 0, 0, 0, 0.0]]])
    mask = torch.ones(1, 2, dtype=torch.bool)
    right = torch.cat([targets[..., :6] / scale, (targets[..., 6:] - 0.5) * 40], dim=-1)
    np.testing.assert_allclose(decode(right, scale, continuous=True).numpy(), targets.numpy(), atol=1e-6)
    assert loss_of(right, targets, mask, scale, continuous=True) < 1e-6
    assert loss_of(right.flip(1), targets, mask, scale, continuous=True) > 1.0
    assert NetConfig(control="ee_delta").outputs == 7 and NetConfig().outputs == 14


def test_the_checkpoint_records_its_interface_and_the_agent_passes_its_steps_straight_through(trained, tmp_path):
    out, meta = trained
    blob = torch.load(out, weights_only=True)
    assert meta["control"] == blob["net"]["control"] == "ee_delta"
    served = checkpoint(out)
    answered = []
    infer_batch = served.infer_batch
    served.infer_batch = lambda batch: [answered.append(a) or a for a in infer_batch(batch)]
    assert served.metadata["control"] == "ee_delta" and "world rotation vector" in served.metadata["action"]
    server = PolicyServer(served, port=0).start()
    env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["small"], recording=NO_RECORDING, control="ee_delta"))
    try:
        agent = make_model(policy(f"ws://127.0.0.1:{server.port}"))
        scale = 4 / control_budget(task_class(TASK).budget, TASK)  # four control steps
        episode = Episode.of(TASK, eval_seeds(TASK)[-1], env=env, control="ee_delta", budget_scale=scale)
        row = run_episode(env, agent, episode, tmp_path / "ep")
        with pytest.raises(ModelError, match="set control=ee_delta") as refused:  # a commands episode
            agent.start(Brief(TASK, eval_seeds(TASK)[-1], ("right",), "active", control="commands"))
    finally:
        server.shutdown()
        env.close()
    assert (row.status, row.control, row.steps, row.invalid_actions) == ("ok", "ee_delta", 4, 0)
    sent = [
        e["payload"]["ee_delta"]["right"]
        for e in read_events(tmp_path / "ep" / "events.jsonl")
        if e["type"] == "action"
    ]
    np.testing.assert_allclose(sent, np.concatenate([a["actions"] for a in answered]), atol=1e-6)
    assert {v[6] for v in sent} <= {0.0, 1.0}
    assert refused.value.permanent and agent.client is None  # never retried; the connection closed


def test_a_checkpoint_of_the_other_interface_is_one_line_naming_the_fix():
    line = control_mismatch({"control": "commands"}, "ee_delta")
    assert line.count("\n") == 0 and "set control=commands" in line and "control=ee_delta export" in line
    assert control_mismatch({"control": "ee_delta"}, "ee_delta") is None
    assert control_mismatch({"name": "an openpi server"}, "ee_delta") is None  # a server that does not say


def test_the_error_figures_of_a_control_step_checkpoint_compare_every_frames_first_step(trained, exported):
    spec = importlib.util.spec_from_file_location("bc_errors", ROOT / "benchmarks" / "bc_errors.py")
    bc_errors = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bc_errors)
    out = bc_errors.figures(LearnedPolicy(trained[0]), exported[1], None)
    steps = read_export(exported[1], TINY.horizon, (TINY.width, TINY.height)).targets[:, 0]
    assert out["frames"] == len(steps) and "axis_choice_agreement" not in out  # no axis to pick
    assert list(out["per_axis"]) == ["x", "y", "z", "rx", "ry", "rz"]
    assert all(row["frames"] == len(steps) for row in out["per_axis"].values())
    assert np.isclose(out["per_axis"]["z"]["oracle_mean_magnitude"], np.abs(steps[:, 2]).mean() * 1000, rtol=1e-3)


def test_the_launcher_refuses_a_server_of_the_other_interface_before_any_episode(tmp_path):
    server = OpenpiServer(Scripted(np.zeros((1, 7))), {"control": "ee_delta"})
    try:
        done = launch(tmp_path, "model=policy", f"model.extra.url={server.url}", f"tasks=[{TASK}]", "seeds=1")
    finally:
        server.shutdown()
    assert done.returncode == Exit.REFUSED, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if "control=ee_delta" in line]
    assert len(lines) == 1 and "set control=ee_delta" in lines[0]
    assert not list(tmp_path.rglob("*.parquet"))  # no episode ran
