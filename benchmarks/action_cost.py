"""Per-action cost of the env as the harness pays it: plan + execute + the observation's render(s)
+ their encoding, per protocol, at the ``paper`` render preset against ``fast`` (today's laptop
preset), median over many actions.

The actions are the experts' (world moves, local rotations, gripper open/close), the mix a model
issues, replayed on several seeds of two tasks; the two presets run interleaved seed by seed in
one process, so drift on a shared machine hits both alike. Also printed: the same actions without
rendering (physics and planning only), and with ``--stock`` the same at SAPIEN's stock ``default``
shader instead of vabench's lean copy (the shader's own baseline).

    python benchmarks/action_cost.py [--seeds 4] [--stock]

Target (issue 24): at the paper preset at most 2x the time per action of ``fast`` for 4x the
active pixels.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import statistics
import time

from vabench.core.vocab import PROTOCOLS
from vabench.envs import EnvConfig, VABenchEnv
from vabench.envs.render import RENDER_PRESETS, RenderPreset
from vabench.envs.seeds import eval_seeds

logging.getLogger("toppra").setLevel(logging.ERROR)
TASKS = ("grasp_single_cube", "place_cube_in_bowl")
TARGET_RATIO = 2.0


def episode(env: VABenchEnv, task: str, seed: int, protocol: str) -> list[tuple[float, float, float]]:
    """(env.step, encoding, process CPU) seconds of each expert action of one episode.

    CPU time (all threads, lavapipe's included) is the figure to trust on a shared machine, where
    wall time also counts the time other processes hold the cores."""
    bundle = PROTOCOLS[protocol].bundle
    encoding = env.config.preset.encoding(bundle) if env.config.render else None
    env.reset(task, seed, protocol)
    out = []
    for action in env.task.expert(env.privileged()):
        t, cpu = time.perf_counter(), time.process_time()
        r = env.step(action)
        stepped = time.perf_counter()
        for rgb in r.observation.images.values():
            encoding.encode(rgb)
        out.append((stepped - t, time.perf_counter() - stepped, time.process_time() - cpu))
        if r.done:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4, help="seeds per task")
    ap.add_argument("--stock", action="store_true", help="also time SAPIEN's stock default shader")
    args = ap.parse_args()
    presets: dict[str, RenderPreset] = {"fast": RENDER_PRESETS["fast"], "paper": RENDER_PRESETS["paper"]}
    if args.stock:
        paper = presets["paper"]
        presets["paper, stock shader"] = dataclasses.replace(
            paper, active=dataclasses.replace(paper.active, shader="default")
        )
    envs = {name: VABenchEnv(EnvConfig(preset=p)) for name, p in presets.items()}
    for env in envs.values():
        env.reset(TASKS[0], eval_seeds(TASKS[0])[0])  # shader compile, once per process
    physics = VABenchEnv(EnvConfig(render=False))
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for task in TASKS:
        for seed in eval_seeds(task)[: args.seeds]:
            for protocol in PROTOCOLS:
                for name, env in envs.items():
                    times.setdefault((name, protocol), []).extend(episode(env, task, seed, protocol))
                times.setdefault(("physics", protocol), []).extend(episode(physics, task, seed, protocol))
    print(f"{len(times[('fast', 'active')])} robot actions per cell ({args.seeds} seeds x {len(TASKS)} tasks)")
    head = f"{'preset':22s} {'protocol':8s} {'step ms':>8s} {'encode ms':>10s} {'total ms':>9s} {'cpu ms':>7s}"
    print(head + "  ratio to fast (wall, cpu)")
    for protocol in PROTOCOLS:
        base, base_cpu = median_total(times[("fast", protocol)]), median_cpu(times[("fast", protocol)])
        for name in ("physics", *envs):
            cell = times[(name, protocol)]
            step, enc = (statistics.median(t[i] for t in cell) * 1000 for i in (0, 1))
            total, cpu = median_total(cell), median_cpu(cell)
            print(
                f"{name:22s} {protocol:8s} {step:8.1f} {enc:10.1f} {total * 1000:9.1f} {cpu * 1000:7.1f}"
                f"  {total / base:.2f}, {cpu / base_cpu:.2f}"
            )
    for protocol in PROTOCOLS:
        paper, fast = times[("paper", protocol)], times[("fast", protocol)]
        ratio, cpu_ratio = median_total(paper) / median_total(fast), median_cpu(paper) / median_cpu(fast)
        met = "met" if max(ratio, cpu_ratio) <= TARGET_RATIO else "NOT met"
        print(f"paper / fast, {protocol}: wall {ratio:.2f}, cpu {cpu_ratio:.2f} (target <= {TARGET_RATIO:g}: {met})")


def median_total(cell: list[tuple[float, float, float]]) -> float:
    return statistics.median(a + b for a, b, _ in cell)


def median_cpu(cell: list[tuple[float, float, float]]) -> float:
    return statistics.median(c for _, _, c in cell)


if __name__ == "__main__":
    main()
