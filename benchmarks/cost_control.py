"""The plan against runs, and a run under a spending limit, with the real launcher against a fake
OpenAI endpoint (``tests/openai_server.py``) priced as ``openai/gpt-4o``, whose prompt cache works as
OpenAI documents (``tests/prompt_caching.py``) and whose replies are a deterministic function of
the request (``benchmarks/plan_replies.py``: a failing model's, or the servo agent's decisions).

1. **Plan vs measured, per protocol, uncalibrated**: for each protocol, a run with failing replies
   and a run with the servo's (``ray.address=none``, render ``paper``, on the first verified seeds:
   the shipped priors were measured on the last ones); measured calls and dollars per episode mix
   the two runs' episodes per task at the paper's success rate, as the priors do (a task where the
   servo succeeded nowhere counts its successes as failing episodes); the plan is the shipped
   priors' (``vabench/plan/priors.json``), no ``plan.calibrate``.
2. **Calibrated**: the plan of the failing active run's config calibrated from that run folder
   (``plan.calibrate=RUN``) against its actual calls, tokens and wall time (launch to exit).
3. **A capped run**: that config with ``model.max_cost_usd`` at about half the failing run's cost
   and ``model.cache=on``: the launcher stops (exit 2), what it spent is compared with the limit and
   with one request's cost; a rerun with a higher limit resumes, and its table is compared with the
   uncapped run's (every column but usage and time), and the dollars billed over both launches with
   the uncapped run's.

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

from benchmarks.plan_replies import Failing, ServoReplies  # noqa: E402
from tests.openai_server import ScriptedServer  # noqa: E402
from tests.prompt_caching import OPENAI, PromptCache  # noqa: E402
from vabench.core.vocab import ACTIVE, PROTOCOLS  # noqa: E402
from vabench.results.outcometable import load  # noqa: E402

KEY = "VABENCH_COST_KEY"
TASKS = "[place_cube_in_bowl,grasp_single_cube]"
USAGE = ("model_calls", "provider_attempts", "prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd")
USAGE += ("wall_s", "cache_hits", "limit_wait_s", "backoff_s", "record_digest", "record", "provenance_digest")
USAGE += ("cache_write_tokens", "reasoning_tokens", "provider_retries", "attempt", "model_latency_s")


class Slow:
    """Each reply after ``delay`` seconds: a provider's latency."""

    def __init__(self, reply, delay: float):
        self.reply, self.delay = reply, delay

    def __call__(self, body: dict):
        return {"delay": self.delay, "then": self.reply(body)}


def replies(protocol: str, arm: str, delay: float) -> Slow:
    """A fresh fake provider (its own prompt cache) answering as ``arm`` does (single-arm tasks)."""
    policy = ServoReplies(protocol) if arm == "servo" else Failing(("right",), protocol == ACTIVE.name)
    return Slow(PromptCache(OPENAI, policy, output_tokens=None), delay)


def launch(server: ScriptedServer, results: Path, run_id: str, seeds, *extra: str, tasks: str = TASKS):
    args = [
        "model=openai",
        "model.id=openai/gpt-4o",
        f"model.api_base={server.url}",
        f"model.api_key_env={KEY}",
        f"tasks={tasks}",
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


def planned(seeds, server: ScriptedServer, protocol: str, calibrate: Path | None = None, tasks: str = TASKS):
    """The plan's episodes of the benchmark's config in ``protocol`` (``calibrate``: from that run)."""
    from tests.test_launch import composed
    from vabench.agents.models.llm import prices
    from vabench.plan.calibrate import calibration
    from vabench.plan.estimate import in_flight, wall_time
    from vabench.plan.report import _episodes
    from vabench.run.config.run import from_config

    cfg = composed(
        "model=openai",
        "model.id=openai/gpt-4o",
        f"model.api_base={server.url}",
        f"tasks={tasks}",
        f"seeds={seeds}",
        f"protocol={protocol}",
        "render=paper",
        "ray.address=none",
        "run_id=plan",
    )
    run = from_config(cfg, Path(tempfile.gettempdir()) / "plan")
    total, _, _ = _episodes(run, calibration(str(calibrate)) if calibrate else None)
    wall = wall_time(run, total, total.scaled(0), 0)["episodes"]
    return total, total.cost(prices(run.model.id)), wall, in_flight(run)


def compare(name: str, plan: float, actual: float) -> None:
    print(f"  {name:16s} plan {plan:12,.1f}   actual {actual:12,.1f}   off {100 * (plan / actual - 1):+6.1f} %")


def mixed(failing, servo, protocol: str) -> tuple[float, float, str]:
    """Calls and dollars per episode of the two runs mixed per task at the priors' success rate."""
    from vabench.plan.priors import cell

    calls = dollars = 0.0
    notes, tasks = [], sorted(failing["task"].unique())
    for task in tasks:
        rate = cell(task, protocol).success_rate
        f = failing[failing["task"] == task]
        won = servo[(servo["task"] == task) & servo["success"].astype(bool)]
        s = won if len(won) else f
        notes.append(f"{task} rate {rate:.2f}, servo {len(won)}/{int((servo['task'] == task).sum())}")
        calls += (1 - rate) * f["model_calls"].mean() + rate * s["model_calls"].mean()
        dollars += (1 - rate) * f["cost_usd"].mean() + rate * s["cost_usd"].mean()
    return calls / len(tasks), dollars / len(tasks), "; ".join(notes)


def per_protocol(server: ScriptedServer, results: Path, seeds: int, delay: float) -> None:
    """Section 1: the shipped priors' plan against measured runs, per protocol."""
    print("1. plan (shipped priors, uncalibrated) vs measured, per episode (failing and servo runs mixed per task)")
    print("  protocol  calls: plan  measured    off    $: plan  measured    off   (per task: paper rate, servo won)")
    for protocol in PROTOCOLS:
        runs = {}
        for arm in ("failing", "servo"):
            server.default = replies(protocol, arm, delay)
            rc, _, tail = launch(server, results, f"{protocol}-{arm}", seeds, f"protocol={protocol}")
            assert rc == 0, tail
            runs[arm] = load(results / f"{protocol}-{arm}")
        calls, dollars, notes = mixed(runs["failing"], runs["servo"], protocol)
        total, cost, _, _ = planned(seeds, server, protocol)
        pc, pd = total.calls / total.episodes, cost / total.episodes
        print(
            f"  {protocol:8s} {pc:11.1f} {calls:9.1f} {100 * (pc / calls - 1):+6.1f} %  {pd:7.3f} {dollars:9.3f} "
            f"{100 * (pd / dollars - 1):+6.1f} %   ({notes})"
        )


def calibrated(server: ScriptedServer, results: Path, seeds: int, delay: float) -> float:
    """Section 2: a failing active run against the plan calibrated from it; returns its dollars."""
    server.default = replies(ACTIVE.name, "failing", delay)
    rc, wall, tail = launch(server, results, "uncapped", seeds, "model.cache=on")
    assert rc == 0, tail
    rows = load(results / "uncapped")
    total, _, plan_wall, flight = planned(seeds, server, ACTIVE.name, results / "uncapped")
    print(f"2. plan calibrated from a failing active run vs that run: {len(rows)} episodes, {flight} in flight")
    compare("model calls", total.calls, rows["model_calls"].sum())
    compare("input tokens", total.input, rows["prompt_tokens"].sum())
    compare("cached tokens", total.cached, rows["cached_tokens"].sum())
    compare("output tokens", total.output, rows["completion_tokens"].sum())
    compare("wall time (s)", plan_wall, wall)
    return float(rows["cost_usd"].sum())


def capped(server: ScriptedServer, results: Path, seeds: int, delay: float, full: float) -> None:
    """Section 3: a run capped at half the uncapped run's dollars, then resumed with a higher cap."""
    rows = load(results / "uncapped")
    cap = round(full / 2, 4)
    per_request = full / rows["model_calls"].sum()
    server.default = replies(ACTIVE.name, "failing", delay)  # a fresh provider cache: billed alike
    rc, _, tail = launch(server, results, "capped", seeds, "model.cache=on", f"model.max_cost_usd={cap}")
    spent = billed(results / "capped")
    print(
        f"3. capped at ${cap}: exit {rc}; billed ${spent:.4f} (limit + {spent - cap:+.4f}; a request costs about "
        f"${per_request:.4f}); {tail.strip().splitlines()[-1]}"
    )
    rc, _, tail = launch(server, results, "capped", seeds, "model.cache=on", f"model.max_cost_usd={full * 2}")
    capped = load(results / "capped")
    keys = ["task", "seed", "run_index"]
    a = capped.drop(columns=[c for c in USAGE if c in capped] + ["run_id"]).sort_values(keys).reset_index(drop=True)
    b = rows.drop(columns=[c for c in USAGE if c in rows] + ["run_id"]).sort_values(keys).reset_index(drop=True)
    differ = [c for c in a.columns if c not in b or not a[c].equals(b[c])] if a.shape == b.shape else ["rows"]
    print(
        f"   rerun with ${full * 2:.2f}: exit {rc}; {len(capped)} rows; table equal to the uncapped run's: "
        f"{a.equals(b)}{f' (differ: {differ})' if differ else ''}; billed over both launches "
        f"${billed(results / 'capped'):.4f} vs uncapped ${full:.4f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--only", choices=("plan", "limits", "all"), default="all", help="plan: section 1; limits: 2-3")
    args = ap.parse_args()
    os.environ[KEY] = "fake-key"
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(keep_bodies=False) as server:
        results = Path(tmp)
        if args.only != "limits":
            per_protocol(server, results, args.seeds, args.delay)
        if args.only != "plan":
            full = calibrated(server, results, args.seeds, args.delay)
            capped(server, results, args.seeds, args.delay, full)


if __name__ == "__main__":
    main()
