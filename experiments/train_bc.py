"""Train the behaviour-cloning baseline on a LeRobot export of oracle episodes (docs/learn.md).

    python experiments/train_bc.py datasets/oracle_train --out checkpoints/bc.pt
    python experiments/train_bc.py datasets/oracle_train --out checkpoints/bc.pt --tasks grasp_single_cube --steps 500
    python experiments/train_bc.py datasets/oracle_train --out checkpoints/bc.pt --hold-out 6   # a validation split

Then ``python -m vabench.serve_policy checkpoints/bc.pt`` serves it and ``model=policy`` evaluates it.
Needs the ``learn`` extra (torch, CPU build): ``pip install 'vabench[learn]'`` (scripts/setup.sh installs it).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path


def parse(argv: list[str] | None):
    from vabench.learn.model import NetConfig
    from vabench.learn.train import TrainConfig

    net, train = NetConfig(), TrainConfig()
    p = argparse.ArgumentParser(prog="python experiments/train_bc.py", description=__doc__.split("\n\n")[0])
    p.add_argument("dataset", type=Path, help="a LeRobot export (python -m vabench.export lerobot RUN --out DIR)")
    p.add_argument("--out", type=Path, required=True, help="the checkpoint to write (e.g. checkpoints/bc.pt)")
    p.add_argument("--tasks", help="comma-separated tasks to learn (default: every task of the export)")
    p.add_argument("--steps", type=int, default=train.steps, help=f"gradient steps (default {train.steps})")
    p.add_argument("--batch", type=int, default=train.batch, help=f"samples per step (default {train.batch})")
    p.add_argument("--lr", type=float, default=train.lr, help=f"learning rate (default {train.lr})")
    p.add_argument("--horizon", type=int, default=net.horizon, help=f"vectors per predicted chunk ({net.horizon})")
    p.add_argument("--seed", type=int, default=train.seed, help=f"initialisation and sampling seed ({train.seed})")
    p.add_argument(
        "--hold-out",
        type=int,
        default=0,
        help="successful episodes per task (the highest seeds) kept out of training as a validation split; "
        "their loss is the checkpoint's validation_loss (default 0: train on all)",
    )
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's, all cores)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    if importlib.util.find_spec("torch") is None:
        print("training needs the learn extra (torch): pip install 'vabench[learn]'", file=sys.stderr)
        return 2
    args = parse(argv)
    import torch

    from vabench.learn.data import DatasetError
    from vabench.learn.model import NetConfig
    from vabench.learn.train import TrainConfig, train

    if args.out.exists() and not args.force:
        print(f"--out {args.out} exists; pass --force to replace it", file=sys.stderr)
        return 2
    if min(args.steps, args.batch, args.horizon) < 1 or args.hold_out < 0:
        print("--steps, --batch and --horizon must be at least 1, --hold-out at least 0", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None
    cfg = TrainConfig(steps=args.steps, batch=args.batch, lr=args.lr, seed=args.seed)
    try:
        meta = train(
            args.dataset,
            args.out,
            tasks,
            NetConfig(horizon=args.horizon),
            cfg,
            log=lambda s: print(s, flush=True),
            hold_out=args.hold_out,
        )
    except DatasetError as e:
        print(e, file=sys.stderr)
        return 2
    print(
        f"trained on {meta['samples']} samples ({len(meta['episodes'])} episodes) in {meta['train_s']:.0f} s "
        f"({meta['train_cpu_s']:.0f} s CPU); "
        f"{meta['parameters']:,} parameters, {meta['checkpoint_mb']:.2f} MB: {args.out}"
    )
    print(f"serve it: python -m vabench.serve_policy {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
