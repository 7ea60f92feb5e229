"""The behaviour-cloning network (torch; the ``learn`` extra): a small CNN over the camera image,
ending in a spatial softmax (one image point per feature map: where the cube, the bowl, the bell
and the gripper are, which is what the commands depend on), joined with the robot state and the
instruction's hashed words, and an MLP that outputs a chunk of ``horizon`` commands.

Each command is factored as the expert's are: every oracle command moves along one axis or turns
about one (or only sets the gripper), so the head says which of the 7 (6 axes, or the gripper
alone), how far along each axis (normalised) and the gripper's 0..1. A plain 7-number regression
averages the demonstrations' axes into small moves on all six, each of which the executor runs as
one more command; :func:`decode` keeps the chosen axis only, so one vector is one command.

Under ``control=ee_delta`` a command is a control step, already a continuous 7-vector (two of the
expert's per-axis commands never share a step, but a step's size varies near each target), so the
head regresses the six normalised deltas (smooth L1) and the gripper's logit (BCE), and
:func:`decode` snaps the gripper to 0 or 1, the only targets the oracle sends.

A spatial softmax learns positions from few images (Levine et al. 2016, "End-to-End Training of
Deep Visuomotor Policies"); the oracle gives 10-20 commands per episode, so a run of 14 seeds per
task is a few hundred samples.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from vabench.agents.models.policy_actions import PER_ARM
from vabench.core.vocab import ControlMode
from vabench.envs.state import FIELDS

MOTION = PER_ARM - 1  # dx dy dz droll dpitch dyaw
CHOICES = MOTION + 1  # one of the six axes, or the gripper alone


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
    control: str = str(ControlMode.COMMANDS)  # the export's interface (a plain str: weights_only loads it)

    @property
    def continuous(self) -> bool:
        return self.control == ControlMode.EE_DELTA

    @property
    def outputs(self) -> int:
        """Per command: the choice's logits, the six magnitudes, the gripper's logit; per control
        step the six normalised deltas and the gripper's logit."""
        return PER_ARM if self.continuous else CHOICES + MOTION + 1

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
    -> (n, horizon, 14): per command the choice's 7 logits, 6 normalised magnitudes, the gripper's logit."""

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
            nn.Linear(cfg.hidden, cfg.horizon * cfg.outputs),
        )

    def forward(self, images: torch.Tensor, states: torch.Tensor, prompts: torch.Tensor) -> torch.Tensor:
        x = images.permute(0, 3, 1, 2).float() / 127.5 - 1.0
        points = self.points(self.cnn(x))
        out = self.head(torch.cat([points, states, prompts], dim=1))
        return out.reshape(-1, self.cfg.horizon, self.cfg.outputs)


def choices_of(normalised: torch.Tensor) -> torch.Tensor:
    """The axis each target vector moves along (its largest normalised motion), or 6: none (the gripper)."""
    size, axis = normalised.abs().max(dim=-1)
    return torch.where(size > 0, axis, torch.full_like(axis, MOTION))


def loss_of(
    out: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor, scale: torch.Tensor, continuous: bool = False
) -> torch.Tensor:
    """Cross-entropy on the choice, smooth L1 on the chosen axis' normalised magnitude, BCE on the
    gripper; averaged over the chunk's real commands. ``continuous`` (control steps): smooth L1 on
    the six normalised deltas (their mean) and BCE on the gripper."""
    normalised = targets[..., :MOTION] / scale
    if continuous:
        motion = F.smooth_l1_loss(out[..., :MOTION], normalised, reduction="none").mean(dim=-1)
        grip = F.binary_cross_entropy_with_logits(out[..., -1], targets[..., -1], reduction="none")
        m = mask.float()
        return ((motion + grip) * m).sum() / m.sum().clamp(min=1.0)
    choice = choices_of(normalised)
    picked = F.cross_entropy(out[..., :CHOICES].reshape(-1, CHOICES), choice.reshape(-1), reduction="none")
    moves = choice < MOTION
    axis = choice.clamp(max=MOTION - 1).unsqueeze(-1)
    magnitude = out[..., CHOICES : CHOICES + MOTION].gather(-1, axis).squeeze(-1)
    wanted = normalised.gather(-1, axis).squeeze(-1)
    far = F.smooth_l1_loss(magnitude, wanted, reduction="none") * moves
    grip = F.binary_cross_entropy_with_logits(out[..., -1], targets[..., -1], reduction="none")
    m = mask.float()
    return ((picked.reshape(m.shape) + far + grip) * m).sum() / m.sum().clamp(min=1.0)


def decode(out: torch.Tensor, scale: torch.Tensor, continuous: bool = False) -> torch.Tensor:
    """The network's commands as 7-vectors (m, rad, gripper 0..1): only the chosen axis moves; its
    control steps (``continuous``) as they are, the gripper 0 or 1."""
    if continuous:
        return torch.cat([out[..., :MOTION] * scale, (out[..., -1:] >= 0).float()], dim=-1)
    choice = out[..., :CHOICES].argmax(dim=-1, keepdim=True)
    magnitudes = out[..., CHOICES : CHOICES + MOTION] * scale
    keep = torch.arange(MOTION, device=out.device) == choice
    return torch.cat([magnitudes * keep, torch.sigmoid(out[..., -1:])], dim=-1)


def parameters(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())
