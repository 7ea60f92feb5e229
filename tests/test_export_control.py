"""The LeRobot export of a control=ee_delta run (docs/export.md): a frame per control step at the
control rate, the action as the seven numbers per arm the controller tracked, named per component,
and info.json saying the control mode; episodes of the two interfaces never share a dataset."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.test_export import lerobot, lerobot_reads
from tests.test_verify import run_folder
from vabench.core.vocab import StepKind
from vabench.envs.control import CONTROL_HZ
from vabench.export.__main__ import export
from vabench.export.clips import Clip, ExportError
from vabench.export.features import ACTION_KINDS, EE_DELTA_NAMES, action_names
from vabench.export.lerobot import layout_of
from vabench.results.recordfile import read_events

TASK = "grasp_single_cube"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Path]:
    results = tmp_path_factory.mktemp("results")
    run = run_folder(results, "ctl", f"[{TASK}]", "model=oracle", "control=ee_delta")
    export(run, results / "ds", "vabench/test", progress=False)
    return run, results / "ds"


def test_an_ee_delta_run_exports_its_control_steps_at_the_control_rate(exported):
    run, ds = exported
    info = json.loads((ds / "meta" / "info.json").read_text())
    assert info["fps"] == CONTROL_HZ and info["vabench"]["control"] == "ee_delta"
    names = info["features"]["action"]["names"]
    assert names == list(action_names("ee_delta")) and names[:7] == [f"left.{n}" for n in EE_DELTA_NAMES]
    assert names[7:] == [
        "right.dx_m",
        "right.dy_m",
        "right.dz_m",
        "right.rx_rad",
        "right.ry_rad",
        "right.rz_rad",
        "right.gripper",
    ]
    assert "rad" in info["vabench"]["units"]["action"]
    frames = pd.concat(pd.read_parquet(p) for p in sorted((ds / "data").rglob("*.parquet"))).sort_values("index")
    episode = pd.read_parquet(ds / "meta" / "episodes")
    events = read_events(run / episode["record"].iloc[0])
    sent = [e["payload"]["ee_delta"]["right"] for e in events if e["type"] == "action"]
    robot = frames["complementary_info.action_kind"] == ACTION_KINDS.index(StepKind.ROBOT)
    actions = np.stack(frames["action"][robot].to_numpy())
    assert len(sent) == len(actions) > 20 and bool(episode["success"].iloc[0])
    assert np.allclose(actions[:, 7:], np.array(sent, dtype=np.float32))  # as sent: the oracle's are within the limits
    assert np.all(actions[:, :7] == 0)  # the parked left arm
    assert np.allclose(frames["timestamp"], frames["frame_index"] / CONTROL_HZ)


def test_episodes_of_the_two_interfaces_are_refused_together_with_the_filter_to_use(exported):
    run, _ = exported
    image = next(run.rglob("frames/step_*"))  # a model-facing frame
    clips = [
        Clip(TASK, {"active": [image]}, {}, {"record": name}, 7, "panda", control)
        for name, control in (("a", "commands"), ("b", "ee_delta"))
    ]
    with pytest.raises(ExportError, match=r"b was played under control=ee_delta.*--where control=NAME"):
        layout_of(clips, CONTROL_HZ)


@pytest.mark.interop
def test_lerobot_reads_an_ee_delta_export_as_written(exported, tmp_path):
    """LeRobot 0.4's own loader and doctor on the control-rate dataset: its 10 fps and its action
    names per component, as a user trains from it."""
    _, ds = exported
    lerobot_reads(lerobot(tmp_path), ds, "vabench/ctl", tmp_path)
