"""The paper's study as one parallel sweep (``-m +study=paper``) with a scripted provider model that
learns summaries: counts the learning conversations (each (model, base task) summary should be
learned once, by the base run, and reused by the passive, transfer and long-horizon runs running
beside it), and prints the sweep folder read with ``pandas.read_parquet`` as one table.

    python benchmarks/study_summaries.py --address 127.0.0.1:PORT [--out /tmp/study]

On a cluster, start Ray with ``VABENCH_FAKE_KEY=sk-fake`` exported (the model's key variable: the
driver checks every node has it, as for a real provider).

The model answers every evaluation request with ``stop`` (the episode is judged at once); a
learning conversation retrieves the frame index, inspects three frames of each demonstration and
saves a summary. Demonstrations are small synthetic ones in the real on-disk format (no simulator).
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

import pandas as pd
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.openai_server import ScriptedServer  # noqa: E402
from tests.test_learning import SUMMARY  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STOP = json.dumps({"stop": True, "reason": "scripted"})


def demos(root: Path) -> None:
    """A six-frame demonstration of every base task, at the paper preset."""
    from vabench.envs.tasks import tasks_of_track

    for task in tasks_of_track("base"):
        folder = root / "paper" / task
        folder.mkdir(parents=True, exist_ok=True)
        frames = []
        for i in range(6):
            name = f"frame_{i:05d}.jpg"
            Image.new("RGB", (64, 48), (40 * i, 20, 20)).save(folder / name, quality=95)
            frames.append(name)
        meta = {"format": "vabench.demo.v1", "task": task, "instruction": f"Do {task}.", "frames": frames}
        meta |= {"fps": 3.0, "width": 64, "height": 48, "view": "center_high", "render": "paper"}
        (folder / "demo.json").write_text(json.dumps(meta))


class Model:
    """Learning conversations (the learning system prompt) get retrieve, frames, learn; the rest stop."""

    def __init__(self):
        self.learnings = 0

    def __call__(self, body: dict) -> str:
        system = body["messages"][0]["content"]
        if "expert.retrieve" not in (system if isinstance(system, str) else json.dumps(system)):
            return STOP
        turns = sum(m.get("role") == "assistant" for m in body["messages"])
        if turns == 0:
            self.learnings += 1
            return json.dumps({"tool": "expert.retrieve", "args": {"mode": "trajectory"}})
        text = json.dumps(body["messages"])
        names = ["place_single_cube", "grasp_single_bottle", "grasp_single_bottle_upright", "grasp_single_pen"]
        several = "basket" in text
        if turns <= (len(names) if several else 1):
            args = {"steps": [0, 2, 4]} | ({"demo": names[turns - 1]} if several else {})
            return json.dumps({"tool": "expert.frame", "args": args})
        return json.dumps({"tool": "expert.learn", "args": SUMMARY})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default="local", help="ray.address (default: a local Ray per job)")
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="vabench-study-")))
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args()
    demos(args.out / "demos")
    model = Model()
    with ScriptedServer(default=model, keep_bodies=False) as server:
        cmd = [sys.executable, "-m", "vabench.launch", "-m", "+study=paper", "model=openai"]
        cmd += ["model.id=openai/fake", "model.api_key_env=VABENCH_FAKE_KEY", f"model.api_base={server.url}"]
        cmd += ["model.max_retries=0", "seeds=1", "runs=1", f"ray.address={args.address}"]
        cmd += [f"hydra.launcher.n_jobs={args.jobs}", f"results_dir={args.out}", "run_id=study"]
        cmd += [f"demo_root={args.out / 'demos'}", "recording.video=false"]
        env = {**os.environ, "VABENCH_FAKE_KEY": "sk-fake", "RAY_AUTH_MODE": "disabled"}
        began = time.monotonic()
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.monotonic() - began
    log = done.stdout + done.stderr
    (args.out / "study.log").write_text(log)
    print(f"exit {done.returncode}, wall {wall:.0f} s, {len(server.times)} requests; log: {args.out / 'study.log'}")
    for line in log.splitlines():
        if "learning summaries for" in line or "waiting for another driver" in line or "reusing" in line:
            print("  " + line.strip()[-200:])
    stored = sorted(p.stem for p in (args.out / "_summaries").rglob("*.json"))
    print(f"learning conversations: {model.learnings}; summaries stored: {len(stored)}")
    df = pd.read_parquet(args.out / "study")
    if df.empty:
        raise SystemExit(f"no rows: see {args.out / 'study.log'}")
    table = df.groupby(["experiment", "protocol"]).agg(
        episodes=("status", "size"),
        ok=("status", lambda s: int((s == "ok").sum())),
        summary_learned=("summary_learned", lambda s: int(s.fillna(False).astype(bool).sum())),
    )
    print(table.to_string())


if __name__ == "__main__":
    main()
