"""Time from Ctrl-C to the launcher's exit when episodes are in flight on Ray (issue 29: it took
28 s; the target is 5 s).

Each repeat starts ``python -m vabench.launch`` on local Ray against a slow scripted
OpenAI-compatible server (tests/openai_server.py, real HTTP), waits until the model has answered
at least one request of every episode in flight, sends SIGINT to the launcher's process group (as a
terminal's Ctrl-C does), and times until the launcher and the Ray
it started have exited. Prints each time, the median and the exit status (130 expected).

    python benchmarks/ctrl_c.py [--repeats 3] [--episodes 2]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.openai_server import ScriptedServer  # noqa: E402

MOVE = json.dumps({"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 10})
KEY_VAR = "VABENCH_BENCH_KEY"


def once(results: Path, episodes: int) -> tuple[float, int]:
    with ScriptedServer(default={"delay": 0.5, "then": MOVE}) as server:
        cmd = [sys.executable, "-m", "vabench.launch", "+experiment=smoke", "model=openai", "model.id=openai/slow",
               f"model.api_key_env={KEY_VAR}", f"model.api_base={server.url}", "tasks=[grasp_single_cube]",
               f"seeds={episodes}", "ray.env_actors=1", f"results_dir={results}", "run_id=ctrlc",
               "probe=false"]  # fmt: skip
        env = {**os.environ, KEY_VAR: "sk-bench", "RAY_AUTH_MODE": "disabled", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            while len(server.requests) < 2 * episodes:  # every episode has had a reply
                if proc.poll() is not None:
                    raise SystemExit(f"the launcher ended before the episodes were in flight (exit {proc.returncode})")
                time.sleep(0.05)
            os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole foreground group
            sent = time.perf_counter()
            code = proc.wait(timeout=120)
            return time.perf_counter() - sent, code
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=2)
    args = parser.parse_args()
    times = []
    for i in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            took, code = once(Path(tmp), args.episodes)
        times.append(took)
        print(f"repeat {i + 1}: exit {code} {took:.2f} s after Ctrl-C (load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"median Ctrl-C to exit: {statistics.median(times):.2f} s over {args.repeats} repeats (target 5 s)")


if __name__ == "__main__":
    main()
