"""One key, several jobs: do parallel jobs of one model together stay under the provider's limit,
and still use all of it? (Issue 41, docs/limits.md.)

A local OpenAI-compatible server (tests/openai_server.py) enforces 60 requests in any sliding
60 s (a 429 with Retry-After past it) and answers each episode request at once with the next move
of a closed cycle, then stop after ``--moves``. The real launcher runs ``k`` jobs of one model and
key side by side (``-m ... hydra/launcher=joblib hydra.launcher.n_jobs=k``, in process:
``ray.address=none``), each at ``model.rpm=60``: the key's shared budget must split the 60 among
them. The same total work is split over the jobs (``--episodes`` episodes in all), so each setting
sends about ``episodes x (moves + 1)`` requests, about 3 minutes' worth at 60 rpm.

Per setting it prints the most requests the provider saw (accepted or refused) in any 60 s, the
throughput (episode requests per minute from the first to the last; the endpoint probes each job
sends at start are in the window count, not in the throughput), the 429s, and the wall time of a
run; the median over ``--repeats`` runs. ``--control`` adds 2 jobs with ``model.share_limits=false``
(each job paces alone, as before issue 41).

    python benchmarks/shared_limit.py [--jobs 1 2 4] [--repeats 3] [--episodes 8] [--moves 21] [--control]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.concurrency import CYCLE  # noqa: E402
from tests.openai_server import RateLimit, ScriptedServer  # noqa: E402

KEY_VAR = "VABENCH_BENCH_KEY"
LIMIT, WINDOW_S = 60, 60.0
STOP = json.dumps({"stop": True})


class Arrivals:
    """Logs each request's arrival (time.monotonic(), as RateLimit counts) and whether it is an
    episode's (a probe carries no ``job``), then lets ``inner`` answer."""

    def __init__(self, inner):
        self.inner, self.times, self._lock = inner, [], threading.Lock()

    def __call__(self, body: dict):
        with self._lock:
            self.times.append((time.monotonic(), "job" in body))
        return self.inner(body)


def moves_then_stop(moves: int):
    def reply(body: dict) -> str:
        answered = sum(m.get("role") == "assistant" for m in body.get("messages", []))
        return CYCLE[answered % len(CYCLE)] if answered < moves else STOP

    return reply


def command(server: ScriptedServer, root: Path, jobs: int, episodes: int, share: bool) -> list[str]:
    names = ",".join(f"j{i}" for i in range(jobs))
    return [
        sys.executable,
        "-m",
        "vabench.launch",
        "-m",
        "+experiment=smoke",
        "model=openai",
        "model.id=openai/bench-model",
        f"model.api_key_env={KEY_VAR}",
        f"model.api_base={server.url}",
        f"model.rpm={LIMIT}",
        f"model.share_limits={str(share).lower()}",
        "model.backoff_max_s=10",
        f"+model.extra.extra_body.job={names}",
        "tasks=[grasp_single_cube]",
        f"seeds={-(-episodes // jobs)}",
        "ray.address=none",
        "hydra/launcher=joblib",
        f"hydra.launcher.n_jobs={jobs}",
        f"results_dir={root}",
        f"run_id=k{jobs}-{uuid.uuid4().hex[:6]}",
    ]


def one_run(jobs: int, episodes: int, moves: int, share: bool) -> dict:
    limit = RateLimit(moves_then_stop(moves), rpm=LIMIT, window_s=WINDOW_S)
    seen = Arrivals(limit)
    env = {**os.environ, KEY_VAR: f"sk-bench-{uuid.uuid4().hex}", "RAY_USAGE_STATS_ENABLED": "0"}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(default=seen, keep_bodies=False) as server:
        done = subprocess.run(command(server, Path(tmp), jobs, episodes, share), cwd=ROOT, env=env, capture_output=True)
    if done.returncode not in (0, 1):  # 1: some episode failed its task, which is fine here
        raise RuntimeError(done.stderr.decode()[-3000:])
    episode = [t for t, is_episode in seen.times if is_episode]
    span = episode[-1] - episode[0]
    return {
        "max_in_60s": limit.most_within(),
        "rpm": (len(episode) - 1) / span * 60 if span > 0 else float("nan"),
        "requests": len(seen.times),
        "refused": len(limit.rejected),
        "wall_s": time.monotonic() - t0,
    }


def setting(jobs: int, args, share: bool = True) -> dict:
    runs = [one_run(jobs, args.episodes, args.moves, share) for _ in range(args.repeats)]
    print(f"  {jobs} job(s){'' if share else ', alone'}: {runs}", file=sys.stderr, flush=True)
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--episodes", type=int, default=8, help="episodes in all, split over the jobs")
    ap.add_argument("--moves", type=int, default=21, help="moves per episode before it stops (moves + 1 requests)")
    ap.add_argument("--control", action="store_true", help="also 2 jobs with model.share_limits=false")
    args = ap.parse_args()
    rows = [(f"{k}", setting(k, args)) for k in args.jobs]
    if args.control:
        rows.append(("2, share_limits=false", setting(2, args, share=False)))
    print(f"provider: {LIMIT} requests in any {WINDOW_S:g} s; model.rpm={LIMIT}; median of {args.repeats} run(s)")
    print("| jobs | most requests in any 60 s | throughput (requests/min) | 429s | requests | wall s |")
    print("|---|---|---|---|---|---|")
    for name, r in rows:
        print(
            f"| {name} | {r['max_in_60s']:g} | {r['rpm']:.1f} | {r['refused']:g} | {r['requests']:g} "
            f"| {r['wall_s']:.0f} |"
        )


if __name__ == "__main__":
    main()
