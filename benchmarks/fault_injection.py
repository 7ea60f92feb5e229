"""A flaky provider at scale: every episode is judged or marked infra, none lost or duplicated, and
the provider counts in the outcome rows equal what the server logged.

A local OpenAI-compatible server (tests/openai_server.py, :class:`Faults`) fails ``--rate`` of all
requests with a mix of 500s, 429s with Retry-After, replies slower than the client's timeout and
malformed 200 bodies; otherwise it answers three moves and a stop per episode. The real driver runs
the episodes through LiteLLM over HTTP (Ray, or in process with ``--address none``):

1. first pass, ``max_attempts=1``: each episode runs exactly once, so the rows must account for
   every request the server saw: sum(provider_attempts) = requests, sum(model_calls) = answered
   requests, sum(provider_attempts - model_calls) = injected faults;
2. a rerun of the same run folder (the default ``retry_infra``, again one attempt each): the infra
   rows, and only they, run again as their next attempt, and the new requests equal the retried
   rows' provider_attempts.

    python benchmarks/fault_injection.py [--episodes 40] [--rate 0.3] [--address local]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from tests.openai_server import Faults, ScriptedServer  # noqa: E402
from tests.test_launch import composed  # noqa: E402
from vabench.run.config.run import from_config  # noqa: E402
from vabench.run.driver import Driver  # noqa: E402

KEY_VAR = "VABENCH_BENCH_KEY"
TASKS = ("grasp_single_cube", "place_cube_in_bowl")
MOVE = json.dumps({"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 10})
STOP = json.dumps({"stop": True, "reason": "benchmark over"})
KEY = ["task", "seed", "protocol", "run_index"]


def three_moves_then_stop(body: dict) -> str:
    answered = sum(m.get("role") == "assistant" for m in body.get("messages", []))
    return MOVE if answered < 3 else STOP


def _run(server: ScriptedServer, root: Path, episodes: int, address: str, max_attempts: int):
    overrides = [
        "+experiment=smoke",
        "model=openai",
        "model.id=openai/flaky",
        f"model.api_key_env={KEY_VAR}",
        f"model.api_base={server.url}",
        "model.timeout_s=3.0",  # an answered request never comes near it, even on a loaded machine
        "model.max_retries=2",
        "model.backoff_initial_s=0.05",
        "model.backoff_max_s=1.0",
        f"tasks=[{','.join(TASKS)}]",
        f"seeds={-(-episodes // len(TASKS))}",
        f"max_attempts={max_attempts}",
        f"ray.address={address}",
        "ray.env_actors=4",
        f"results_dir={root}",
        "run_id=flaky",
    ]
    cfg = composed(*overrides)
    run = from_config(cfg, root / "flaky")
    driver = Driver(run, log=lambda *_: None, progress=False)
    return driver.execute(), driver.counts


def measure(episodes: int = 40, rate: float = 0.3, address: str = "local", seed: int = 0) -> dict:
    """Both passes; returns the figures and whether each accounting check holds."""
    os.environ.setdefault(KEY_VAR, "sk-bench-not-a-secret")
    faults = Faults(three_moves_then_stop, rate=rate, seed=seed, retry_after_s=0.2, slow_s=4.0)
    with ScriptedServer(default=faults) as server, tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        first, _ = _run(server, Path(tmp), episodes, address, max_attempts=1)
        wall = time.perf_counter() - t0
        fates = Counter(faults.log)
        requests = len(server.requests)
        infra = first[first["status"] == "infra_error"]
        out = {
            "episodes": int(len(first)),
            "unique_episodes": int(len(first.drop_duplicates(KEY))),
            "judged": int((first["status"] == "ok").sum()),
            "infra": int(len(infra)),
            "requests_logged": requests,
            "faults_logged": dict(sorted((k, v) for k, v in fates.items() if k != "ok")),
            "answered_logged": fates["ok"],
            "rows_provider_attempts": int(first["provider_attempts"].sum()),
            "rows_model_calls": int(first["model_calls"].sum()),
            "rows_provider_retries": int(first["provider_retries"].sum()),
            "rows_backoff_s": round(float(first["backoff_s"].sum()), 2),
            "first_pass_wall_s": round(wall, 1),
        }
        before = len(server.requests)
        second, _ = _run(server, Path(tmp), episodes, address, max_attempts=1)
        retried = second[second["attempt"] > 1]
        out.update(
            rerun_retried=int(len(retried)),
            rerun_requests_logged=len(server.requests) - before,
            rerun_rows_provider_attempts=int(retried["provider_attempts"].sum()),
            rerun_judged=int((second["status"] == "ok").sum()),
            rerun_rows=int(len(second)),
        )
    out["checks"] = {
        "every episode has one row": out["episodes"] == out["unique_episodes"] == episodes,
        "every row judged or infra": out["judged"] + out["infra"] == episodes,
        "attempts = requests logged": out["rows_provider_attempts"] == requests,
        "model_calls = answered requests": out["rows_model_calls"] == out["answered_logged"],
        "failed attempts = faults logged": out["rows_provider_attempts"] - out["rows_model_calls"]
        == sum(out["faults_logged"].values()),
        "rerun retries exactly the infra rows": out["rerun_retried"] == out["infra"],
        "rerun attempts = requests logged": out["rerun_rows_provider_attempts"] == out["rerun_requests_logged"],
        "rerun keeps one row per episode": out["rerun_rows"] == episodes,
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--rate", type=float, default=0.3)
    ap.add_argument("--address", default="local", help="ray.address: local, none (in process), or a cluster")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = measure(args.episodes, args.rate, args.address, args.seed)
    print(json.dumps(out, indent=2))
    if not all(out["checks"].values()):
        sys.exit("a check failed")


if __name__ == "__main__":
    main()
