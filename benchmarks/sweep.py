"""A sweep over three models against one Ray cluster: wall time of ``-m`` over three model ids with
the joblib launcher (jobs at once), against one model alone, in the same run.

A local Ray cluster (``ray start --head``) stands for the cluster; a local OpenAI-compatible server
(tests/openai_server.py) answers every request after a fixed latency, ``--moves`` moves and then a
stop per episode. Each launch is the real launcher in its own process, connected to that cluster
(``ray.address=127.0.0.1:P``), with the same seeds. Target: the sweep takes about as long as one
model (ratio near 1), not three times as long. Printed: median wall time of ``--repeats`` launches
of each, alternated, and their ratio; and the same for the model phase (the server's first request
to its last), which leaves out start-up (Python, Ray connection, worker start, shader compile). The
start-up of three jobs at once contends for this machine's 2 cores; a cluster's nodes do not.

    python benchmarks/sweep.py [--latency 3] [--moves 8] [--seeds 4] [--repeats 3]
"""

from __future__ import annotations

import argparse
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
from tests.test_cluster import _free_port, stop_after  # noqa: E402

KEY_VAR = "VABENCH_BENCH_KEY"
RAY = str(Path(sys.executable).with_name("ray"))
MODELS = "openai/a,openai/b,openai/c"


def replies(latency: float, moves: int):
    then = stop_after(moves)
    return lambda body: {"delay": latency, "then": then(body)}


def launch(env: dict, results: Path, run_id: str, server: ScriptedServer, address: str, seeds: int, *more: str):
    cmd = [sys.executable, "-m", "vabench.launch", *more, "+experiment=smoke", "model=openai"]
    cmd += [f"model.api_key_env={KEY_VAR}", f"model.api_base={server.url}", "tasks=[grasp_single_cube]"]
    cmd += [f"seeds={seeds}", f"ray.address={address}", "ray.env_actors=1", f"ray.episodes_per_actor={seeds}"]
    cmd += [f"results_dir={results}", f"run_id={run_id}"]
    first, started = len(server.times), time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{run_id} failed:\n{done.stderr[-3000:]}")
    times = server.times[first:]
    return wall, times[-1] - times[0]  # the launch, and its model phase (first request to last)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency", type=float, default=3.0, help="seconds per model reply")
    ap.add_argument("--moves", type=int, default=8, help="moves per episode before it stops")
    ap.add_argument("--seeds", type=int, default=4, help="episodes per model, all in flight at once")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    port = _free_port()
    ray_tmp = Path(tempfile.mkdtemp(prefix="vbsw", dir="/tmp"))
    env = {**os.environ, KEY_VAR: "sk-bench", "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    head = subprocess.Popen(
        [RAY, "start", "--head", "--port", str(port), "--temp-dir", str(ray_tmp), "--include-dashboard=false"],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    head.wait(timeout=120)
    address = f"127.0.0.1:{port}"
    singles, sweeps, single_spans, sweep_spans = [], [], [], []
    try:
        with tempfile.TemporaryDirectory() as results, ScriptedServer(default=replies(args.latency, args.moves)) as srv:
            for i in range(args.repeats):
                wall, span = launch(env, Path(results), f"one{i}", srv, address, args.seeds, "model.id=openai/a")
                singles.append(wall), single_spans.append(span)
                sweep = ("-m", f"model.id={MODELS}", "hydra/launcher=joblib", "hydra.launcher.n_jobs=3")
                wall, span = launch(env, Path(results), f"three{i}", srv, address, args.seeds, *sweep)
                sweeps.append(wall), sweep_spans.append(span)
                print(
                    f"repeat {i + 1}: one model {singles[-1]:.1f} s (model phase {single_spans[-1]:.1f} s), "
                    f"three models {sweeps[-1]:.1f} s (model phase {sweep_spans[-1]:.1f} s)",
                    flush=True,
                )
    finally:
        os.killpg(head.pid, signal.SIGKILL)
        subprocess.run(["rm", "-rf", str(ray_tmp)], check=False)
    one, three = statistics.median(singles), statistics.median(sweeps)
    one_span, three_span = statistics.median(single_spans), statistics.median(sweep_spans)
    ideal = (args.moves + 1) * args.latency
    print(
        f"\n{args.seeds} episodes per model, {args.moves + 1} calls of {args.latency:g} s each "
        f"(>= {ideal:.0f} s of model latency per episode)"
    )
    print(f"one model:    median {one:.1f} s over {args.repeats} launches; model phase {one_span:.1f} s")
    print(f"three models: median {three:.1f} s (joblib launcher, 3 jobs at once); model phase {three_span:.1f} s")
    print(f"ratio three/one: {three / one:.2f} launch to exit, {three_span / one_span:.2f} model phase (serial: ~3)")


if __name__ == "__main__":
    main()
