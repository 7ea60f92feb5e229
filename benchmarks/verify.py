"""Reproduction and verify throughput: runs of the offline models (oracle, random, servo) and of a
scripted fake provider (``fake``: tests/openai_server.py over real HTTP, through LiteLLM) over the
base tasks x seeds x both protocols, each made with 1 and with 4 env workers on Ray
(``ray.env_actors``), then ``python -m vabench.verify`` on each (in this process, ``--workers``
processes). Servo runs leave out the two-arm tasks it has no skill for (it refuses them).

Prints per run: reproduced k/n, the run's wall time, verify's wall time and episodes per minute;
at the end the totals, and the median seconds verify takes per episode. Each run's line is also
appended to ``<out>/verify-bench.jsonl`` as it finishes, so a long benchmark cut short keeps what it
measured (``--skip-done`` resumes it in the same ``--out``).

    python benchmarks/verify.py [--models oracle fake servo random] [--tasks T ...] [--seeds 2]
                                [--actors 1 4] [--workers 1] [--out DIR] [--skip-done]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.openai_server import ScriptedServer  # noqa: E402
from vabench.agents.models.servo import ServoAgent  # noqa: E402
from vabench.envs.tasks import task_class, tasks_of_track  # noqa: E402
from vabench.verify import verify  # noqa: E402

KEY_VAR = "VABENCH_VERIFY_BENCH_KEY"
MOVES = [("z", "+", 30), ("x", "+", 20), ("y", "-", 20), ("z", "-", 20)]


def fake_reply(body: dict) -> str:
    """The fake provider: a function of the request alone (its assistant turns so far), so a
    re-simulation from the recorded replies meets the same requests: four moves, then stop."""
    said = sum(m.get("role") == "assistant" for m in body["messages"])
    if said >= len(MOVES):
        return json.dumps({"stop": True, "reason": "done"})
    axis, sign, mm = MOVES[said]
    move = {"action": "gripper.move_world", "arm": "right", "axis": axis, "sign": sign, "distance_mm": mm}
    return json.dumps(move | {"reason": "scripted"})


def model_args(model: str, server: ScriptedServer) -> list[str]:
    if model != "fake":
        return [f"model={model}"]
    return ["model=openai", "model.id=openai/fake", f"model.api_base={server.url}", f"model.api_key_env={KEY_VAR}"]


def launch(out: Path, run_id: str, model: list[str], tasks: list[str], seeds: int, actors: int) -> float:
    """One run through the real entry point (Hydra, driver, Ray); its wall time."""
    args = [
        *model,
        "protocol=both",
        f"tasks=[{','.join(tasks)}]",
        f"seeds={seeds}",
        "render=small",
        "recording.enabled=false",
        "ray.address=local",
        f"ray.env_actors={actors}",
        f"results_dir={out}",
        f"run_id={run_id}",
    ]
    env = {**os.environ, KEY_VAR: "sk-verify-bench", "RAY_AUTH_MODE": "disabled"}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    started = time.monotonic()
    cmd = [sys.executable, "-m", "vabench.launch", *args]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{run_id}: the run failed:\n{done.stderr[-3000:]}")
    return time.monotonic() - started


def tasks_for(model: str, tasks: list[str]) -> list[str]:
    """Servo refuses the two-arm tasks it has no skill for: they are left out of its runs."""
    servo = ServoAgent()
    return [t for t in tasks if model != "servo" or not servo.refuses(t, tuple(task_class(t).arms), 0, "active")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["oracle", "fake", "servo", "random"])
    ap.add_argument("--tasks", nargs="+", default=tasks_of_track("base"))
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--actors", nargs="+", type=int, default=[1, 4])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--skip-done", action="store_true", help="skip runs already in <out>/verify-bench.jsonl")
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="vabench-verify-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    log = out / "verify-bench.jsonl"
    done = [json.loads(x) for x in log.read_text().splitlines()] if args.skip_done and log.exists() else []
    skipped = sorted(set(args.tasks) - set(tasks_for("servo", args.tasks)))
    if "servo" in args.models and skipped:
        print(f"servo: two-arm tasks left out (no servo skill): {', '.join(skipped)}", flush=True)
    with ScriptedServer(default=fake_reply, keep_bodies=False) as server:
        for actors in args.actors:
            for model in args.models:
                run_id = f"{model}-actors{actors}"
                if any(d["run"] == run_id for d in done):
                    continue
                tasks = tasks_for(model, args.tasks)
                run_s = launch(out, run_id, model_args(model, server), tasks, args.seeds, actors)
                report = verify(out / run_id, args.workers, log=lambda *_: None)
                line = {"run": run_id, "tasks": len(tasks), "run_s": run_s, "verify_s": report.seconds}
                line |= {"rows": report.rows, "judged": report.judged, "reproduced": report.reproduced}
                line |= {"differences": report.lines, "provenance": report.provenance}
                done.append(line)
                with log.open("a") as f:
                    f.write(json.dumps(line) + "\n")
                print(f"{run_id}: run {run_s:.0f} s; verify --workers {args.workers}: {report.summary()}", flush=True)
                for x in report.lines + [f"provenance differs: {p}" for p in report.provenance]:
                    print(f"  {x}", flush=True)
    judged, reproduced = sum(d["judged"] for d in done), sum(d["reproduced"] for d in done)
    seconds = sum(d["verify_s"] for d in done)
    per_episode = [d["verify_s"] / d["judged"] for d in done if d["judged"]]
    print(f"total: reproduced {reproduced}/{judged} judged episodes in {len(done)} runs; verify "
          f"{60 * judged / max(seconds, 1e-9):.1f} episodes/min overall, median "
          f"{statistics.median(per_episode or [float('nan')]):.1f} s per episode (run folders: {out})")  # fmt: skip


if __name__ == "__main__":
    main()
