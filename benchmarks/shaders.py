"""The lean shader against SAPIEN's stock ``default`` (vabench/envs/sim/shaders.py): the same camera
pose rendered by both, on several scenes and views at the ``paper`` active size, their pixel
difference (mean and 99th percentile, in 0-255 units) and the CPU time per frame of each (median
of ``--repeats`` renders per view, lavapipe).

    python benchmarks/shaders.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vabench.envs import RENDER_PRESETS, EnvConfig  # noqa: E402
from vabench.envs.env import VABenchEnv  # noqa: E402
from vabench.envs.sim.camera import CameraRig  # noqa: E402

SCENES = (("place_cube_in_bowl", 1001), ("grasp_single_cube", 1000), ("lift_pot", 1002))
VIEWS = ("view_topdown", "view_oblique_45", "view_side")


def cpu_ms(render, repeats: int) -> float:
    """Median CPU milliseconds of one frame."""
    times = []
    for _ in range(repeats):
        t = time.process_time()
        render()
        times.append((time.process_time() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["paper"]))
    diffs, p99s, lean_ms, stock_ms = [], [], [], []
    try:
        for task, seed in SCENES:
            env.reset(task, seed)
            stock = CameraRig(env.world.scene, dataclasses.replace(env.config.preset.active, shader="default"))
            for view in VIEWS:
                env.step({"action": f"camera.{view}"})
                a = env.camera.render().astype(int)
                b = stock.render(env.camera.pose).astype(int)
                diff = np.abs(a - b)
                diffs.append(float(diff.mean()))
                p99s.append(float(np.percentile(diff, 99)))
                lean_ms.append(cpu_ms(env.camera.render, args.repeats))
                stock_ms.append(cpu_ms(lambda s=stock: s.render(env.camera.pose), args.repeats))
    finally:
        env.close()
    w, h = env.config.preset.active.width, env.config.preset.active.height
    print(f"{len(diffs)} views ({len(SCENES)} scenes x {len(VIEWS)}), {w}x{h}, CPU rendering")
    print(f"  pixel difference, lean vs default: mean {statistics.mean(diffs):.3f}/255 (worst view {max(diffs):.3f}),")
    print(f"  99th percentile {statistics.median(p99s):.1f}/255 (worst view {max(p99s):.1f})")
    lean, stock = statistics.median(lean_ms), statistics.median(stock_ms)
    print(f"  CPU per frame: lean {lean:.1f} ms, default {stock:.1f} ms, ratio {lean / stock:.2f}")


if __name__ == "__main__":
    main()
