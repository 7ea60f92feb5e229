"""``model.extra.layout=libero`` (issue 49): a server built with openpi-client that checks openpi's
LIBERO example layout on every request (exactly its keys, shapes and dtypes) and answers a scripted
chunk of LIBERO actions gets a whole episode under ``control=ee_delta``, judged; the state it is
sent follows the commanded motion, and its gripper -1..1 reaches the fingers."""

from __future__ import annotations

import numpy as np
import pytest
from openpi_client import base_policy

from tests.openpi_server import OpenpiServer
from tests.test_control import served
from vabench.agents.chat.model import ModelConfig
from vabench.agents.models.kinds import make_model
from vabench.agents.models.policy_layouts import LIBERO_POSITION_M, axis_angle
from vabench.core.errors import ConfigError
from vabench.envs.seeds import eval_seeds

TASK = "grasp_single_cube"
SEED = eval_seeds(TASK)[0]
STEPS = 16  # control steps: four chunks of four
LAYOUT = {"observation/image": ((240, 320, 3), np.uint8), "observation/wrist_image": ((240, 320, 3), np.uint8),
          "observation/state": ((8,), np.float32)}  # fmt: skip
# +x 1 cm a step (0.2 of LIBERO's 0.05 m) for four steps, then held, then the gripper closed (+1)
CHUNK = [[0.2, 0, 0, 0, 0, 0, -1]] * 4 + [[0, 0, 0, 0, 0, 0, -1]] * 4 + [[0, 0, 0, 0, 0, 0, 1]] * 8


class LiberoChecker(base_policy.BasePolicy):
    """openpi's LIBERO inputs, checked exactly: anything else raises (the server sends the traceback)."""

    def __init__(self):
        self.cursor = 0

    def reset(self) -> None:
        self.cursor = 0

    def infer(self, obs: dict) -> dict:
        assert sorted(obs) == sorted([*LAYOUT, "prompt"]), sorted(obs)
        for key, (shape, dtype) in LAYOUT.items():
            assert (obs[key].shape, obs[key].dtype) == (shape, dtype), (key, obs[key].shape, obs[key].dtype)
        assert isinstance(obs["prompt"], str) and obs["prompt"]
        chunk = np.asarray(CHUNK[self.cursor : self.cursor + 4], dtype=np.float32)
        self.cursor += 4
        return {"actions": chunk}


def libero(url: str) -> ModelConfig:
    return ModelConfig(id="policy", timeout_s=30, extra={"url": url, "layout": "libero"})


def test_a_libero_layout_server_gets_a_whole_ee_delta_episode(tmp_path):
    server = OpenpiServer(LiberoChecker(), {"images": ["observation/image"]})  # the layout sends both cameras anyway
    row, _ = served(server, STEPS, tmp_path / "ep", layout="libero")
    assert (row.status, row.control, row.end_reason, row.steps, row.model_calls) == ("ok", "ee_delta", "budget", 16, 4)
    assert row.invalid_actions == 0 and row.success is False  # judged: the script never grasps
    states = [obs["observation/state"] for obs in server.received]
    moved = states[1][:3] - states[0][:3]
    assert moved[0] == pytest.approx(4 * 0.2 * LIBERO_POSITION_M, abs=0.004)  # four 1 cm steps along +x
    assert np.abs(moved[1:]).max() < 0.004
    assert states[0][6] == pytest.approx(0.04, abs=0.002) and states[0][7] == pytest.approx(-0.04, abs=0.002)  # open
    assert states[2][6] == pytest.approx(0.04, abs=0.002)  # still open: the gripper was -1
    assert states[3][6] < 0.03 and states[3][7] > -0.03  # +1 closed the fingers


def test_the_state_carries_an_axis_angle():
    half = np.sin(np.pi / 4)
    assert np.allclose(axis_angle((half, 0, 0, half)), [0, 0, np.pi / 2])  # 90 degrees about z
    assert np.allclose(axis_angle((-half, 0, 0, -half)), [0, 0, np.pi / 2])  # the same rotation
    assert np.allclose(axis_angle((1, 0, 0, 0)), 0)


def test_the_layout_is_named_or_refused_in_one_line():
    with pytest.raises(ConfigError, match="'model.extra.layout' must be one of default, libero"):
        make_model(ModelConfig(id="policy", extra={"url": "ws://x:1", "layout": "droid"}))
