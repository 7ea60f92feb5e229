"""Decisions per second with many episodes in flight, against a model that always takes 1.0 s.

A local OpenAI-compatible server (tests/openai_server.py) answers every request after a fixed
delay with a cheap robot action, so an ideal harness achieves N decisions/s with N episodes in
flight. The real driver runs the episodes (Ray actors, one env each) through LiteLLM over HTTP;
achieved decisions/s = the sum over concurrent episodes of model calls / episode wall time (each
episode is 50 decisions, ~55 s, so the workers' staggered start matters little), median of
--repeats.
Target: >= 0.85 of ideal at 8 concurrent episodes on a 2-core machine.

    python benchmarks/throughput.py [--levels 1 4 8] [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from tests.openai_server import ScriptedServer  # noqa: E402
from tests.test_launch import composed  # noqa: E402
from vabench.run.config.run import from_config  # noqa: E402
from vabench.run.driver import Driver  # noqa: E402

DELAY_S = 1.0
KEY_VAR = "VABENCH_BENCH_KEY"


def run_level(server: ScriptedServer, n: int, root: Path) -> float:
    """Aggregate decisions/s of n concurrent episodes: the sum over episodes of model calls per
    episode wall time (workers are warm before their episode starts, see EpisodeWorker)."""
    overrides = [
        "model=openai",
        "model.id=openai/bench-model",
        f"model.api_base={server.url}",
        f"model.api_key_env={KEY_VAR}",
        f"model.max_concurrency={n}",
        "tasks=[grasp_single_cube]",
        f"seeds={n}",
        f"ray.env_actors={n}",
        f"ray.actor_cpus={2 / max(n, 2)}",
        f"results_dir={root}",
        f"run_id=n{n}-{time.time_ns()}",
    ]
    cfg = composed(*overrides)
    run = from_config(cfg, root / cfg["run_id"])
    df = Driver(run, log=lambda *_: None, progress=False).execute()
    assert (df["status"] == "ok").all(), df["error"].tolist()
    return float((df["model_calls"] / df["wall_s"]).sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    os.environ.setdefault(KEY_VAR, "bench-key")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    ray.init(address="local", include_dashboard=False, log_to_driver=False)
    reply = json.dumps({"action": "gripper.open", "reason": "benchmark"})
    rows = []
    with ScriptedServer(default={"delay": DELAY_S, "then": reply}) as server, tempfile.TemporaryDirectory() as tmp:
        for n in args.levels:
            rates = [run_level(server, n, Path(tmp)) for _ in range(args.repeats)]
            rate = statistics.median(rates)
            rows.append((n, rate, n / DELAY_S))
            ideal = n / DELAY_S
            print(
                f"{n:2d} in flight: {rate:5.2f} decisions/s, ideal {ideal:4.1f}, ratio {rate / ideal:4.2f}", flush=True
            )
    ray.shutdown()
    print("\n| episodes in flight | decisions/s | ideal | ratio |\n|---|---|---|---|")
    for n, rate, ideal in rows:
        print(f"| {n} | {rate:.2f} | {ideal:.1f} | {rate / ideal:.2f} |")


if __name__ == "__main__":
    main()
