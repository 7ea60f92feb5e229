"""The control mode's step budget per task family (vabench.envs.control.BUDGET_FACTOR): the
oracle's commands on one manifest seed per family, each counted as the control steps it takes at
10 Hz within the per-step limits (a move ``ceil(d / MAX_STEP_M)``, a turn ``ceil(a / MAX_STEP_RAD)``,
a dual move its longer arm's, a gripper command ``GRIPPER_STEPS``, a camera action one), per
command; the factor is that ratio rounded up, so the control budget is the task's budget times it.

    python benchmarks/control_budget.py [--seeds 1]

Prints a table and the ``BUDGET_FACTOR`` dict to paste into vabench/envs/control.py.
"""

from __future__ import annotations

import argparse
import logging
import math

from vabench.envs import EnvConfig, VABenchEnv
from vabench.envs.control import GRIPPER_STEPS, MAX_STEP_M, MAX_STEP_RAD
from vabench.envs.seeds import eval_seeds
from vabench.envs.tasks import TASKS

logging.getLogger("toppra").setLevel(logging.ERROR)


def control_steps(decision: dict) -> int:
    """The control steps one paper command takes at the control mode's limits."""
    name = decision["action"]
    if name.endswith("move_world"):
        moves = [decision[s] for s in ("left", "right")] if name.startswith("dual") else [decision]
        return max(math.ceil(float(m["distance_mm"]) / 1000 / MAX_STEP_M) for m in moves)
    if name.endswith("rotate_local"):
        return math.ceil(math.radians(float(decision["angle_deg"])) / MAX_STEP_RAD)
    if name.endswith((".open", ".close")):
        return GRIPPER_STEPS
    return 1  # a camera action


def family_ratio(env: VABenchEnv, task: str, seeds: list[int]) -> tuple[int, int]:
    """(commands, control steps) of the oracle on ``seeds`` of ``task``."""
    commands = steps = 0
    for seed in seeds:
        env.reset(task, seed)
        for decision in env.expert():
            result = env.step(decision)
            commands += 1
            steps += control_steps(decision)
            if result.done:
                break
    return commands, steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=1, help="manifest seeds per family")
    args = ap.parse_args()
    env = VABenchEnv(EnvConfig(render=False))
    families = sorted({cls.summary_task for cls in TASKS.values()})
    factors = {}
    print(f"{'family':30s} {'commands':>8s} {'control steps':>13s} {'per command':>11s} {'factor':>6s}")
    for family in families:
        commands, steps = family_ratio(env, family, list(eval_seeds(family)[: args.seeds]))
        factors[family] = math.ceil(steps / commands)
        print(f"{family:30s} {commands:8d} {steps:13d} {steps / commands:11.2f} {factors[family]:6d}")
    print("BUDGET_FACTOR =", factors)


if __name__ == "__main__":
    main()
