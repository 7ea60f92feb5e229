"""The results site at study scale: ``python -m vabench.site RUN --out DIR`` over the synthetic
study folders of ``benchmarks/study_scale.py`` (the real outcome schema, one small event record per
episode; 6,720 episodes = one run of 4 models x 2 protocols x 3 summary sources x 14 tasks x 20
seeds), each build in a fresh process, median of --repeats.

Prints per size: build wall time and CPU time (the machine is shared: CPU time is what the build
costs, wall time what a user waits; each line ends with the 1-minute load average), the site's
files, bytes, HTML pages, the largest HTML page and how many pages exceed 2 MB (none may).

    python benchmarks/site.py [--sizes 6720 14000] [--repeats 3] [--root DIR] [--media link|none]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 2 * 1024 * 1024  # no HTML page above this (issue 42)


def build_once(folder: Path, out: Path, media: str) -> dict:
    """One build in a fresh process: wall and CPU seconds (the child's, from rusage)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = os.times()
    t = time.perf_counter()
    cmd = [sys.executable, "-m", "vabench.site", str(folder), "--out", str(out), "--media", media]
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = os.times()
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"wall_s": wall, "cpu_s": cpu}


def measure(out: Path) -> dict:
    """Files, bytes, HTML pages, the largest page and the pages over the limit."""
    files = [p for p in out.rglob("*") if p.is_file()]
    html = {p: p.stat().st_size for p in files if p.suffix == ".html"}
    largest = max(html, key=html.get)
    return {
        "files": len(files),
        "mb": sum(p.stat().st_size for p in files) / 1e6,
        "pages": len(html),
        "largest": f"{largest.relative_to(out)} ({html[largest] / 1024:.0f} KiB)",
        "over_2mb": sum(1 for s in html.values() if s > LIMIT),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[6720, 14000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "vabench-study-scale")
    ap.add_argument("--media", choices=("link", "none"), default="link")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from study_scale import synthesise

    print(f"python -m vabench.site, median of {args.repeats} builds, {os.cpu_count()} cores", flush=True)
    print("| episodes | build: wall s | CPU s | files | MB | HTML pages | largest page | pages > 2 MB | load |")
    print("|---|---|---|---|---|---|---|---|---|", flush=True)
    for n in args.sizes:
        folder = args.root / f"study-{n}"
        synthesise(folder, n)  # cached: made once
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="vabench-site-") as tmp:
            runs = [build_once(folder, Path(tmp) / f"site{i}", args.media) for i in range(args.repeats)]
            size = measure(Path(tmp) / "site0")
        wall, cpu = (statistics.median(r[k] for r in runs) for k in ("wall_s", "cpu_s"))
        cells = [n, f"{wall:.1f}", f"{cpu:.1f}", size["files"], f"{size['mb']:.1f}", size["pages"], size["largest"]]
        cells += [size["over_2mb"], f"{load:.1f}-{os.getloadavg()[0]:.1f}"]
        print("| " + " | ".join(map(str, cells)) + " |", flush=True)


if __name__ == "__main__":
    main()
