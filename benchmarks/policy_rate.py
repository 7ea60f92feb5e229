"""Policies at control rate (issue 49): ms per env step under ``control=ee_delta`` at the ``small``
and ``paper`` render presets and without rendering, beside the same env's paper command step (a
1 cm ``gripper.move_world``), in one run; under ee_delta with and without the wrist view.

Each cell is an env built for it (vabench.envs.EnvConfig), reset on manifest seeds of
grasp_single_cube; a control step is a 1 cm end-effector delta on a changing axis (the gripper
held open), a paper step a 1 cm world move on the same axes. What is timed is ``env.step``: the
physics (and for commands the plan), and the observation's images as the agent receives them
(pixels, before any encoding). Each round plays every cell interleaved, seed by seed, and takes
each cell's median; the figure printed is the median of the rounds' medians (``--rounds``).

    python benchmarks/policy_rate.py [--rounds 3] [--seeds 2] [--steps 20] [--in-flight 1,2] [--checkpoint PATH]
                                     [--batch-window-ms 5]

The same run measures ManiSkill3's ``PickCube-v1`` on its CPU backend (``pd_ee_delta_pose``; one
320x240 RGB camera, and state only; a warm reset), in its own cached venv, built on first use
(benchmarks/maniskill_venv.py, benchmarks/maniskill_rate.py); vabench's warm reset of manifest
seeds (``EnvConfig.warm_reset``, the state kept: a hit) at ``small``; and policy episodes per hour
per core, a scripted policy (or ``--checkpoint``) served by ``vabench.serve_policy`` with
``--in-flight`` episodes at once, a row per count (with the sizes of the server's batches), against
the bare env loop (benchmarks/policy_throughput.py). Goals (issue 49), all in this run: a
control step at ``small`` at most 0.5x ManiSkill3's RGB step; without rendering at most 1.5x its
state-only step; a warm reset at most 2x its warm reset; served episodes per hour per core at least
0.8 of the bare loop's. ``--no-maniskill`` checks the first three against issue 49's quoted figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from any folder

from benchmarks.maniskill_venv import maniskill_python  # noqa: E402
from benchmarks.policy_throughput import episodes_per_hour  # noqa: E402
from vabench.envs import EnvConfig, RecordingConfig, VABenchEnv  # noqa: E402
from vabench.envs.render import RENDER_PRESETS  # noqa: E402
from vabench.envs.seeds import eval_seeds  # noqa: E402
from vabench.envs.settle_cache import SettleCache  # noqa: E402
from vabench.serve_policy import BATCH_WINDOW_MS  # noqa: E402

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
ISSUE_MS3 = {"rgb": 54.0, "state": 6.8, "reset": 54.0}
GOAL_RGB, GOAL_STATE, GOAL_RESET, GOAL_SERVED = 0.5, 1.5, 2.0, 0.8
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


def maniskill3(rounds: int, steps: int) -> dict:
    """ManiSkill3 PickCube-v1 in its own venv (built when missing): ms per step (state, rgb) and per
    warm reset, ``{"wall", "cpu"}`` each, and the seconds its venv took to build (0: cached)."""
    t = time.perf_counter()
    python = maniskill_python(log=sys.stderr)
    built = time.perf_counter() - t
    script = Path(__file__).resolve().parent / "maniskill_rate.py"
    cmd = [str(python), str(script), "--rounds", str(rounds), "--steps", str(steps)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=1800).stdout
    return json.loads(out.strip().splitlines()[-1]) | {"venv_build_s": round(built, 1)}


def warm_reset_ms(seeds: list[int], repeats: int = 3) -> tuple[float, float]:
    """vabench's warm reset (the kept settled state restored: a hit) of manifest seeds at ``small``
    under ee_delta, (wall, CPU) ms, median; the cache in a temporary folder, filled unclocked."""
    config = EnvConfig(preset=RENDER_PRESETS["small"], control="ee_delta", recording=NO_RECORDING, warm_reset=True)
    env = VABenchEnv(config)
    with tempfile.TemporaryDirectory(prefix="vabench-settled-") as cache:
        env.settled = SettleCache(Path(cache))
        times = []
        try:
            for seed in seeds:
                env.reset(TASK, seed)  # a miss: settles and keeps the state
                for _ in range(repeats):
                    t, cpu = time.perf_counter(), time.process_time()
                    env.reset(TASK, seed)
                    times.append(((time.perf_counter() - t) * 1000, (time.process_time() - cpu) * 1000))
        finally:
            env.close()
    return tuple(statistics.median(x[i] for x in times) for i in (0, 1))


def step_ms(args) -> dict[str, tuple[float, float]]:
    """Each cell's (wall, CPU) ms per env.step, the median of the rounds' medians."""
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
    for env in envs.values():
        env.close()
    return {label: tuple(statistics.median(r[i] for r in rs) for i in (0, 1)) for label, rs in rounds.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds; the figure is the median of their medians")
    ap.add_argument("--seeds", type=int, default=2, help="manifest seeds per round")
    ap.add_argument("--steps", type=int, default=20, help="steps per seed")
    ap.add_argument(
        "--in-flight",
        type=counts,
        default=(1, 2),
        help="served episodes at once, N or N,M,...: a row each (default 1,2)",
    )
    ap.add_argument(
        "--checkpoint", type=Path, help="serve this policy checkpoint instead of the script (docs/learn.md)"
    )
    ap.add_argument(
        "--batch-window-ms", type=float, default=BATCH_WINDOW_MS, help="the server's batching window (serve_policy's)"
    )
    ap.add_argument("--episodes", type=int, default=8, help="episodes timed, served and bare")
    ap.add_argument("--episode-steps", type=int, default=30, help="control steps per episode")
    ap.add_argument("--repeats", type=int, default=3, help="times each episodes-per-hour cell is played (median)")
    ap.add_argument("--no-maniskill", action="store_true", help="use issue 49's ManiSkill3 figures instead")
    args = ap.parse_args()
    if any(args.episodes % n for n in args.in_flight):  # each cell plays whole batches of its count
        ap.error(f"--episodes {args.episodes} must be a multiple of each --in-flight count ({args.in_flight})")
    start = os.getloadavg()[0]
    ms = step_ms(args)
    ms["warm reset, small"] = warm_reset_ms(eval_seeds(TASK)[: args.seeds])
    ms3 = None if args.no_maniskill else maniskill3(args.rounds, args.steps)
    rates = [
        episodes_per_hour(args.episodes, args.episode_steps, n, args.repeats, args.checkpoint, args.batch_window_ms)
        for n in args.in_flight
    ]
    report(ms, ms3, rates, args, (start, os.getloadavg()[0]))


def counts(text: str) -> tuple[int, ...]:
    """``--in-flight``: one or more positive counts, comma-separated."""
    try:
        out = tuple(int(v) for v in text.split(","))
    except ValueError:
        out = ()
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected N or N,M,... (positive counts), got {text!r}")
    return out


MS3_ROWS = (("rgb", "step, one 320x240 RGB camera"), ("state", "step, state only"), ("reset", "warm reset"))


def report(ms: dict[str, tuple[float, float]], ms3: dict | None, rates: list[dict], args, load) -> None:
    print(f"{TASK}, {args.rounds} rounds x {args.seeds} seeds x {args.steps} steps; ms (median of medians)")
    print(f"load average (1 min) {load[0]:.1f} at the start, {load[1]:.1f} at the end, on {os.cpu_count()} cores")
    print(f"{'vabench':30s} {'wall ms':>8s} {'cpu ms':>8s}")
    for label, (wall, cpu) in ms.items():
        print(f"{label:30s} {wall:8.1f} {cpu:8.1f}")
    figures = {k: (v, v) for k, v in ISSUE_MS3.items()}
    source = "issue 49's figures"
    if ms3 is not None:
        source = "this run"
        print(f"ManiSkill3 {ms3['env']} {ms3['mani_skill']}, CPU backend, pd_ee_delta_pose", end="")
        print(f" (its venv built in {ms3['venv_build_s']} s this run; 0: cached)")
        for key, label in MS3_ROWS:
            figures[key] = (ms3[key + "_ms"]["wall"], ms3[key + "_ms"]["cpu"])
            print(f"{label:30s} {figures[key][0]:8.1f} {figures[key][1]:8.1f}")
    for rate in rates:
        served_report(rate)
    goals = (("ee_delta, small", "rgb", GOAL_RGB), ("ee_delta, no render", "state", GOAL_STATE),
             ("warm reset, small", "reset", GOAL_RESET))  # fmt: skip
    for label, key, goal in goals:
        wall, cpu = (v / m for v, m in zip(ms[label], figures[key], strict=True))
        met = ", ".join(f"{what} {'met' if r <= goal else 'NOT met'}" for what, r in (("wall", wall), ("cpu", cpu)))
        print(f"goal: {label} / ManiSkill3 {key} ({source}): wall {wall:.2f}, cpu {cpu:.2f} (<= {goal:g}: {met})")
    for rate in rates:
        met = "met" if rate["ratio"] >= GOAL_SERVED else "NOT met"
        bare = rate["bare"]["per_core_hour"]
        off = rate["served, no recording view"]["per_core_hour"] / bare
        env = rate["served"]["per_env_core_hour"] / bare
        print(
            f"goal: served / bare episodes per core hour, {rate['in_flight']} in flight: {rate['ratio']:.2f} "
            f"(>= {GOAL_SERVED:g}: {met}; {env:.2f} the env side's alone, {off:.2f} with the recording view off)"
        )


def served_report(rate: dict) -> None:
    sizes = ", ".join(f"{n} of {size}" for size, n in rate["batches"].items())
    print(
        f"episodes per hour per core ({rate['steps']} control steps at small, {rate['policy']}; "
        f"median of {rate['repeats']}; the server's batches: {sizes}, window {rate['window_ms']:g} ms):"
    )
    cells = ((f"served, {rate['in_flight']} in flight", rate["served"]), ("bare env loop", rate["bare"]),
             ("served, no recording view", rate["served, no recording view"]))  # fmt: skip
    for label, cell in cells:
        whole = f" ({cell['ok']}/{cell['played']} played whole)" if "ok" in cell else ""
        per = (
            f"{cell['per_core_hour']:8.0f} per CPU hour ({cell['per_env_core_hour']:.0f} the env side's), "
            f"{cell['per_wall_hour']:6.0f} per wall hour"
        )
        print(f"  {label:28s} {per}{whole}")


if __name__ == "__main__":
    main()
