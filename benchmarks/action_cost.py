"""Per-action cost of the env: plan + execute + one 640x480 render, median over many actions.

The actions are the experts' (world moves, local rotations, gripper open/close), which is the
mix a model issues, replayed on several seeds of both tasks. For scale it also times the same
actions without rendering, a camera action (render only), and, as the baseline, the same
actions rendered with SAPIEN's stock ``default`` shader instead of vabench's lean copy.
Target: <= 100 ms per robot action on a 2-core machine.

    python benchmarks/action_cost.py [--seeds 4] [--camera default]
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import statistics
import time

from vabench.envs.env import EnvConfig, VABenchEnv
from vabench.envs.seeds import eval_seeds
from vabench.envs.sim.camera import CAMERA_PRESETS

logging.getLogger("toppra").setLevel(logging.ERROR)
TARGET_MS = 100.0


def time_episodes(env: VABenchEnv, seeds_per_task: int) -> tuple[list[float], list[float]]:
    robot, camera = [], []
    for task in ("grasp_single_cube", "place_cube_in_bowl"):
        for seed in eval_seeds(task)[:seeds_per_task]:
            env.reset(task, seed)
            for action in env.task.expert(env.privileged()):
                t = time.perf_counter()
                r = env.step(action)
                robot.append((time.perf_counter() - t) * 1000)
                if r.done:
                    break
                if env.config.render and r.budget_left > 1:  # the experts leave room for a camera probe
                    t = time.perf_counter()
                    env.step({"action": "camera.view_oblique_45"})
                    camera.append((time.perf_counter() - t) * 1000)
    return robot, camera


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4, help="seeds per task")
    ap.add_argument("--camera", choices=sorted(CAMERA_PRESETS), default="default")
    args = ap.parse_args()
    cam = CAMERA_PRESETS[args.camera]
    envs = {
        "lean": VABenchEnv(EnvConfig(camera=cam)),
        "default": VABenchEnv(EnvConfig(camera=dataclasses.replace(cam, shader="default"))),
    }
    for env in envs.values():
        env.reset("grasp_single_cube", eval_seeds("grasp_single_cube")[0])  # shader compile, once per process
    robot, camera = time_episodes(envs["lean"], args.seeds)
    base_robot, base_camera = time_episodes(envs["default"], args.seeds)
    physics, _ = time_episodes(VABenchEnv(EnvConfig(render=False)), args.seeds)
    med = statistics.median(robot)
    p90 = statistics.quantiles(robot, n=10)[-1]
    print(f"robot actions timed: {len(robot)} ({args.seeds} seeds x 2 tasks), camera {cam.width}x{cam.height}")
    print(f"per robot action (plan + execute + render): median {med:.1f} ms, p90 {p90:.1f} ms")
    print(f"  same actions without rendering:            median {statistics.median(physics):.1f} ms")
    print(f"  camera action (render only):                median {statistics.median(camera):.1f} ms")
    base = statistics.median(base_robot)
    print(
        f"baseline, SAPIEN's default shader:          median {base:.1f} ms per robot action, "
        f"{statistics.median(base_camera):.1f} ms per camera action"
    )
    print(f"lean / default: {med / base:.2f}")
    print(f"ratio to the {TARGET_MS:.0f} ms target: {med / TARGET_MS:.2f} ({'met' if med <= TARGET_MS else 'NOT met'})")


if __name__ == "__main__":
    main()
