"""Reproduction and verify throughput: runs of offline models (oracle, random, servo) over base
tasks x seeds x both protocols, made with 1 and with 4 env workers on Ray (``ray.env_actors``),
then ``python -m vabench.verify`` on each (in this process, ``--workers`` processes). Prints per
run: reproduced k/n, the run's wall time, verify's wall time and episodes per minute, and the
median seconds verify takes per episode.

    python benchmarks/verify.py [--models oracle random] [--tasks grasp_single_cube ...] [--seeds 2]
                                [--actors 1 4] [--workers 1] [--out DIR]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vabench.verify import verify  # noqa: E402

TASKS = ["grasp_single_cube", "place_cube_in_bowl", "click_bell_right"]


def launch(out: Path, run_id: str, model: str, tasks: list[str], seeds: int, actors: int) -> float:
    """One run through the real entry point (Hydra, driver, Ray); its wall time."""
    args = [
        f"model={model}",
        "protocol=both",
        f"tasks=[{','.join(tasks)}]",
        f"seeds={seeds}",
        "render=small",
        "recording.enabled=false",
        "ray.address=local",
        f"ray.env_actors={actors}",
        f"results_dir={out}",
        f"run_id={run_id}",
    ]
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "vabench.launch", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{run_id}: the run failed:\n{done.stderr[-3000:]}")
    return time.monotonic() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["oracle", "random"])
    ap.add_argument("--tasks", nargs="+", default=TASKS)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--actors", nargs="+", type=int, default=[1, 4])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="vabench-verify-bench-"))
    per_episode = []
    for actors in args.actors:
        for model in args.models:
            run_id = f"{model}-actors{actors}"
            run_s = launch(out, run_id, model, args.tasks, args.seeds, actors)
            report = verify(out / run_id, args.workers)
            per_episode.append(report.seconds / max(1, report.judged))
            print(
                f"{run_id}: run {run_s:.0f} s; verify --workers {args.workers}: {report.summary()}",
                flush=True,
            )
            for line in report.lines + [f"provenance differs: {p}" for p in report.provenance]:
                print(f"  {line}", flush=True)
    print(f"median verify time per episode: {statistics.median(per_episode):.1f} s (run folders: {out})")


if __name__ == "__main__":
    main()
