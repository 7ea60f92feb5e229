"""What the behaviour-cloning policy gets wrong, frame by frame (docs/learn.md, "What fails").

Replays oracle frames of a LeRobot export through a checkpoint, one frame at a time as the served
policy sees them (no augmentation), and compares its first predicted command with the oracle's:

- how often it picks the oracle's axis (one of six, or the gripper alone);
- per axis, over the frames where the oracle moves along that axis: the mean absolute error of the
  policy's magnitude on that axis (mm or rad) beside the oracle's mean magnitude;
- how often it gets the gripper (closed or open) right.

A checkpoint of control steps (``control=ee_delta``) has no axis to pick: per axis, the mean
absolute error of its first step against the oracle's, over every frame, beside the oracle's mean
step; and the gripper.

``--frames validation`` (the default) reads the checkpoint's own validation episodes (its
``meta["validation"]``, held out of training by ``train_bc.py --hold-out``); ``--frames all`` reads
every successful episode of the export, e.g. an export of the oracle on the evaluation seeds.

    python benchmarks/bc_errors.py CHECKPOINT DATASET [--frames validation|all] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from vabench.envs.actions import MOVE_AXES, ROTATE_AXES  # noqa: E402
from vabench.learn.data import read_export  # noqa: E402
from vabench.learn.model import CHOICES, MOTION, choices_of, decode  # noqa: E402
from vabench.learn.policy import LearnedPolicy  # noqa: E402
from vabench.learn.train import tensors_of  # noqa: E402

AXES = MOVE_AXES + ROTATE_AXES  # the control step's six deltas, in order
UNITS = (1000.0,) * 3 + (1.0,) * 3  # m -> mm; rad stays rad


def outputs(policy: LearnedPolicy, dataset: Path, only: set[tuple[str, int]] | None):
    """The network's raw outputs over the chosen frames, the oracle's targets and the samples."""
    cfg = policy.net.cfg
    samples = read_export(dataset, cfg.horizon, (cfg.width, cfg.height), only=only)
    norms = {"state_mean": policy.state_mean.tolist(), "state_std": policy.state_std.tolist()}
    images, states, prompts, targets, _ = tensors_of(samples, norms, cfg.text_dim)
    with torch.no_grad():
        out = torch.cat(
            [policy.net(images[i : i + 64], states[i : i + 64], prompts[i : i + 64]) for i in range(0, len(images), 64)]
        )
    return out, targets, samples


def predictions(policy: LearnedPolicy, dataset: Path, only: set[tuple[str, int]] | None):
    """The oracle's first commands, the policy's (decoded) and both choices, over the chosen frames."""
    out, targets, samples = outputs(policy, dataset, only)
    first = out[:, 0]
    wanted = targets[:, 0]
    chosen = first[:, :CHOICES].argmax(dim=-1)
    oracle = choices_of(wanted[:, :MOTION] / policy.motion_scale)
    head = (first[:, CHOICES : CHOICES + MOTION] * policy.motion_scale).numpy()
    return wanted.numpy(), decode(first, policy.motion_scale).numpy(), head, chosen.numpy(), oracle.numpy(), samples


def step_figures(policy: LearnedPolicy, dataset: Path, only: set[tuple[str, int]] | None) -> dict:
    """:func:`figures` of a control-step checkpoint: its first step against the oracle's, per axis."""
    out, targets, samples = outputs(policy, dataset, only)
    got, wanted = decode(out[:, 0], policy.motion_scale, True).numpy(), targets[:, 0].numpy()
    per_axis = {
        name: {
            "frames": len(wanted),
            "mean_abs_error": round(float(np.abs(got[:, a] - wanted[:, a]).mean() * UNITS[a]), 4),
            "oracle_mean_magnitude": round(float(np.abs(wanted[:, a]).mean() * UNITS[a]), 4),
            "unit": "mm" if a < 3 else "rad",
        }
        for a, name in enumerate(AXES)
    }
    gripper = round(float(((got[:, -1] > 0.5) == (wanted[:, -1] > 0.5)).mean()), 4)
    return {
        "frames": len(wanted),
        "episodes": len(samples.episodes),
        "gripper_agreement": gripper,
        "per_axis": per_axis,
    }


def figures(policy: LearnedPolicy, dataset: Path, only: set[tuple[str, int]] | None) -> dict:
    """The numbers this script prints, as a dict (``--json``)."""
    if policy.net.cfg.continuous:
        return step_figures(policy, dataset, only)
    wanted, got, head, chosen, oracle, samples = predictions(policy, dataset, only)
    per_axis = {}
    for a, name in enumerate(AXES):
        rows = oracle == a
        if not rows.any():
            continue
        # the executed command's move on the oracle's axis (0 where the policy chose another axis),
        # and the magnitude head's on that axis whatever it chose
        executed = np.abs(got[rows, a] - wanted[rows, a]) * UNITS[a]
        magnitude = np.abs(head[rows, a] - wanted[rows, a]) * UNITS[a]
        per_axis[name] = {
            "frames": int(rows.sum()),
            "mean_abs_error": round(float(executed.mean()), 4),
            "magnitude_head_error": round(float(magnitude.mean()), 4),
            "oracle_mean_magnitude": round(float(np.abs(wanted[rows, a]).mean() * UNITS[a]), 4),
            "unit": "mm" if a < 3 else "rad",
        }
    return {
        "frames": len(wanted),
        "episodes": len(samples.episodes),
        "axis_choice_agreement": round(float((chosen == oracle).mean()), 4),
        "gripper_agreement": round(float(((got[:, -1] > 0.5) == (wanted[:, -1] > 0.5)).mean()), 4),
        "per_axis": per_axis,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", type=Path)
    p.add_argument("dataset", type=Path, help="a LeRobot export of oracle episodes")
    p.add_argument("--frames", choices=("validation", "all"), default="validation")
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args()
    torch.set_num_threads(1)
    policy = LearnedPolicy(args.checkpoint)
    only = None
    if args.frames == "validation":
        meta = torch.load(args.checkpoint, map_location="cpu", weights_only=True)["meta"]
        if not meta.get("validation"):
            sys.exit(f"{args.checkpoint}: no validation episodes in its metadata (train with --hold-out N)")
        only = {(str(t), int(s)) for t, s in meta["validation"]}
    out = figures(policy, args.dataset, only)
    picked = (
        f"the oracle's axis picked {out['axis_choice_agreement']:.0%} of the time, "
        if "axis_choice_agreement" in out
        else ""
    )
    print(
        f"{out['frames']} frames of {out['episodes']} {args.frames} episodes: {picked}"
        f"the gripper right {out['gripper_agreement']:.0%}"
    )
    for name, row in out["per_axis"].items():
        head = f"(the magnitude head alone {row['magnitude_head_error']:.3g}) " if "magnitude_head_error" in row else ""
        print(
            f"  {name:>2}: {row['frames']:4d} frames, mean error {row['mean_abs_error']:.3g} {row['unit']} {head}"
            f"against a mean move of {row['oracle_mean_magnitude']:.3g} {row['unit']}"
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
