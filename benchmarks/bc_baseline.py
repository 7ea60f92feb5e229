"""The behaviour-cloning baseline's table on a clean protocol, end to end (docs/learn.md).

1. the oracle on training seeds that are no evaluation manifest's (``--train-seeds``: a range of the
   training pool, ``100000-100029``, or ``split`` for the launcher's ``split=train`` seeds);
2. its episodes exported as a LeRobot dataset;
3. one checkpoint per candidate (``--candidates``: training steps), each trained with the same
   ``--hold-out`` successful episodes per task kept out as a validation split; the candidate of the
   lowest validation loss is chosen, on the validation split only;
4. the chosen checkpoint served and evaluated once on the evaluation manifests of its tasks
   (``model=policy budget_scale=1``), with the oracle, the servo and the random agent on the same seeds;
5. ``python -m vabench.analysis`` on the four runs (Wilson intervals), and benchmarks/bc_errors.py on
   the validation frames and on the oracle's evaluation frames.

``--control ee_delta`` runs the same under the control-rate interface (vabench.envs.control): every
launch with ``control=ee_delta``, so the oracle's episodes are control steps, the export's action
is the seven numbers per arm and the trainer regresses them; results under ``results/bc_ee_delta``,
the bundle under ``benchmarks/bc_baseline_ee_delta``. Its references are the oracle and the random
agent (random control steps within the limits); the servo answers the paper's commands only.

It prints the command, the commit and the date first; run folders, datasets and checkpoints go under
``--results`` (not committed: this script regenerates them; a rerun resumes, skipping what exists),
and a small bundle (the tables, the checkpoint's metadata, the validation losses and the error
figures) under ``--bundle``.

    nice python benchmarks/bc_baseline.py [--control commands|ee_delta] [--train-seeds 100000-100029] \\
        [--hold-out 6] [--candidates 1000,1500] [--eval-seeds all] [--results DIR] [--bundle DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("grasp_single_cube", "place_cube_in_bowl", "click_bell_right")  # one-arm tasks of docs/learn.md
REFERENCES = {  # per control mode: the agents evaluated beside the policy (the servo plays commands only)
    "commands": ("oracle", "servo", "random"),
    "ee_delta": ("oracle", "random"),
}
ENV = {
    "RAY_AUTH_MODE": "disabled",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python benchmarks/bc_baseline.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--train-seeds", default="100000-100029", help="FIRST-LAST of the training pool, or 'split'")
    p.add_argument("--hold-out", type=int, default=6, help="validation episodes per task (default 6)")
    p.add_argument("--candidates", default="1000,1500", help="training steps to choose from (default 1000,1500)")
    p.add_argument("--eval-seeds", default="all", help="launcher seeds= of the evaluation (default all: 20)")
    p.add_argument(
        "--random-seeds",
        help="launcher seeds= of the random agent (default: --eval-seeds; its episodes are the slowest)",
    )
    p.add_argument("--tasks", default=",".join(TASKS))
    p.add_argument("--control", choices=tuple(REFERENCES), default="commands", help="the action interface (control=)")
    p.add_argument(
        "--tables-only",
        action="store_true",
        help="launch and train nothing: the tables, figures and bundle from the runs and checkpoints as they are",
    )
    p.add_argument("--port", type=int, default=0, help="serve_policy's port during the evaluation (0: a free one)")
    p.add_argument("--results", type=Path, help="run folders, data, checkpoints (default results/bc[_ee_delta])")
    p.add_argument("--bundle", type=Path, help="the committed summary (default benchmarks/bc_baseline[_ee_delta])")
    args = p.parse_args(argv)
    suffix = "" if args.control == "commands" else f"_{args.control}"
    args.results = args.results or ROOT / "results" / f"bc{suffix}"
    args.bundle = args.bundle or ROOT / "benchmarks" / f"bc_baseline{suffix}"
    return args


def control_keys(args: argparse.Namespace) -> list[str]:
    """The launcher key of the interface (none for the paper's commands, the default)."""
    return [] if args.control == "commands" else [f"control={args.control}"]


def train_seed_keys(spec: str) -> list[str]:
    """The launcher keys that name the training seeds: always ``split=train``, so the rows say so
    and the launcher refuses any held-out seed (vabench.envs.seeds.held_out)."""
    if spec == "split":
        return ["split=train", "seeds=all"]
    first, last = (int(x) for x in spec.split("-"))
    return ["split=train", f"seeds=[{','.join(str(s) for s in range(first, last + 1))}]"]


def sh(args: list[str], log: Path | None = None) -> None:
    """Run one step of the pipeline (its output to ``log`` when given); a failure stops the script."""
    print("$ " + shlex.join(args), flush=True)
    env = {**os.environ, **ENV, "PYTHONPATH": str(ROOT)}  # experiments/ and benchmarks/ import this checkout
    if log is None:
        done = subprocess.run(args, cwd=ROOT, env=env)
    else:
        with open(log, "a") as sink:
            done = subprocess.run(args, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise SystemExit(f"step failed (exit {done.returncode}): {shlex.join(args)}" + (f"; see {log}" if log else ""))


def launch(results: Path, run_id: str, tasks: str, keys: list[str]) -> Path:
    """A launcher run into ``results/run_id`` (resumed when it exists)."""
    args = [sys.executable, "-m", "vabench.launch", f"tasks=[{tasks}]", "render=small", "ray.address=none"]
    sh(args + keys + [f"run_id={run_id}", f"results_dir={results}"], results / f"{run_id}.log")
    return results / run_id


def export(results: Path, run: Path, name: str) -> Path:
    out = results / name
    if not (out / "meta" / "info.json").exists():
        sh([sys.executable, "-m", "vabench.export", "lerobot", str(run), "--out", str(out), "--force"])
    return out


def candidates(args: argparse.Namespace, dataset: Path) -> list[dict]:
    """One checkpoint per candidate, trained without the validation split; its validation loss."""
    import torch

    out = []
    for steps in (int(s) for s in args.candidates.split(",")):
        ckpt = args.results / "checkpoints" / f"bc_{steps}.pt"
        if not ckpt.exists():
            train = [sys.executable, "experiments/train_bc.py", str(dataset), "--out", str(ckpt), "--threads", "1"]
            sh(train + ["--steps", str(steps), "--hold-out", str(args.hold_out), "--tasks", args.tasks])
        meta = torch.load(ckpt, map_location="cpu", weights_only=True)["meta"]
        out.append({"steps": steps, "checkpoint": str(ckpt), "validation_loss": meta["validation_loss"]})
        print(f"candidate {steps} steps: validation loss {meta['validation_loss']:.4f}", flush=True)
    return out


def served(checkpoint: str, port: int) -> tuple[subprocess.Popen, str]:
    """serve_policy on the checkpoint, once it says it listens, and the address it says."""
    args = [sys.executable, "-m", "vabench.serve_policy", checkpoint, "--port", str(port)]
    print("$ " + shlex.join(args) + " &", flush=True)
    server = subprocess.Popen(args, cwd=ROOT, env={**os.environ, **ENV}, stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    url = re.search(r" on (ws://\S+)", line)
    if not line.startswith("serving") or not url:
        server.kill()
        raise SystemExit(f"serve_policy did not start: {line.strip() or 'no output'}")
    print(line.strip(), flush=True)
    return server, url.group(1)


def evaluate(args: argparse.Namespace, chosen: dict) -> list[Path]:
    """The chosen checkpoint once on the evaluation seeds, then the references on the same seeds."""
    seeds = f"seeds={args.eval_seeds}"
    server, url = served(chosen["checkpoint"], args.port)
    try:
        keys = ["model=policy", f"model.extra.url={url}", "budget_scale=1", seeds, *control_keys(args)]
        runs = [launch(args.results, "eval_bc", args.tasks, keys)]
    finally:
        server.terminate()
        server.wait()
    for model in REFERENCES[args.control]:
        keys = [f"model={model}", f"seeds={args.random_seeds}" if model == "random" and args.random_seeds else seeds]
        keys += control_keys(args)
        runs.append(launch(args.results, f"eval_{model}", args.tasks, keys))
    return runs


def errors(args: argparse.Namespace, checkpoint: str, dataset: Path, frames: str, name: str) -> dict:
    out = args.bundle / f"errors_{name}.json"
    sh([sys.executable, "benchmarks/bc_errors.py", checkpoint, str(dataset), "--frames", frames, "--json", str(out)])
    return json.loads(out.read_text())


def provenance() -> dict:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    return {
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "commit": commit + (" (with uncommitted changes)" if dirty.strip() else ""),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    args.results, args.bundle = args.results.resolve(), args.bundle.resolve()
    args.results.mkdir(parents=True, exist_ok=True)
    args.bundle.mkdir(parents=True, exist_ok=True)
    started = provenance()
    print(f"command: {started['command']}\ncommit: {started['commit']}\ndate: {started['date']}", flush=True)
    train_run = args.results / "oracle_train"
    if not args.tables_only:
        train_run = launch(
            args.results,
            "oracle_train",
            args.tasks,
            ["model=oracle", *control_keys(args), *train_seed_keys(args.train_seeds)],
        )
    dataset = export(args.results, train_run, "ds_train")
    tried = candidates(args, dataset)
    chosen = min(tried, key=lambda c: c["validation_loss"])
    print(f"chosen on the validation split: {chosen['steps']} steps ({chosen['checkpoint']})", flush=True)
    if args.tables_only:
        runs = [args.results / f"eval_{name}" for name in ("bc", *REFERENCES[args.control])]
    else:
        runs = evaluate(args, chosen)
    report(args, started, tried, chosen, dataset, runs)
    return 0


def judged(run: Path, pairs: set[tuple[str, int]] | None = None):
    """A run's judged rows (of the (task, seed) pairs given)."""
    from vabench.results.outcomes import read_rows

    rows = read_rows(run)
    rows = rows[rows["status"] == "ok"]
    if pairs is None:
        return rows
    return rows[[(str(t), int(s)) in pairs for t, s in zip(rows["task"], rows["seed"], strict=True)]]


def cell(k: int, n: int) -> str:
    from vabench.analysis.stats import wilson_interval

    if n == 0:
        return "-"
    lo, hi = wilson_interval(k, n)
    return f"{100 * k / n:.1f}% ({k}/{n}; {100 * lo:.1f}-{100 * hi:.1f})"


def table(runs: list[Path]) -> str:
    """Per task and model, success with 95% Wilson intervals on the policy's evaluation seeds (a
    reference run may hold more seeds, or, for the slow random agent, fewer), then the macro-average,
    subtask progress (eq. 12) and mean env steps."""
    policy = judged(runs[0])
    pairs = {(str(t), int(s)) for t, s in zip(policy["task"], policy["seed"], strict=True)}
    cols = {run.name.removeprefix("eval_"): judged(run, pairs) for run in runs}
    lines = ["| task | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for task in sorted({t for t, _ in pairs}):
        cells = [cell(int(r[r.task == task].success.sum()), int((r.task == task).sum())) for r in cols.values()]
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    tasks = {t for t, _ in pairs}
    macro = [
        f"{r.groupby('task').success.mean().mean() * 100:.1f}%" if set(r.task) == tasks else "-" for r in cols.values()
    ]
    lines.append("| macro-average | " + " | ".join(macro) + " |")
    done = [(int(r.checkpoints_done.sum()), int(r.checkpoints_total.sum())) for r in cols.values()]
    progress = [f"{100 * k / n:.1f}% ({k}/{n})" if n else "-" for k, n in done]
    lines.append("| subtask progress (eq. 12) | " + " | ".join(progress) + " |")
    lines.append("| mean env steps | " + " | ".join(f"{r.steps.mean():.1f}" for r in cols.values()) + " |")
    return "\n".join(lines) + "\n"


def report(args: argparse.Namespace, started: dict, tried: list[dict], chosen: dict, dataset: Path, runs: list[Path]):
    """The analysis, the table on the policy's seeds, the error figures and the bundle."""
    sh(
        [
            sys.executable,
            "-m",
            "vabench.analysis",
            *map(str, runs),
            "--out",
            str(args.bundle / "analysis"),
            "--format",
            "both",
        ]
    )
    eval_frames = export(args.results, args.results / "eval_oracle", "ds_eval_oracle")
    figures = {
        "validation": errors(args, chosen["checkpoint"], dataset, "validation", "validation"),
        "evaluation": errors(args, chosen["checkpoint"], eval_frames, "all", "evaluation"),
    }
    (args.bundle / "table.md").write_text(table(runs))
    print(table(runs), flush=True)
    write_bundle(args, started, tried, chosen, figures, runs)


def run_summary(run: Path) -> dict:
    """Per run: judged episodes, successes per task, mean env steps, the policy's round trips."""
    from vabench.results.outcomes import read_rows

    rows = read_rows(run)
    rows = rows[rows["status"] == "ok"]
    tasks = {str(t): f"{int(g['success'].sum())}/{len(g)}" for t, g in rows.groupby("task")}
    calls = float(rows["model_calls"].sum())
    return {
        "model": str(rows["model"].iloc[0]) if len(rows) else None,
        "judged": len(rows),
        "successes": tasks,
        "mean_steps": round(float(rows["steps"].mean()), 2) if len(rows) else None,
        "mean_round_trip_s": round(float(rows["model_latency_s"].sum()) / calls, 4) if calls else None,
    }


def shown(path: str) -> str:
    """A path as the committed bundle names it: from the checkout's root (no machine's own folders)."""
    return Path(path).relative_to(ROOT).as_posix() if Path(path).is_relative_to(ROOT) else path


def write_bundle(
    args: argparse.Namespace, started: dict, tried: list[dict], chosen: dict, figures: dict, runs: list[Path]
) -> None:
    import torch

    meta = torch.load(chosen["checkpoint"], map_location="cpu", weights_only=True)["meta"]
    summary = {
        **started,
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "control": args.control,
        "train_seeds": args.train_seeds,
        "hold_out_per_task": args.hold_out,
        "eval_seeds": args.eval_seeds,
        "candidates": [{**c, "checkpoint": shown(c["checkpoint"])} for c in tried],
        "chosen_steps": chosen["steps"],
        "runs": {run.name: run_summary(run) for run in runs},
        "errors": figures,
    }
    (args.bundle / "provenance.json").write_text(json.dumps(summary, indent=2) + "\n")
    (args.bundle / "checkpoint_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"bundle: {args.bundle} (provenance.json, checkpoint_meta.json, analysis/, errors_*.json)")


if __name__ == "__main__":
    sys.exit(main())
