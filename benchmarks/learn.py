"""Training and serving cost of the behaviour-cloning baseline (docs/learn.md).

Trains on DATASET (a LeRobot export, e.g. of an oracle run) for ``--steps`` steps, ``--repeats``
times, and prints the median seconds per training step (wall clock and this process's CPU time: on
a shared machine the CPU time is the figure that carries over), the median latency of one
inference of the served policy (an observation at the export's image size, ``--calls`` calls,
resizing included), the parameters and the checkpoint's size.

    python benchmarks/learn.py DATASET [--steps 50] [--repeats 3] [--calls 50] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from vabench.learn.data import PREFERRED_VIEW  # noqa: E402
from vabench.learn.policy import ACTIVE_IMAGE_KEY, PROMPT_KEY, STATE_KEY, LearnedPolicy  # noqa: E402
from vabench.learn.train import TrainConfig, train  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dataset", type=Path)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    wall, cpu, meta = [], [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            ckpt = Path(tmp) / f"bc-{i}.pt"
            meta = train(args.dataset, ckpt, cfg=TrainConfig(steps=args.steps, log_every=10**9), log=lambda _: None)
            wall.append(meta["train_s"] / args.steps)
            cpu.append(meta["train_cpu_s"] / args.steps)
        policy = LearnedPolicy(ckpt)
        info = json.loads((args.dataset / "meta" / "info.json").read_text())
        height, width, _ = info["features"][PREFERRED_VIEW]["shape"]
        rng = np.random.default_rng(0)
        obs = {
            ACTIVE_IMAGE_KEY: rng.integers(0, 256, (height, width, 3), dtype=np.uint8),
            STATE_KEY: np.array([0.3, -0.2, 1.0, 1, 0, 0, 0, 0.3, -0.2, 0.9, 0], dtype=np.float32),
            PROMPT_KEY: "Use the right arm to grasp the red cube and lift it off the table.",
        }
        latency = []
        for _ in range(args.calls):
            start = time.perf_counter()
            policy.infer(obs)
            latency.append(time.perf_counter() - start)
    print(
        f"{meta['samples']} samples, {args.steps} steps x {args.repeats}, {args.threads} thread(s): "
        f"{statistics.median(wall) * 1000:.0f} ms per step wall, {statistics.median(cpu) * 1000:.0f} ms CPU "
        f"(medians; wall per repeat {', '.join(f'{w * 1000:.0f}' for w in wall)} ms)"
    )
    print(
        f"inference at {width}x{height}: {statistics.median(latency) * 1000:.1f} ms (median of {args.calls}); "
        f"{meta['parameters']:,} parameters, checkpoint {meta['checkpoint_mb']:.2f} MB"
    )


if __name__ == "__main__":
    main()
