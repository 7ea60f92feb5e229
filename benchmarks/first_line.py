"""Time from starting the launcher to its first output line when ``model.api_base`` points at a
port where nothing listens (issue 29: it used to take 3 min 41 s per episode, with 67 log lines).

Each repeat starts ``python -m vabench.launch`` afresh (imports included, as a user pays them) and
reads its merged output until the first line; prints each time, the median, the line and the exit
status, and checks that no run folder was made.

    python benchmarks/first_line.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def once(results: Path) -> tuple[float, str, int]:
    base = f"http://127.0.0.1:{dead_port()}/v1"
    cmd = [sys.executable, "-m", "vabench.launch", "model=vllm", "model.id=hosted_vllm/x", f"model.api_base={base}",
           f"results_dir={results}", "run_id=dead", "tasks=[grasp_single_cube]", "seeds=1"]  # fmt: skip
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first = proc.stdout.readline().rstrip()
    took = time.perf_counter() - started
    proc.stdout.read()
    return took, first, proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        times = []
        for i in range(args.repeats):
            took, first, rc = once(results)
            times.append(took)
            print(f"run {i + 1}: {took:.2f} s to the first line (exit {rc}): {first}")
        assert not results.exists(), "a run folder was left behind"
    print(f"median time to the first line: {statistics.median(times):.2f} s over {len(times)} runs")


if __name__ == "__main__":
    main()
