"""A judge pass's wall time and cost: ``python -m vabench.judge``'s pass (vabench.judge.judge) over
hand-made episode records (tests/test_judge.py's: four tasks, three actions and four recording views
each) against a scripted fake provider over real HTTP (tests/openai_server.py, through LiteLLM,
1000 prompt and 80 completion tokens per reply, priced as openai/gpt-4o-mini), then the rerun,
which the response cache answers. Each repetition uses a fresh run folder.

Prints per repetition and the median: seconds of the first pass and of the rerun, requests sent,
and the usage rows' cost and cache hits.

    python benchmarks/judge.py [--episodes 40] [--samples 3] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from tests.openai_server import ScriptedServer  # noqa: E402
from tests.test_judge import outcome, record, scripted  # noqa: E402
from vabench.agents.chat.model import ModelConfig  # noqa: E402
from vabench.judge import judge  # noqa: E402
from vabench.judge.passes import USAGE  # noqa: E402
from vabench.results.layout import JUDGE  # noqa: E402
from vabench.results.outcomes import write_row  # noqa: E402

KEY_VAR = "VABENCH_JUDGE_BENCH_KEY"


def once(root: Path, episodes: int, samples: int) -> dict:
    run = root / "run"
    for s in range(episodes):
        record(run / "_records" / str(s), s)
        write_row(run / "outcomes" / f"{s}.parquet", outcome(s))
    with ScriptedServer(default=scripted()) as server:
        cfg = ModelConfig(id="openai/gpt-4o-mini", name="bench", api_base=server.url, api_key_env=KEY_VAR)
        t0 = time.perf_counter()
        judge(run, cfg, samples)
        first = time.perf_counter() - t0
        cost = float(pd.read_parquet(run / JUDGE / USAGE)["cost_usd"].sum())
        sent = len(server.requests)
        t0 = time.perf_counter()
        judge(run, cfg, samples)
        rerun = time.perf_counter() - t0
        usage = pd.read_parquet(run / JUDGE / USAGE)
    return {"first_s": first, "rerun_s": rerun, "requests": sent, "again": len(server.requests) - sent,
            "cost_usd": cost, "rerun_cost_usd": float(usage["cost_usd"].sum()),
            "rerun_hits": int(usage["cache_hits"].sum())}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    os.environ[KEY_VAR] = "sk-bench-not-a-real-key"
    runs = []
    for k in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(once(Path(tmp), args.episodes, args.samples))
        print(f"repeat {k + 1}: {runs[-1]}")
    med = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    items = args.episodes * args.samples
    print(f"median of {args.repeats}: {items} items, first pass {med['first_s']:.2f} s "
          f"({items / med['first_s']:.1f} items/s), rerun {med['rerun_s']:.2f} s with {med['again']:.0f} requests "
          f"and ${med['rerun_cost_usd']:.4f}; first pass ${med['cost_usd']:.4f} "
          f"for {med['requests']:.0f} requests")  # fmt: skip


if __name__ == "__main__":
    main()
