"""Export time and size of LeRobot datasets (``python -m vabench.export lerobot``).

Exports a run folder (default: a new oracle run at ``render=small`` over ``--tasks`` x ``--seeds``,
made once in ``--out``; or ``--run RUN``) and the cached demonstrations of ``--demo-tasks`` at
``--demo-render`` (recorded first when missing), ``--repeats`` times each, and prints per source the
episodes and frames, the median seconds per episode of the whole export (reading, replaying the
expert for demonstrations, encoding, statistics), and the dataset's size on disk split into videos,
frame tables and metadata, beside the size of the source images it encodes.

    python benchmarks/export.py [--tasks grasp_single_cube click_bell_right place_cube_in_bowl] [--seeds 2]
                                [--demo-tasks grasp_single_cube lift_pot] [--demo-render paper]
                                [--repeats 3] [--run RUN] [--out DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_verify import run_folder  # noqa: E402
from vabench.envs.demo_recorder import demo_dir, record  # noqa: E402
from vabench.export.__main__ import export  # noqa: E402


def size_mb(folder: Path, pattern: str = "*") -> float:
    return sum(p.stat().st_size for p in folder.rglob(pattern) if p.is_file()) / 1e6


def measure(label: str, source: Path, out: Path, repeats: int, **kwargs) -> None:
    """Export ``source`` ``repeats`` times; print the median seconds per episode and the sizes."""
    times, done = [], None
    for i in range(repeats):
        target = out / f"{label}-{i}"
        shutil.rmtree(target, ignore_errors=True)
        start = time.perf_counter()
        done = export(source, target, progress=False, **kwargs)
        times.append((time.perf_counter() - start) / done["episodes"])
    ds = out / f"{label}-{repeats - 1}"
    print(
        f"{label}: {done['episodes']} episodes, {done['frames']} frames, cameras {', '.join(done['cameras'])}; "
        f"export {statistics.median(times):.2f} s per episode (median of {repeats}: "
        f"{', '.join(f'{t:.2f}' for t in times)}); on disk {size_mb(ds):.2f} MB "
        f"(videos {size_mb(ds / 'videos'):.2f}, frame tables {size_mb(ds / 'data'):.3f}, "
        f"meta {size_mb(ds / 'meta'):.3f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", nargs="+", default=["grasp_single_cube", "click_bell_right", "place_cube_in_bowl"])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--demo-tasks", nargs="+", default=["grasp_single_cube", "lift_pot"])
    ap.add_argument("--demo-render", default="paper")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--run", type=Path, help="an existing run folder (default: a new oracle run in --out)")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "vabench-export-bench")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    run = args.run
    if run is None:
        run = args.out / "oracle"
        if not (run / "outcomes").is_dir():
            run_folder(args.out, "oracle", f"[{','.join(args.tasks)}]", f"seeds={args.seeds}")
    frames = size_mb(run / "_records", "frames/step_*")
    print(f"run {run}: model-facing frames {frames:.2f} MB")
    measure("run", run, args.out, args.repeats)
    for task in args.demo_tasks:
        record(task, preset=args.demo_render)
    demos = demo_dir(args.demo_tasks[0], preset=args.demo_render).parent
    measure(f"demos-{args.demo_render}", demos, args.out, args.repeats, tasks=tuple(args.demo_tasks))


if __name__ == "__main__":
    main()
