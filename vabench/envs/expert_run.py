"""Run the scripted expert (the offline oracle) through the public env API on the verified seeds
and print one outcome row per episode. This is the main job until the launcher exists.

    python -m vabench.envs.expert_run                      # every task, every manifest seed
    python -m vabench.envs.expert_run --task grasp_single_cube --seeds 3 --protocol passive
"""

from __future__ import annotations

import argparse
import sys
import time

from .camera import CAMERA_PRESETS
from .env import PROTOCOLS, EnvConfig, VABenchEnv
from .seeds import eval_seeds
from .tasks import TASKS


def run_episode(env: VABenchEnv, task: str, seed: int, protocol: str) -> dict:
    t0 = time.perf_counter()
    env.reset(task, seed, protocol)
    counts = {"camera": 0, "robot": 0, "invalid": 0}
    planner_failures = 0
    for r in env.expert_steps():
        counts[r.kind] += 1
        planner_failures += r.kind == "robot" and not r.planner_success
    progress = env.checkpoints()
    return {
        "task": task,
        "seed": seed,
        "protocol": protocol,
        "success": env.success,
        "steps": env.steps,
        "budget": env.task.budget,
        "robot_actions": counts["robot"],
        "invalid_actions": counts["invalid"],
        "planner_failures": planner_failures,
        "checkpoints": f"{sum(progress.values())}/{len(progress)}",
        "wall_s": round(time.perf_counter() - t0, 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", action="append", choices=sorted(TASKS), help="default: every task")
    ap.add_argument("--seeds", type=int, default=None, help="only the first N manifest seeds per task")
    ap.add_argument("--protocol", choices=PROTOCOLS, default="active")
    ap.add_argument("--camera", choices=sorted(CAMERA_PRESETS), default="default")
    ap.add_argument("--no-render", action="store_true", help="physics only (no images)")
    args = ap.parse_args(argv)
    env = VABenchEnv(EnvConfig(camera=CAMERA_PRESETS[args.camera], render=not args.no_render))
    header = f"{'task':28s} {'seed':>5s} {'success':>7s} {'steps':>9s} {'ckpt':>5s} {'wall_s':>6s}"
    print(header)
    rows = []
    for task in args.task or sorted(TASKS):
        for seed in eval_seeds(task)[: args.seeds]:
            try:
                row = run_episode(env, task, seed, args.protocol)
                line = (
                    f"{task:28s} {seed:5d} {str(row['success']):>7s} {row['steps']:4d}/{row['budget']:<4d} "
                    f"{row['checkpoints']:>5s} {row['wall_s']:6.2f}"
                )
            except Exception as e:  # one broken episode must not cost the others their results
                row = {"task": task, "seed": seed, "success": False, "error": f"{type(e).__name__}: {e}"}
                line = f"{task:28s} {seed:5d}   ERROR {row['error']}"
            rows.append(row)
            print(line, flush=True)
    env.close()
    for task in sorted({r["task"] for r in rows}):
        mine = [r for r in rows if r["task"] == task]
        print(f"{task}: {sum(r['success'] for r in mine)}/{len(mine)} successful")
    return 0 if all(r["success"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
