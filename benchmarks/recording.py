"""What recording views cost (issue 14): time per action and disk per episode, on and off.

Runs the oracle through the real harness (``run_episode``: model frames, records, recording
views, evaluator state, the episode video) on the same seeds of two tasks, with recording on (the
default: 320x240 with the overlay) and off, in both protocols, and prints

- the added time per action, directly: the median of the recording work per step (render the
  recording view, draw the overlay, store the JPEG, take the evaluator state), against the median
  of ``env.step`` itself in the same run (ratio);
- the added time per action end to end: per episode, (wall with - wall without) / steps, median
  over episodes (video encoding included);
- the size on disk of a record folder per episode, with and without.

    python benchmarks/recording.py [--seeds 3]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from vabench.agents.chat.model import ModelConfig
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.kinds import make_model
from vabench.envs import EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.seeds import eval_seeds
from vabench.results.recordfile import Event
from vabench.results.records import EpisodeRecord

logging.getLogger("toppra").setLevel(logging.ERROR)
TASKS = ("grasp_single_cube", "place_cube_in_bowl")


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def direct(env: VABenchEnv, protocol: str, seeds: int, scratch: Path) -> tuple[list[float], list[float]]:
    """Per expert action: ms of env.step, and ms of the recording work the harness adds."""
    steps, extra = [], []
    record = EpisodeRecord(scratch / f"direct-{protocol}")
    for task in TASKS:
        for seed in eval_seeds(task)[:seeds]:
            env.reset(task, seed, protocol)
            for action in env.task.expert(env.privileged()):
                t = time.perf_counter()
                r = env.step(action)
                t1 = time.perf_counter()
                view = env.recording_view(f"step {r.step}")
                path = record.save_recording(r.step, view)
                record.event(Event.STATE, step=r.step, recording=record.rel(path), **env.evaluator_state())
                t2 = time.perf_counter()
                steps.append((t1 - t) * 1000)
                extra.append((t2 - t1) * 1000)
                if r.done:
                    break
    record.close()
    return steps, extra


def episodes(env: VABenchEnv, protocol: str, seeds: int, scratch: Path, tag: str) -> dict:
    out = {}
    oracle = make_model(ModelConfig(id="oracle"))
    for task in TASKS:
        for seed in eval_seeds(task)[:seeds]:
            folder = scratch / tag / protocol / task / str(seed)
            t = time.perf_counter()
            row = run_episode(env, oracle, Episode.of(task, seed, protocol, env=env), folder)
            wall = time.perf_counter() - t  # the row's wall_s stops before the video is encoded
            assert row.success, (task, seed, row.end_reason)
            out[(task, seed)] = (wall, row.steps, size_mb(folder))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="seeds per task")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="vabench-recording-"))
    on = VABenchEnv(EnvConfig())
    off = VABenchEnv(EnvConfig(recording=RecordingConfig(enabled=False, video=False)))
    for env in (on, off):
        env.reset(TASKS[0], eval_seeds(TASKS[0])[0])  # shaders compile once per process
    rec = RecordingConfig()
    print(f"recording view {rec.width}x{rec.height}, overlay {rec.overlay}, video {rec.fps} fps; model camera 640x480")
    print(f"oracle, {args.seeds} seeds x {len(TASKS)} tasks ({', '.join(TASKS)}) per protocol\n")
    try:
        for protocol in ("active", "passive"):
            steps, extra = direct(on, protocol, args.seeds, scratch)
            with_rec = episodes(on, protocol, args.seeds, scratch, "on")
            without = episodes(off, protocol, args.seeds, scratch, "off")
            added = [(with_rec[k][0] - without[k][0]) / with_rec[k][1] * 1000 for k in with_rec]
            step_ms, extra_ms = statistics.median(steps), statistics.median(extra)
            print(f"{protocol}: {len(steps)} actions timed directly, {len(with_rec)} episodes each way")
            print(f"  env.step (plan + execute + model render):   median {step_ms:7.1f} ms per action")
            print(f"  recording work per action (direct):         median {extra_ms:7.1f} ms  "
                  f"({extra_ms / step_ms:.2f} x env.step)")  # fmt: skip
            print(f"  added per action end to end (with video):   median {statistics.median(added):7.1f} ms")
            mb_on = statistics.median(v[2] for v in with_rec.values())
            mb_off = statistics.median(v[2] for v in without.values())
            print(f"  record folder per episode: {mb_on:.2f} MB with recording, {mb_off:.2f} MB without "
                  f"(ratio {mb_on / mb_off:.2f})\n")  # fmt: skip
    finally:
        on.close()
        off.close()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
