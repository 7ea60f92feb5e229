"""The read side at study scale: run folders of 1,000, 5,000 and 14,000 episodes, the code of
--old-rev (default: main before the outcome table, files only) against this tree, in the same run.

Each run folder is synthesised once (cached under --root) with the real schema
(:class:`vabench.results.outcomes.OutcomeRow`, written by :func:`vabench.results.outcomes.write_row` at the
driver's paths) and a small event record per episode. Every figure is measured in a fresh process
(its own peak RSS, imports not timed except for the analysis CLI, which is timed whole), median of
--repeats:

- ``read_parquet``: ``pandas.read_parquet(run_folder)``, the reader that knows nothing of the table;
- ``load``: the rows as the analysis and notebooks get them (old: every file; new: the table,
  checked against the files' stats);
- ``analysis``: ``python -m vabench.analysis RUN --out DIR`` (run as a module in the measuring
  process: pandas is imported before the clock starts);
- ``resume``: ``vabench.run.folder.state.todo`` over every episode of the run (all done);
- ``review``: the review app's first run page (``GET /run/0``, app created in the same process).

Targets at 14,000 (issue 30): load <= 2 s, analysis <= 10 s and 1 GB, first page <= 2 s, resume <= 2 s.
The machine is shared: each line ends with the 1-minute load average before and after its runs
(``os.getloadavg``; the machine has ``os.cpu_count()`` cores), so a slow figure can be read against it.

    python benchmarks/study_scale.py [--sizes 1000 5000 14000] [--repeats 3] [--old-repeats N] [--root DIR]
                                     [--old-rev REV] [--no-build] [--what read_parquet load analysis resume review]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES_ONLY = "a2cb695^1"  # main just before the outcome table was merged (issue 30)
MODELS = ["gpt-5", "claude-opus-4-1", "gemini-2.5-pro", "qwen-vl-max"]
PROTOCOLS = ["active", "passive"]
SOURCES = ["none", "own", "shared:gpt-5"]
SEEDS, RUNS = 20, 3
WHAT = ("read_parquet", "load", "analysis", "resume", "review")  # and "build", reported once


def specs(n: int) -> list:
    """The first n episodes of a study: run x model x protocol x summary source x task x seed."""
    from vabench.core.condition import Condition
    from vabench.envs.tasks import TASKS, task_class
    from vabench.results.episodes import EpisodeSpec

    tasks = sorted(TASKS)[:14]
    out = []
    for run in range(1, RUNS + 1):
        for src in SOURCES:
            for model in MODELS:
                for protocol in PROTOCOLS:
                    for task in tasks:
                        cls = task_class(task)
                        for seed in range(SEEDS):
                            cond = Condition(model, protocol, src)
                            out.append(EpisodeSpec(cond, task, seed, run, cls.track, cls.summary_task))
                            if len(out) == n:
                                return out
    raise ValueError(f"at most {len(out)} episodes in the synthetic study")


def synthesise(folder: Path, n: int) -> None:
    """A run folder of n episode files and small records (skipped when already complete)."""
    from vabench.results.outcomes import OutcomeRow, write_row
    from vabench.results.recordfile import EVENTS

    done = folder / ".synthesised"
    if done.exists():
        return
    for i, spec in enumerate(specs(n)):
        rec = spec.record_dir(folder)
        rec.mkdir(parents=True, exist_ok=True)
        (rec / EVENTS).write_text(json.dumps({"type": "episode_start", "step": 0}) + "\n")
        ok = i % 17 != 0
        row = OutcomeRow(
            run_id=folder.name, experiment="study", **spec.identity(), arms="single", status="ok" if ok else
            "infra_error", success=ok and i % 3 == 0, end_reason=("stop" if i % 3 else "success") if ok else
            "infra_error", steps=20 + i % 30, budget=50, model_calls=20, prompt_tokens=40000, completion_tokens=900,
            wall_s=60.0 + i % 7, record=(rec / EVENTS).relative_to(folder).as_posix(), prompt_version="v",
            error=None if ok else "synthetic outage",
        )  # fmt: skip
        write_row(spec.outcome_path(folder), row)
    done.write_text("")


def measure(what: str, folder: Path, n: int) -> dict:
    """One timing in this process (``--measure``); the caller runs it in a fresh one."""
    import pandas as pd

    if what == "analysis":  # the CLI as a user runs it (imports included), its failure kept
        import runpy

        t, cpu = time.perf_counter(), time.process_time()
        sys.argv = ["vabench.analysis", str(folder), "--out", tempfile.mkdtemp()]
        try:
            runpy.run_module("vabench.analysis", run_name="__main__")
            failed = False
        except SystemExit as e:
            failed = bool(e.code)
        except Exception:  # noqa: BLE001 - main's analysis crashes on this study (see one())
            failed = True
        return {"s": time.perf_counter() - t, "cpu_s": time.process_time() - cpu, "rows": n, "failed": failed}
    if what == "build":
        from vabench.results.outcometable import TABLE_NAME, refresh

        (folder / TABLE_NAME).unlink(missing_ok=True)
        t = time.perf_counter()
        rows = refresh(folder).rows.num_rows
    elif what == "read_parquet":
        t = time.perf_counter()
        rows = len(pd.read_parquet(folder))
    elif what == "load":
        from vabench.analysis import load_runs

        t = time.perf_counter()
        rows = len(load_runs(folder))
    elif what == "resume":
        from types import SimpleNamespace

        from vabench.run.folder import state as runfolder

        episodes = specs(n)
        runfolder.expand = lambda run: episodes  # the study's episodes, not a config's
        t = time.perf_counter()
        todo, done = runfolder.plan(SimpleNamespace(run_dir=folder, retry_infra=False))
        rows = len(todo) + done
    elif what == "review":
        from fastapi.testclient import TestClient

        from vabench.review.app import create_app

        t = time.perf_counter()
        page = TestClient(create_app([folder]), base_url="http://127.0.0.1").get("/run/0")
        assert page.status_code == 200, page.text[:300]
        rows = len(page.content)  # bytes of the first page
    else:
        raise ValueError(what)
    return {"s": time.perf_counter() - t, "rows": rows}  # cpu_s: only the analysis, whose wall time loads skew


def child(code_root: Path, args: list[str]) -> dict:
    """Run a measurement with ``code_root`` first on the path: its own figures, and its peak RSS
    from /proc (VmHWM: this process alone; rusage's maxrss would carry the parent's over fork)."""
    env = {**os.environ, "PYTHONPATH": str(code_root), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run(args, env=env, capture_output=True, cwd=code_root, text=True)
    last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    if out.returncode != 0 or not last.startswith("{"):
        raise RuntimeError(f"{' '.join(args)} failed: {out.stderr[-2000:]}")
    return json.loads(last)


def one(code_root: Path, what: str, folder: Path, n: int) -> dict:
    # main's analysis crashes printing Table 6 when both protocols have summary sources (fixed in this
    # tree): its time to the crash is kept, marked *, as every table was computed by then
    return child(code_root, [sys.executable, str(Path(__file__).resolve()), "--measure", what, str(folder), str(n)])


def peak_mb() -> float:
    """This process's peak resident memory (VmHWM), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def old_tree(rev: str, into: Path) -> Path:
    """The vabench package as of ``rev`` (git archive), to run the files-only code beside this tree."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "vabench"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def report_build(folder: Path, n: int, made: float) -> None:
    built = one(ROOT, "build", folder, n)  # the table from the files, as a first read makes it
    print(f"| {n} | synthesised in {made:.1f} s; table built from the files in {built['s']:.2f} s, "
          f"{built['rss_mb']:.0f} MB ({built['rows']} rows) | | | | | |", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 14000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--old-repeats", type=int, help="repeats of the files-only side (default --repeats; it is slow)")
    ap.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "vabench-study-scale")
    ap.add_argument("--old-rev", default=FILES_ONLY, help="the code to compare with (git revision; default files only)")
    ap.add_argument("--what", nargs="+", choices=WHAT, default=list(WHAT))
    ap.add_argument("--no-build", action="store_true", help="do not time a table build (keep the folder's table)")
    ap.add_argument("--measure", nargs=3, metavar=("WHAT", "FOLDER", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        what, folder, n = args.measure
        r = measure(what, Path(folder), int(n))
        print(json.dumps({**r, "rss_mb": peak_mb()}))
        return
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        old = old_tree(args.old_rev, Path(tmp) / "old")
        reps = f"{args.old_repeats or args.repeats} / {args.repeats}"
        print(
            f"old: vabench at {args.old_rev}; new: this tree; median of {reps} runs; {os.cpu_count()} cores", flush=True
        )
        print("| episodes | measure | old: s | MB | new: s | MB | load |\n|---|---|---|---|---|---|---|", flush=True)
        for n in args.sizes:
            folder = args.root / f"study-{n}"
            t = time.perf_counter()
            synthesise(folder, n)
            made = time.perf_counter() - t
            if args.no_build:
                print(f"| {n} | synthesised in {made:.1f} s | | | | | |", flush=True)
            else:
                report_build(folder, n, made)
            for what in args.what:
                cells, load = [], os.getloadavg()[0]
                for code, repeats in ((old, args.old_repeats or args.repeats), (ROOT, args.repeats)):
                    runs = [one(code, what, folder, n) for _ in range(repeats)]
                    mark = "*" if any(r.get("failed") for r in runs) else ""
                    cpu = [r["cpu_s"] for r in runs if "cpu_s" in r]
                    cells.append(f"{statistics.median(r['s'] for r in runs):.2f}{mark}"
                                 + (f" (cpu {statistics.median(cpu):.2f})" if cpu else "")
                                 + f" | {statistics.median(r['rss_mb'] for r in runs):.0f}")  # fmt: skip
                print(f"| {n} | {what} | {cells[0]} | {cells[1]} | {load:.1f}-{os.getloadavg()[0]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
