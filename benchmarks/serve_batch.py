"""What serve_policy's batching window buys (issue 49): N clients ask the behaviour-cloning
checkpoint's network over real websockets at once, each K times in a row, with batching off
(``--max-batch 1``: one forward pass per observation) and on (the default window), interleaved
repeat by repeat so drift on a shared machine hits both alike; the median over the repeats.

The network is the checkpoint's default shape with its initial weights (a forward pass costs the
same trained or not), saved and served as ``python -m vabench.serve_policy CHECKPOINT`` would;
each observation is a 320x240 picture (the ``small`` preset), the 11-number state and a prompt.

    python benchmarks/serve_batch.py [--clients 1 4 8] [--asks 20] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import requests  # noqa: E402

from vabench.agents.models.policy import MAX_FRAME_MB  # noqa: E402
from vabench.agents.models.policy_wire import PolicyClient  # noqa: E402
from vabench.learn.model import BCNet, NetConfig  # noqa: E402
from vabench.learn.policy import LearnedPolicy  # noqa: E402
from vabench.learn.train import save  # noqa: E402
from vabench.serve_policy import BATCH_WINDOW_MS, PolicyServer  # noqa: E402


def checkpoint(folder: Path) -> Path:
    cfg = NetConfig()
    norms = {"state_mean": [0.0] * cfg.state_dim, "state_std": [1.0] * cfg.state_dim, "motion_scale": [0.01] * 6}
    path = folder / "bc.pt"
    save(path, BCNet(cfg), norms, {"episodes": []})
    return path


def observation(rng: np.random.Generator) -> dict:
    return {
        "observation/image": rng.integers(0, 255, (240, 320, 3), dtype=np.uint8),
        "observation/state": rng.normal(size=11).astype(np.float32),
        "prompt": "Use the right arm to grasp the red cube and lift it off the table.",
    }


def one(path: Path, clients: int, asks: int, max_batch: int) -> tuple[float, float, float]:
    """(inferences per second, CPU ms per inference, mean batch size) of ``clients`` asking
    ``asks`` times each; the CPU time is this process's, all threads (the server's and the
    clients'): on a shared machine it is the figure that carries over."""
    server = PolicyServer(LearnedPolicy(path), port=0, batch_window_ms=BATCH_WINDOW_MS, max_batch=max_batch).start()
    url = f"ws://127.0.0.1:{server.port}"
    conns = [PolicyClient(url, 60, None, MAX_FRAME_MB) for _ in range(clients)]
    obs = [observation(np.random.default_rng(k)) for k in range(clients)]
    go = threading.Barrier(clients + 1)

    def ask(k: int) -> None:
        go.wait()
        for _ in range(asks):
            conns[k].infer(obs[k])

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    go.wait()
    started, cpu = time.perf_counter(), time.process_time()
    for t in threads:
        t.join()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    stats = requests.get(f"http://127.0.0.1:{server.port}/stats", timeout=10).json()
    for c in conns:
        c.close()
    server.shutdown()
    batches = sum(stats["batches"].values())
    return clients * asks / elapsed, cpu * 1000 / (clients * asks), stats["inferences"] / batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--asks", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = checkpoint(Path(tmp))
        print(f"window {BATCH_WINDOW_MS:g} ms; {args.asks} asks per client; median of {args.repeats} repeats")
        print(
            "| clients | inferences/s, max_batch 1 | batched | CPU ms/inference, max_batch 1 | batched | mean batch |"
        )
        print("|---|---|---|---|---|---|")
        for n in args.clients:
            runs: dict[int, list[tuple[float, float, float]]] = {1: [], 32: []}
            for k in range(args.repeats):  # alternating which goes first
                for max_batch in (1, 32) if k % 2 == 0 else (32, 1):
                    runs[max_batch].append(one(path, n, args.asks, max_batch))
            (r1, c1, _), (r32, c32, size) = (
                [statistics.median(x) for x in zip(*runs[b], strict=True)] for b in (1, 32)
            )
            print(f"| {n} | {r1:.0f} | {r32:.0f} | {c1:.1f} | {c32:.1f} | {size:.1f} |", flush=True)


if __name__ == "__main__":
    main()
