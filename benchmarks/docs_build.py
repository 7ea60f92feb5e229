"""How long the docs site takes to build: ``mkdocs build --strict`` (the reference pages and the
study's cost table made from the code included), run N times in fresh processes into temporary
folders. Prints each build's wall and CPU seconds (CPU: the build process and its children), their
medians, and the machine's load, since on a shared machine the wall time follows the load.

    .venv/bin/python benchmarks/docs_build.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_once() -> tuple[float, float]:
    """(wall s, CPU s) of one strict build."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", out]
        subprocess.run(cmd, cwd=ROOT, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    walls, cpus = [], []
    for i in range(args.runs):
        wall, cpu = build_once()
        walls.append(wall)
        cpus.append(cpu)
        print(f"build {i + 1}: wall {wall:.1f} s, CPU {cpu:.1f} s, load {os.getloadavg()[0]:.1f}")
    print(f"median of {args.runs}: wall {statistics.median(walls):.1f} s, CPU {statistics.median(cpus):.1f} s "
          f"({os.cpu_count()} CPUs)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
