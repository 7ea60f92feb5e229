"""Policies at control rate (issue 49): ms per env step under ``control=ee_delta`` at the ``small``
and ``paper`` render presets and without rendering, beside the same env's paper command step (a
1 cm ``gripper.move_world``), in one run; under ee_delta with and without the wrist view.

Each cell is an env built for it (vabench.envs.EnvConfig), reset on manifest seeds of
grasp_single_cube; a control step is a 1 cm end-effector delta on a changing axis (the gripper
held open), a paper step a 1 cm world move on the same axes. What is timed is ``env.step``: the
physics (and for commands the plan), and the observation's images as the agent receives them
(pixels, before any encoding). Each round plays every cell interleaved, seed by seed, and takes
each cell's median; the figure printed is the median of the rounds' medians (``--rounds``).

    python benchmarks/policy_rate.py [--rounds 3] [--seeds 2] [--steps 20]

Goals (issue 49), against ManiSkill3's ``PickCube-v1`` on its CPU backend on the same machine:
a control step at ``small`` at most 0.5x its 320x240 RGB step, without rendering at most 1.5x its
state-only step. ManiSkill3's figures are measured by the part of this benchmark still to be
added (:func:`maniskill3`); until then the goals are checked against the figures issue 49 quotes.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

from vabench.envs import EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.render import RENDER_PRESETS
from vabench.envs.seeds import eval_seeds

logging.getLogger("toppra").setLevel(logging.ERROR)
TASK = "grasp_single_cube"
NO_RECORDING = RecordingConfig(enabled=False, video=False)  # the evaluator's view is the harness's, not the step's
# (label, control, render preset or None: no rendering, the wrist view under ee_delta)
CELLS = (
    ("ee_delta, small", "ee_delta", "small", False),
    ("ee_delta, small, wrist", "ee_delta", "small", True),
    ("ee_delta, paper", "ee_delta", "paper", False),
    ("ee_delta, paper, wrist", "ee_delta", "paper", True),
    ("ee_delta, no render", "ee_delta", None, False),
    ("commands, small", "commands", "small", False),
    ("commands, paper", "commands", "paper", False),
    ("commands, no render", "commands", None, False),
)
# Issue 49's ManiSkill3 PickCube-v1 figures (CPU backend, this machine, one sitting): the stand-in
# until maniskill3() measures them in the same run.
ISSUE_MS3_RGB_MS, ISSUE_MS3_STATE_MS = 54.0, 6.8
GOAL_RGB, GOAL_STATE = 0.5, 1.5
AXES = ((0.01, 0, 0), (0, 0.01, 0), (0, 0, 0.01), (-0.01, 0, 0), (0, -0.01, 0), (0, 0, -0.01))


def env_for(control: str, render: str | None, wrist: bool) -> VABenchEnv:
    if render is None:
        return VABenchEnv(EnvConfig(render=False, control=control))
    return VABenchEnv(EnvConfig(preset=RENDER_PRESETS[render], control=control, wrist=wrist, recording=NO_RECORDING))


def action(control: str, k: int) -> dict:
    """The k-th step's decision: a 1 cm move on a changing axis, either interface."""
    d = AXES[k % len(AXES)]
    if control == "ee_delta":
        return {"ee_delta": [*d, 0.0, 0.0, 0.0, 0.0]}
    axis = "xyz"[next(i for i, v in enumerate(d) if v)]
    return {"action": "gripper.move_world", "axis": axis, "sign": "+" if sum(d) > 0 else "-", "distance_mm": 10}


def steps(env: VABenchEnv, control: str, seed: int, n: int) -> list[tuple[float, float]]:
    """(wall, CPU) seconds per env.step of ``n`` 1 cm steps on one seed. CPU time (every thread's,
    the CPU renderer's included) is the figure to trust on a shared machine, where wall time also
    counts the time other processes hold the cores."""
    env.reset(TASK, seed)
    out = []
    for k in range(n):
        t, cpu = time.perf_counter(), time.process_time()
        r = env.step(action(control, k))
        out.append((time.perf_counter() - t, time.process_time() - cpu))
        if not r.action_valid:
            raise RuntimeError(f"{control}: step {k} was refused: {r.feedback}")
        if r.done:
            break
    return out


def maniskill3() -> dict[str, float] | None:
    """ManiSkill3 PickCube-v1 (CPU backend, pd_ee_delta_pose; one 320x240 RGB camera, and state
    only): ms per control step. Not measured yet: the part that installs mani_skill into its own
    cached venv is to be added (issue 49); None until then."""
    return None


def episodes_per_hour() -> dict[str, float] | None:
    """Policy episodes per hour per core, the BC policy served with N episodes in flight, against
    the bare env loop. To be added (issue 49): None until then."""
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds; the figure is the median of their medians")
    ap.add_argument("--seeds", type=int, default=2, help="manifest seeds per round")
    ap.add_argument("--steps", type=int, default=20, help="steps per seed")
    args = ap.parse_args()
    envs = {label: env_for(control, render, wrist) for label, control, render, wrist in CELLS}
    seeds = eval_seeds(TASK)[: args.seeds]
    for env in envs.values():
        env.reset(TASK, seeds[0])  # the shader compile, once per process
    rounds: dict[str, list[tuple[float, float]]] = {label: [] for label, *_ in CELLS}
    for _ in range(args.rounds):
        cell: dict[str, list[tuple[float, float]]] = {label: [] for label, *_ in CELLS}
        for seed in seeds:
            for label, control, *_ in CELLS:
                cell[label] += steps(envs[label], control, seed, args.steps)
        for label, times in cell.items():
            rounds[label].append(tuple(statistics.median(t[i] for t in times) * 1000 for i in (0, 1)))
    ms = {label: tuple(statistics.median(r[i] for r in rs) for i in (0, 1)) for label, rs in rounds.items()}
    report(ms, args)


def report(ms: dict[str, tuple[float, float]], args) -> None:
    print(
        f"{TASK}, {args.rounds} rounds x {args.seeds} seeds x {args.steps} steps; ms per env.step (median of medians)"
    )
    print(f"{'cell':22s} {'wall ms':>8s} {'cpu ms':>8s}")
    for label, (wall, cpu) in ms.items():
        print(f"{label:22s} {wall:8.1f} {cpu:8.1f}")
    print("ManiSkill3 PickCube-v1 (CPU):", maniskill3() or "not measured in this run (to be added)")
    print("episodes per hour per core:", episodes_per_hour() or "not measured in this run (to be added)")
    ms3 = maniskill3() or {"rgb": ISSUE_MS3_RGB_MS, "state": ISSUE_MS3_STATE_MS}
    source = "this run" if maniskill3() else "issue 49's figures"
    for label, key, goal in (("ee_delta, small", "rgb", GOAL_RGB), ("ee_delta, no render", "state", GOAL_STATE)):
        wall, cpu = (v / ms3[key] for v in ms[label])
        met = "met" if max(wall, cpu) <= goal else "NOT met"
        print(
            f"{label} / ManiSkill3 {key} ({ms3[key]:g} ms, {source}): wall {wall:.2f}, cpu {cpu:.2f} "
            f"(goal <= {goal:g}: {met})"
        )


if __name__ == "__main__":
    main()
