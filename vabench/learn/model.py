"""The behaviour-cloning network (torch; the ``learn`` extra): a small CNN over the camera image,
ending in a spatial softmax (one image point per feature map: where the cube, the bowl, the bell
and the gripper are, which is what the commands depend on), joined with the robot state and the
instruction's hashed words, and an MLP that outputs a chunk of ``horizon`` 7-vectors (6 motion
numbers in normalised units and a gripper logit each).

A spatial softmax learns positions from few images (Levine et al. 2016, "End-to-End Training of
Deep Visuomotor Policies"); the oracle gives 10-20 commands per episode, so a run of 14 seeds per
task is a few hundred samples.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from vabench.agents.policy_actions import PER_ARM
from vabench.envs.state import FIELDS


@dataclass(frozen=True)
class NetConfig:
    """The network's shape; saved in the checkpoint, so a checkpoint rebuilds its own network."""

    width: int = 96  # input image size (pixels)
    height: int = 72
    channels: int = 32  # feature maps of the CNN
    keypoints: int = 16  # spatial-softmax points
    hidden: int = 256  # MLP width
    text_dim: int = 64  # hashed-word buckets of the instruction
    horizon: int = 4  # vectors per predicted chunk
    state_dim: int = len(FIELDS)  # one arm's vabench.envs.state vector

    def asdict(self) -> dict:
        return asdict(self)


class SpatialSoftmax(nn.Module):
    """Each feature map's softmax-weighted mean (x, y) position, in [-1, 1]."""

    def forward(self, maps: torch.Tensor) -> torch.Tensor:
        n, k, h, w = maps.shape
        weights = torch.softmax(maps.reshape(n, k, h * w), dim=-1).reshape(n, k, h, w)
        ys = torch.linspace(-1.0, 1.0, h, device=maps.device)
        xs = torch.linspace(-1.0, 1.0, w, device=maps.device)
        x = (weights.sum(dim=2) * xs).sum(dim=-1)
        y = (weights.sum(dim=3) * ys).sum(dim=-1)
        return torch.cat([x, y], dim=1)


class BCNet(nn.Module):
    """image uint8 (n, h, w, 3), state (n, 11) and prompt features (n, text_dim), both normalised,
    -> (n, horizon, 7): normalised motion and the gripper's logit."""

    def __init__(self, cfg: NetConfig):
        super().__init__()
        self.cfg = cfg
        c = cfg.channels
        self.cnn = nn.Sequential(
            nn.Conv2d(3, c // 2, 5, stride=2, padding=2),
            nn.ReLU(),
            nn.Conv2d(c // 2, c, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(c, c, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(c, cfg.keypoints, 1),
        )
        self.points = SpatialSoftmax()
        self.head = nn.Sequential(
            nn.Linear(2 * cfg.keypoints + cfg.state_dim + cfg.text_dim, cfg.hidden),
            nn.ReLU(),
            nn.Linear(cfg.hidden, cfg.hidden),
            nn.ReLU(),
            nn.Linear(cfg.hidden, cfg.horizon * PER_ARM),
        )

    def forward(self, images: torch.Tensor, states: torch.Tensor, prompts: torch.Tensor) -> torch.Tensor:
        x = images.permute(0, 3, 1, 2).float() / 127.5 - 1.0
        points = self.points(self.cnn(x))
        out = self.head(torch.cat([points, states, prompts], dim=1))
        return out.reshape(-1, self.cfg.horizon, PER_ARM)


def parameters(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())
