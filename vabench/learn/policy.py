"""A trained checkpoint as a served policy (torch; the ``learn`` extra):
``python -m vabench.serve_policy CHECKPOINT`` loads it here.

:class:`LearnedPolicy` has the three members vabench.serve_policy's ``Policy`` declares
(``metadata``, ``infer``, ``reset``); it does not subclass it, so that serve_policy, the only
module that loads it, stays the one that imports the other. It reads what the policy agent sends
by default (docs/policy.md): the active image, the 11-number state and the instruction, and answers
the first ``execute`` vectors of its predicted chunk (default 1: it looks again after every vector).
A checkpoint trained on a ``control=ee_delta`` export answers control steps; its metadata's
``control`` says so, and the policy agent refuses an episode of the other interface
(vabench.agents.models.policy).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from vabench.agents.models.policy import ACTIVE_IMAGE_KEY, CONTROL, IMAGES, TRAINED_ON
from vabench.core.errors import VabenchError
from vabench.envs.state import FIELDS
from vabench.learn.data import prompt_features, resize
from vabench.learn.model import BCNet, NetConfig, decode, parameters
from vabench.learn.train import FORMAT

STATE_KEY, PROMPT_KEY = "observation/state", "prompt"  # the agent's default model.extra keys
ACTIONS = {  # what its 7 numbers per arm are: a command's (local turns), a control step's (a world rotation vector)
    False: "7 per arm: dx dy dz droll dpitch dyaw gripper",
    True: "7 per arm: dx dy dz (m, world) rx ry rz (rad, world rotation vector) gripper 0..1",
}


class CheckpointError(VabenchError, ValueError):
    """A file that is not a checkpoint of this trainer; the message names the fix."""


def trained_on(meta: dict) -> dict[str, list[int]]:
    """The seeds per task of the episodes a checkpoint was trained on (its ``meta["episodes"]``)."""
    out: dict[str, list[int]] = {}
    for task, seed in meta.get("episodes", []):
        out.setdefault(str(task), []).append(int(seed))
    return {task: sorted(set(seeds)) for task, seeds in out.items()}


class LearnedPolicy:
    """Serves a checkpoint of vabench.learn.train; one-arm tasks (11 state numbers in, 7 out)."""

    def __init__(self, path: Path, execute: int | None = None):
        try:
            blob = torch.load(Path(path), map_location="cpu", weights_only=True)
        except Exception as e:  # a pickle, a truncated file, another library's checkpoint
            raise CheckpointError(
                f"{path}: not a readable checkpoint ({type(e).__name__}); train one with python experiments/train_bc.py"
            ) from None
        if not isinstance(blob, dict) or blob.get("format") != FORMAT:
            raise CheckpointError(f"{path}: not a {FORMAT} checkpoint; train one with python experiments/train_bc.py")
        try:
            self.net = BCNet(NetConfig(**blob["net"]))
            self.net.load_state_dict(blob["state_dict"])
        except (TypeError, RuntimeError, KeyError):  # another version's network: names or shapes differ
            raise CheckpointError(f"{path}: its network is not this trainer's; retrain it") from None
        self.net.eval()
        norms = blob["norms"]
        self.state_mean = np.asarray(norms["state_mean"], dtype=np.float32)
        self.state_std = np.asarray(norms["state_std"], dtype=np.float32)
        self.motion_scale = torch.tensor(norms["motion_scale"], dtype=torch.float32)
        self.execute = min(execute or 1, self.net.cfg.horizon)
        meta = blob.get("meta", {})
        self.metadata = {
            "policy": "bc",
            "checkpoint": Path(path).name,
            "tasks": list(meta.get("tasks", [])),
            "horizon": self.execute,
            "parameters": parameters(self.net),
            "action": ACTIONS[self.net.cfg.continuous],
            IMAGES: [ACTIVE_IMAGE_KEY],  # the one camera it sees: the client sends no other
            CONTROL: self.net.cfg.control,  # the interface its actions are for: the agent refuses the other
            TRAINED_ON: trained_on(meta),  # the launcher warns when a run evaluates these seeds
        }

    def reset(self) -> None:
        """Stateless: every inference reads only the observation it is sent."""

    def infer(self, obs: dict) -> dict:
        return self.infer_batch([obs])[0]

    def infer_batch(self, batch: list[dict]) -> list[dict]:
        """One forward pass for several clients' observations (serve_policy's batching window)."""
        cfg = self.net.cfg
        images, states, prompts = [], [], []
        for obs in batch:
            state = np.asarray(obs[STATE_KEY], dtype=np.float32).reshape(-1)
            if len(state) != len(FIELDS):
                raise CheckpointError(f"this policy controls one arm ({len(FIELDS)} state numbers); got {len(state)}")
            images.append(resize(np.asarray(obs[ACTIVE_IMAGE_KEY], dtype=np.uint8), (cfg.width, cfg.height)))
            states.append((state - self.state_mean) / self.state_std)
            prompts.append(prompt_features(str(obs.get(PROMPT_KEY, "")), cfg.text_dim))
        with torch.no_grad():
            out = self.net(
                torch.from_numpy(np.stack(images)),
                torch.from_numpy(np.stack(states)),
                torch.from_numpy(np.stack(prompts)),
            )
            actions = decode(out, self.motion_scale, self.net.cfg.continuous).numpy()
        return [{"actions": a[: self.execute].astype(np.float32)} for a in actions]
