"""Per-task success of the servo agent (model=servo) on the manifest seeds, with Wilson intervals.

Every task of every track by default (a task the agent refuses is left out with a line). Runs
episodes in this process (one env, one episode at a time: real SAPIEN, the real harness),
appends one JSON line per episode to ``OUT/rows.jsonl`` (a rerun skips what is done) and prints
task x protocol: successes/n, Wilson 95% interval, median steps, median camera actions, and the
end reasons of the failures. Records go to ``OUT/<task>/<protocol>/<seed>/``.

    .venv/bin/python benchmarks/servo_rates.py --out /tmp/servo_rates --seeds 20
    .venv/bin/python benchmarks/servo_rates.py --out /tmp/servo_rates --tasks grasp_single_cube --protocols active
    .venv/bin/python benchmarks/servo_rates.py --out /tmp/servo_xarm7 --robot xarm7 --seeds 3   # another embodiment
    .venv/bin/python benchmarks/servo_rates.py --out /tmp/servo_blur2 --perturbation blur:2     # a perturbed look

Use one OUT folder per robot and perturbation (a rerun skips by task, protocol and seed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from collections import Counter
from pathlib import Path

from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.servo import ServoAgent
from vabench.analysis.stats import wilson_interval
from vabench.core.vocab import Perturbation, Robot, Track
from vabench.envs import EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.perturb import PerturbationConfig
from vabench.envs.seeds import eval_seeds, load_manifest
from vabench.envs.tasks import task_class, tasks_of_track

FIELDS = (
    "task",
    "protocol",
    "seed",
    "success",
    "end_reason",
    "steps",
    "camera_actions",
    "robot_actions",
    "objects_placed",
    "wall_s",
    "robot",
    "perturbation",
)
ALL_TASKS = tuple(t for track in Track for t in tasks_of_track(track))


def run(
    out: Path, tasks, protocols, n_seeds: int, robot: str = Robot.PANDA, look: str = Perturbation.NONE
) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "rows.jsonl"
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()] if rows_path.exists() else []
    done = {(r["task"], r["protocol"], r["seed"]) for r in rows}
    look_cfg = PerturbationConfig(look)  # ValueError names the kinds and levels
    env = VABenchEnv(EnvConfig(recording=RecordingConfig(video=False), robot=robot, perturbation=look_cfg))
    agent = ServoAgent()
    try:
        for task in tasks:
            why = agent.refuses(task, tuple(task_class(task).arms), 0, protocols[0])
            if not why and not eval_seeds(task, robot):
                why = f"{robot} has no verified seed: {load_manifest(task, robot).get('declared')}"
            if why:
                print(f"{task} left out: {why}", flush=True)
                continue
            for protocol in protocols:
                for seed in eval_seeds(task, robot)[:n_seeds]:
                    if (task, protocol, seed) in done:
                        continue
                    folder = out / task / protocol / str(seed)
                    if folder.exists():  # an episode interrupted before its row was written
                        shutil.rmtree(folder)
                    r = run_episode(env, agent, Episode.of(task, seed, protocol, env=env), folder)
                    row = {k: getattr(r, k) for k in FIELDS}
                    row["success"] = bool(row["success"])
                    rows.append(row)
                    with rows_path.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(json.dumps(row), flush=True)
    finally:
        env.close()
    return rows


def stuck_at(out: Path, row: dict) -> str:
    """The first checkpoint a failed episode never reached, from its record (evaluator side)."""
    path = out / row["task"] / row["protocol"] / str(row["seed"]) / "events.jsonl"
    last = {}
    if path.exists():
        for line in path.read_text().splitlines():
            last = json.loads(line).get("checkpoints") or last
    return next((k for k, v in last.items() if not v), "?")


def table(rows: list[dict], out: Path) -> str:
    lines = [
        "| task | protocol | success | Wilson 95% | med. steps | med. camera | failures: end; first unmet checkpoint |",
        "|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["task"], r["protocol"]), []).append(r)
    for (task, protocol), rs in sorted(groups.items()):
        k, n = sum(r["success"] for r in rs), len(rs)
        lo, hi = wilson_interval(k, n)
        fails = Counter(r["end_reason"] for r in rs if not r["success"])
        unmet = Counter(stuck_at(out, r) for r in rs if not r["success"])
        lines.append(
            f"| {task} | {protocol} | {k}/{n} | [{lo:.2f}, {hi:.2f}] | {statistics.median(r['steps'] for r in rs):g} | "
            f"{statistics.median(r['camera_actions'] for r in rs):g} | "
            + (", ".join(f"{e} {c}" for e, c in fails.most_common()) or "-")
            + ("; " + ", ".join(f"{e} {c}" for e, c in unmet.most_common()) if unmet else "")
            + " |"
        )
    for (task, protocol), rs in sorted(groups.items()):
        placed = [r["objects_placed"] for r in rs if r.get("objects_placed") is not None]
        if placed:
            lines.append(f"\n{task} {protocol}: mean objects placed {statistics.mean(placed):.2f} over {len(placed)}")
    for protocol in sorted({p for _, p in groups}):
        per = [sum(r["success"] for r in rs) / len(rs) for (t, p), rs in groups.items() if p == protocol]
        lines.append(f"\nmean per-task success, {protocol}: {sum(per) / len(per):.2f} over {len(per)} tasks")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--tasks", nargs="*", default=list(ALL_TASKS), help="default: every task of every track")
    ap.add_argument("--protocols", nargs="*", default=["active", "passive"])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--robot", default=Robot.PANDA, choices=list(Robot), help="the embodiment (its own manifests)")
    ap.add_argument("--perturbation", default=Perturbation.NONE, help="none or <kind>:<level>, e.g. blur:2")
    ap.add_argument("--report", action="store_true", help="only print the table of what OUT holds")
    a = ap.parse_args()
    started = time.perf_counter()
    if a.report:
        rows = [json.loads(line) for line in (a.out / "rows.jsonl").read_text().splitlines()]
    else:
        rows = run(a.out, a.tasks, a.protocols, a.seeds, a.robot, a.perturbation)
    rows = [r for r in rows if r["task"] in a.tasks and r["protocol"] in a.protocols]
    print(table(rows, a.out))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
