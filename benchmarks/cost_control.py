"""The plan against a run, and a run under a spending limit, with the real launcher against a fake
OpenAI endpoint (``tests/openai_server.py``) whose prompt cache works as OpenAI documents
(``tests/prompt_caching.py``) and whose replies are a deterministic function of the request.

1. **Plan vs actual**: an uncapped run (``ray.address=none``, render ``paper``), timed from launch
   to exit; then the plan of the same config calibrated from that run folder
   (``plan.calibrate=RUN``) against its actual calls, input and output tokens and wall time.
2. **A capped run**: the same config with ``model.max_cost_usd`` at about half the uncapped run's
   cost and ``model.cache=on``: the launcher stops (exit 2), what it spent is compared with the
   limit and with one request's cost; a rerun with a higher limit resumes, and its table is
   compared with the uncapped run's (every column but usage and time), and the dollars billed
   over both launches with the uncapped run's.

    python benchmarks/cost_control.py [--seeds 2] [--delay 0.2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks.prompt_cache import Policy  # noqa: E402
from tests.openai_server import ScriptedServer  # noqa: E402
from tests.prompt_caching import OPENAI, PromptCache  # noqa: E402
from vabench.outcometable import load  # noqa: E402

KEY = "VABENCH_COST_KEY"
TASKS = "[place_cube_in_bowl,grasp_single_cube]"
USAGE = ("model_calls", "provider_attempts", "prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd")
USAGE += ("wall_s", "cache_hits", "limit_wait_s", "backoff_s", "record_digest", "record", "provenance_digest")
USAGE += ("cache_write_tokens", "reasoning_tokens", "provider_retries", "attempt")


class Slow:
    """Each reply after ``delay`` seconds: a provider's latency."""

    def __init__(self, reply, delay: float):
        self.reply, self.delay = reply, delay

    def __call__(self, body: dict):
        return {"delay": self.delay, "then": self.reply(body)}


def launch(server: ScriptedServer, results: Path, run_id: str, seeds: int, *extra: str) -> tuple[int, float, str]:
    args = [
        "model=openai",
        "model.id=openai/gpt-4o",
        f"model.api_base={server.url}",
        f"model.api_key_env={KEY}",
        f"tasks={TASKS}",
        f"seeds={seeds}",
        "render=paper",
        "ray.address=none",
        "probe=false",
        f"results_dir={results}",
        f"run_id={run_id}",
        *extra,
    ]
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vabench.launch", *args], capture_output=True, text=True, cwd=ROOT)
    return done.returncode, time.perf_counter() - t, (done.stdout + done.stderr)[-600:]


def billed(run: Path) -> float:
    """Dollars billed in a run folder with the response cache on: every reply sent is kept once."""
    return sum(json.loads(p.read_text()).get("cost_usd") or 0.0 for p in (run / "_cache").rglob("*.json"))


def planned(run_dir: Path, seeds: int, server: ScriptedServer):
    from tests.test_launch import composed
    from vabench.config.run import from_config
    from vabench.plan.report import _episodes, calibration

    cfg = composed(
        "model=openai",
        "model.id=openai/gpt-4o",
        f"model.api_base={server.url}",
        f"tasks={TASKS}",
        f"seeds={seeds}",
        "render=paper",
        "ray.address=none",
        "run_id=plan",
    )
    run = from_config(cfg, run_dir.parent / "plan")
    total, _, _ = _episodes(run, calibration(str(run_dir)))
    from vabench.plan.estimate import in_flight, wall_time

    return total, wall_time(run, total, total.scaled(0), 0)["episodes"], in_flight(run)


def compare(name: str, plan: float, actual: float) -> None:
    print(f"  {name:16s} plan {plan:12,.1f}   actual {actual:12,.1f}   off {100 * (plan / actual - 1):+6.1f} %")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--delay", type=float, default=0.2)
    args = ap.parse_args()
    os.environ[KEY] = "fake-key"
    fake = Slow(PromptCache(OPENAI, Policy()), args.delay)
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(default=fake) as server:
        results = Path(tmp)
        rc, wall, tail = launch(server, results, "uncapped", args.seeds, "model.cache=on")
        assert rc == 0, tail
        rows = load(results / "uncapped")
        total, plan_wall, flight = planned(results / "uncapped", args.seeds, server)
        print(f"1. plan (calibrated from the run) vs the run: {len(rows)} episodes, {flight} in flight, launch to exit")
        compare("model calls", total.calls, rows["model_calls"].sum())
        compare("input tokens", total.input, rows["prompt_tokens"].sum())
        compare("cached tokens", total.cached, rows["cached_tokens"].sum())
        compare("output tokens", total.output, rows["completion_tokens"].sum())
        compare("wall time (s)", plan_wall, wall)
        full = float(rows["cost_usd"].sum())
        cap = round(full / 2, 4)
        per_request = full / rows["model_calls"].sum()
        server.default = Slow(PromptCache(OPENAI, Policy()), args.delay)  # a fresh provider cache: billed alike
        rc, _, tail = launch(server, results, "capped", args.seeds, "model.cache=on", f"model.max_cost_usd={cap}")
        spent = billed(results / "capped")
        print(
            f"2. capped at ${cap}: exit {rc}; billed ${spent:.4f} (limit + {spent - cap:+.4f}; a request costs about "
            f"${per_request:.4f}); {tail.strip().splitlines()[-1]}"
        )
        rc, _, tail = launch(server, results, "capped", args.seeds, "model.cache=on", f"model.max_cost_usd={full * 2}")
        capped = load(results / "capped")
        keys = ["task", "seed", "run_index"]
        a = capped.drop(columns=[c for c in USAGE if c in capped] + ["run_id"]).sort_values(keys).reset_index(drop=True)
        b = rows.drop(columns=[c for c in USAGE if c in rows] + ["run_id"]).sort_values(keys).reset_index(drop=True)
        same = a.equals(b)
        print(
            f"   rerun with ${full * 2:.2f}: exit {rc}; {len(capped)} rows; table equal to the uncapped run's: {same}; "
            f"billed over both launches ${billed(results / 'capped'):.4f} vs uncapped ${full:.4f}"
        )


if __name__ == "__main__":
    main()
