"""Resident memory of one env over 100 resets (rendering on, one observation per reset).

Each reset builds a fresh scene, settles it and renders the first image. Target: <= 500 MB and
flat (no growth between the 10th and the 100th reset beyond noise).

    python benchmarks/reset_memory.py [--resets 100]
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import time

from vabench.envs.env import VABenchEnv
from vabench.envs.seeds import eval_seeds

logging.getLogger("toppra").setLevel(logging.ERROR)
TARGET_MB = 500.0


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resets", type=int, default=100)
    args = ap.parse_args()
    print(f"after imports: {rss_mb():.0f} MB")
    env = VABenchEnv()
    tasks = ["grasp_single_cube", "place_cube_in_bowl"]
    marks, times = {}, []
    for i in range(1, args.resets + 1):
        task = tasks[i % 2]
        seeds = eval_seeds(task)
        t = time.perf_counter()
        env.reset(task, seeds[i % len(seeds)])
        times.append(time.perf_counter() - t)
        gc.collect()
        if i in (1, 10, 25, 50, 75, 100) or i == args.resets:
            marks[i] = rss_mb()
            print(f"after reset {i:3d}: {marks[i]:.0f} MB")
    first, last = marks[min(10, args.resets)], marks[args.resets]
    growth = last - first
    first = times[0]
    times.sort()
    print(f"reset wall time: median {times[len(times) // 2]:.2f} s (the first, with shader compile: {first:.2f} s)")
    print(
        f"RSS after {args.resets} resets: {last:.0f} MB ({last / TARGET_MB:.2f} of the {TARGET_MB:.0f} MB target); "
        f"growth from reset 10: {growth:+.1f} MB ({growth / max(args.resets - 10, 1) * 1000:+.0f} kB per reset)"
    )


if __name__ == "__main__":
    main()
