"""Success of the offline agents (posetext, servo, random) under each intervention on the same seeds,
with Wilson intervals, then the attribution table (vabench.analysis.attribution) and its figure.

Runs episodes in this process (one env, one episode at a time: real SAPIEN, the real harness, each
intervention's own HarnessConfig), appends each episode's outcome row (the full schema, with its
condition label, as a run folder holds it) as one JSON line to ``OUT/rows.jsonl`` (a rerun skips
what is done) and prints agent x intervention x task x protocol: successes/n with the Wilson 95%
interval; then the paired attribution (per family the exact McNemar p, per subset the macro gain
with its seed-bootstrap interval), the intervention that recovers most per family, and writes
``OUT/attribution.png``. A combination that does not compose (views_1 under active, ...) or that
the agent refuses is left out with a line. Records go to ``OUT/<agent>/<intervention>/<task>/<protocol>/<seed>/``.

    .venv/bin/python benchmarks/interventions.py --out /tmp/iv --agents posetext --interventions none object_poses
    .venv/bin/python benchmarks/interventions.py --out /tmp/iv --agents servo --interventions none depth_point \
        --protocols active --seeds 10
    .venv/bin/python benchmarks/interventions.py --out /tmp/iv --report   # the tables of what OUT holds
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import pandas as pd

from vabench.agents.episode import Episode, HarnessConfig, run_episode
from vabench.agents.models.offline import RandomAgent
from vabench.agents.models.posetext import PosetextAgent
from vabench.agents.models.servo import ServoAgent
from vabench.analysis import attribution, attribution_bars, recovers_most, to_markdown
from vabench.analysis.stats import wilson_interval
from vabench.core.condition import condition_label
from vabench.core.interventions import HARNESS_INTERVENTIONS, check_composes
from vabench.core.vocab import Arms, Track, arms_label
from vabench.envs import EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.render import render_preset
from vabench.envs.seeds import eval_seeds
from vabench.envs.tasks import task_class, tasks_of_track

AGENTS = {"posetext": PosetextAgent, "servo": ServoAgent, "random": RandomAgent}
SINGLE_ARM = tuple(t for t in tasks_of_track(Track.BASE) if arms_label(task_class(t).arms) == Arms.SINGLE)
EXPERIMENT = "benchmarks/interventions"
KEY = ("model", "intervention", "task", "protocol", "seed")


def _label(row: dict) -> str:
    """The row's condition, as the launcher writes it (the intervention is part of it)."""
    parts = ("model", "protocol", "summary_source", "observation", "render", "intervention", "robot", "perturbation")
    return condition_label(*(row[k] for k in parts))


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _episode(env, agent, intervention: str, task: str, protocol: str, seed: int, folder: Path) -> dict:
    if folder.exists():  # an episode interrupted before its row was written
        shutil.rmtree(folder)
    r = run_episode(
        env, agent, Episode.of(task, seed, protocol, env=env, intervention=intervention), folder, HarnessConfig()
    )
    row = {**r.row(), "experiment": EXPERIMENT, "run_id": "bench"}
    return {**row, "condition": _label(row)}


def _plan(agent, name: str, interventions, tasks, protocol: str) -> tuple[list[str], list[str]]:
    """The interventions that compose with ``protocol`` and the tasks the agent takes, each left-out one said."""
    ivs, takes = [], []
    for iv in interventions:
        try:
            check_composes(iv, [protocol], "none", offline=True)
            ivs.append(iv)
        except ValueError as e:
            print(f"left out: {name} {protocol} {iv}: {e}", flush=True)
    for task in tasks:
        why = agent.refuses(task, tuple(task_class(task).arms), 0, protocol)
        if why:
            print(f"left out: {name} {protocol} {task}: {why}", flush=True)
        else:
            takes.append(task)
    return ivs, takes


def run(out: Path, agents, interventions, tasks, protocols, n_seeds: int, render: str) -> list[dict]:
    """Every (agent, intervention, task, protocol, seed) not in OUT yet, each row appended as it ends.
    Seed by seed across the tasks, every intervention of a seed together: a run stopped early still
    holds paired conditions on the same seeds of every family."""
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "rows.jsonl"
    rows = _read(rows_path)
    done = {tuple(r[k] for k in KEY) for r in rows}
    env = VABenchEnv(EnvConfig(preset=render_preset(render), recording=RecordingConfig(enabled=False, video=False)))
    try:
        for name in agents:
            agent = AGENTS[name]()
            for protocol in protocols:
                ivs, takes = _plan(agent, name, interventions, tasks, protocol)
                for i in range(n_seeds):
                    for task in takes:
                        for iv in ivs if i < len(eval_seeds(task)) else ():
                            seed = eval_seeds(task)[i]
                            if (name, iv, task, protocol, seed) in done:
                                continue
                            folder = out / name / iv / task / protocol / str(seed)
                            row = _episode(env, agent, iv, task, protocol, seed, folder)
                            rows.append(row)
                            with rows_path.open("a") as f:
                                f.write(json.dumps(row) + "\n")
                            print(f"{name} {iv} {task} {protocol} {seed}: {row['success']} {row['end_reason']} "
                                  f"{row['steps']} steps {row['wall_s']:.0f} s", flush=True)  # fmt: skip
    finally:
        env.close()
    return rows


def rates(rows: list[dict]) -> str:
    """agent x intervention x task x protocol: k/n and the Wilson interval; then each agent's mean
    per-task rate per protocol and intervention (equal family weight)."""
    lines = ["| agent | intervention | task | protocol | success | Wilson 95% |", "|---|---|---|---|---|---|"]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["model"], r["intervention"], r["task"], r["protocol"]), []).append(r)
    for (model, iv, task, protocol), rs in sorted(groups.items()):
        k, n = sum(bool(r["success"]) for r in rs), len(rs)
        lo, hi = wilson_interval(k, n)
        lines.append(f"| {model} | {iv} | {task} | {protocol} | {k}/{n} | [{lo:.2f}, {hi:.2f}] |")
    lines.append("")
    for model, iv, protocol in sorted({(m, i, p) for m, i, _, p in groups}):
        cells = [rs for (m, i, _, p), rs in groups.items() if (m, i, p) == (model, iv, protocol)]
        k, n = sum(sum(bool(r["success"]) for r in rs) for rs in cells), sum(len(rs) for rs in cells)
        mean = sum(sum(bool(r["success"]) for r in rs) / len(rs) for rs in cells) / len(cells)
        tasks = f"mean per-task {100 * mean:.1f}% over {len(cells)} tasks"
        lines.append(f"{model} {iv} {protocol}: {k}/{n} episodes, {tasks}")
    return "\n".join(lines)


def attribution_report(rows: list[dict], out: Path, n_boot: int) -> str:
    """The attribution and recovers-most tables of the rows (as a run folder's would print), and the figure."""
    att = attribution(pd.DataFrame(rows), track=Track.BASE, n_boot=n_boot)
    if att.empty:
        return "no intervention condition with its paper condition on shared seeds: no attribution"
    figure = attribution_bars(att, out / "attribution.png")
    return f"{to_markdown(att)}\n{to_markdown(recovers_most(att))}\nfigure: {figure}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--agents", nargs="*", default=list(AGENTS), choices=list(AGENTS))
    ap.add_argument("--interventions", nargs="*", default=list(HARNESS_INTERVENTIONS), choices=HARNESS_INTERVENTIONS)
    ap.add_argument("--tasks", nargs="*", default=list(SINGLE_ARM), help="default: the 11 single-arm base families")
    ap.add_argument("--protocols", nargs="*", default=["active", "passive"])
    ap.add_argument("--seeds", type=int, default=20, help="the first N manifest seeds of each task")
    ap.add_argument("--render", default="fast", help="render preset (the agents' images; default fast)")
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--report", action="store_true", help="only print the tables of what OUT holds (every row)")
    a = ap.parse_args()
    started = time.perf_counter()
    seeds_of = {t: set(eval_seeds(t)[: a.seeds]) for t in a.tasks}.get
    if a.report:
        rows = _read(a.out / "rows.jsonl")
    else:
        rows = run(a.out, a.agents, a.interventions, a.tasks, a.protocols, a.seeds, a.render)
        wanted = {"model": set(a.agents), "intervention": set(a.interventions), "protocol": set(a.protocols)}
        rows = [r for r in rows if all(r[k] in v for k, v in wanted.items()) and r["seed"] in seeds_of(r["task"], ())]
    print(rates(rows))
    print()
    print(attribution_report(rows, a.out, a.n_boot))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
