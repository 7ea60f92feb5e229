"""Behaviour cloning on CPU (torch; the ``learn`` extra): fit :class:`BCNet` to an export's
samples and save a checkpoint that ``python -m vabench.serve_policy CHECKPOINT`` serves.

The loss per predicted command is vabench.learn.model's (which axis, how far, the gripper), the
motion divided by its RMS over the data so that a metre and a radian weigh alike. Images are
shifted by up to ``shift`` pixels at random, the augmentation that lets a small image model learn
from a few hundred frames (DrQ, Kostrikov et al. 2020).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from vabench.learn.data import Export, Samples, held_out, prompt_features, read_export
from vabench.learn.model import BCNet, NetConfig, loss_of, parameters

FORMAT = "vabench.bc.v1"
STATE_STD_FLOOR = 1e-3  # a state number that never varies is centred, not blown up
MOTION_SCALE_FLOOR = (1e-3,) * 3 + (np.radians(1.0),) * 3  # 1 mm, 1 degree: the executor's smallest commands


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1500
    batch: int = 32
    lr: float = 1e-3
    weight_decay: float = 1e-4
    shift: int = 4  # pixels of random image shift
    seed: int = 0
    log_every: int = 100


def norms_of(samples: Samples) -> dict[str, list[float]]:
    """How the state and the motion are normalised (saved with the checkpoint)."""
    motion = samples.targets[..., :6][samples.mask]
    return {
        "state_mean": samples.states.mean(axis=0).tolist(),
        "state_std": np.maximum(samples.states.std(axis=0), STATE_STD_FLOOR).tolist(),
        "motion_scale": np.maximum(np.sqrt((motion**2).mean(axis=0)), MOTION_SCALE_FLOOR).tolist(),
    }


def shifted(images: torch.Tensor, shift: int, gen: torch.Generator) -> torch.Tensor:
    """Each image moved by up to ``shift`` pixels in x and y, its border repeated."""
    if shift <= 0:
        return images
    n, h, w, _ = images.shape
    padded = F.pad(images.permute(0, 3, 1, 2).float(), (shift,) * 4, mode="replicate")
    dx, dy = torch.randint(0, 2 * shift + 1, (2, n), generator=gen)
    out = torch.stack([padded[i, :, dy[i] : dy[i] + h, dx[i] : dx[i] + w] for i in range(n)])
    return out.permute(0, 2, 3, 1)


def fit(samples: Samples, net_cfg: NetConfig, cfg: TrainConfig, log: Callable[[str], None]) -> tuple[BCNet, dict]:
    """The trained network and the normalisation it expects."""
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    norms = norms_of(samples)
    images, states, prompts, targets, mask = tensors_of(samples, norms, net_cfg.text_dim)
    scale = torch.tensor(norms["motion_scale"], dtype=torch.float32)
    net = BCNet(net_cfg)
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, cfg.steps))
    net.train()
    for step in range(1, cfg.steps + 1):
        at = torch.randint(0, len(samples), (min(cfg.batch, len(samples)),), generator=gen)
        out = net(shifted(images[at], cfg.shift, gen), states[at], prompts[at])
        loss = loss_of(out, targets[at], mask[at], scale, net_cfg.continuous)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % cfg.log_every == 0 or step == cfg.steps:
            log(f"step {step}/{cfg.steps}: loss {loss.item():.4f}")
    net.eval()
    return net, norms


def tensors_of(samples: Samples, norms: dict, text_dim: int) -> tuple[torch.Tensor, ...]:
    """images, normalised states, prompt features, targets and mask, as the network reads them."""
    states = (torch.from_numpy(samples.states) - torch.tensor(norms["state_mean"])) / torch.tensor(norms["state_std"])
    prompts = torch.from_numpy(np.stack([prompt_features(p, text_dim) for p in samples.prompts]))
    return (
        torch.from_numpy(samples.images),
        states,
        prompts,
        torch.from_numpy(samples.targets),
        torch.from_numpy(samples.mask),
    )


def validation_loss(net: BCNet, samples: Samples, norms: dict) -> float:
    """The training loss on held-out samples (no augmentation): what a choice between policies reads."""
    images, states, prompts, targets, mask = tensors_of(samples, norms, net.cfg.text_dim)
    scale = torch.tensor(norms["motion_scale"], dtype=torch.float32)
    with torch.no_grad():
        return float(loss_of(net(images, states, prompts), targets, mask, scale, net.cfg.continuous))


def train(
    dataset: Path,
    out: Path,
    tasks: list[str] | None = None,
    net_cfg: NetConfig | None = None,
    cfg: TrainConfig | None = None,
    log: Callable[[str], None] = print,
    hold_out: int = 0,
) -> dict:
    """Read ``dataset``, fit, save the checkpoint at ``out``; returns what the checkpoint's ``meta`` says.
    ``hold_out`` successful episodes per task (vabench.learn.data.held_out) are not trained on: their
    loss is the checkpoint's ``validation_loss``."""
    net_cfg, cfg = net_cfg or NetConfig(), cfg or TrainConfig()
    started = time.perf_counter()
    size = (net_cfg.width, net_cfg.height)
    validation = held_out(Export(Path(dataset)).episodes, hold_out) if hold_out else set()
    samples = read_export(Path(dataset), net_cfg.horizon, size, tasks, without=validation)
    net_cfg = replace(net_cfg, control=str(samples.control))  # the export's interface: the checkpoint's
    read_s = time.perf_counter() - started
    episodes = samples.episodes
    log(
        f"{len(samples)} samples from {len(episodes)} episodes of {', '.join(sorted(set(episodes.task)))} "
        f"(control={samples.control})"
    )
    started, cpu = time.perf_counter(), time.process_time()
    net, norms = fit(samples, net_cfg, cfg, log)
    meta = {
        "dataset": str(dataset),
        "tasks": sorted(set(episodes["task"])),
        "control": str(samples.control),
        "episodes": [[str(t), int(s)] for t, s in zip(episodes["task"], episodes["seed"], strict=True)],
        "samples": len(samples),
        "train": asdict(cfg),
        "read_s": round(read_s, 2),
        "train_s": round(time.perf_counter() - started, 2),  # wall clock
        "train_cpu_s": round(time.process_time() - cpu, 2),  # this process's CPU time: what carries over
        "parameters": parameters(net),
        "torch": str(torch.__version__),  # a plain string: weights_only loading refuses TorchVersion
    }
    if validation:
        held = read_export(Path(dataset), net_cfg.horizon, size, meta["tasks"], only=validation)
        meta["validation"] = sorted([t, s] for t, s in validation if t in meta["tasks"])
        meta["validation_samples"] = len(held)
        meta["validation_loss"] = round(validation_loss(net, held, norms), 5)
        log(f"validation loss {meta['validation_loss']:.4f}: {len(held)} samples, {len(meta['validation'])} episodes")
    save(Path(out), net, norms, meta)
    meta["checkpoint_mb"] = Path(out).stat().st_size / 1e6
    return meta


def save(path: Path, net: BCNet, norms: dict, meta: dict) -> None:
    """Plain tensors, numbers and strings only, so ``torch.load(weights_only=True)`` reads it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = {"format": FORMAT, "net": net.cfg.asdict(), "state_dict": net.state_dict(), "norms": norms, "meta": meta}
    torch.save(blob, path)
