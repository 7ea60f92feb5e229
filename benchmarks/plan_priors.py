"""The plan's priors (``vabench/plan/priors.json``) from measured episodes: the real harness, real
SAPIEN at ``render=paper``, real HTTP through LiteLLM to a fake OpenAI endpoint priced as
``openai/gpt-4o`` (LiteLLM's local map) whose prompt cache works as OpenAI documents
(``tests/prompt_caching.py``) and whose reply tokens are the reply's own.

Per protocol, track and task, two kinds of episode (``benchmarks/plan_replies.py``): a failing
model's (the whole budget) on the task's last verified seed(s), and a successful model's (the servo
agent's decisions) on the seed(s) before them, where the paper's success rate for the cell is 1 % or
more. Each episode's steps, calls, the text each request carries beyond the system prompt, the
reply tokens and the harness's time per step go to ``OUT/rows.jsonl`` (a rerun skips what is done);
``--write`` turns them, with the paper's success rates (``benchmarks/paper_rates.py``), into the
priors file. Cells the paper never runs (passive transfer and long-horizon) are not measured: the
plan takes their per-step figures from the base family's or the protocol's cells (docs/plan.md).

    nice python benchmarks/plan_priors.py --out /tmp/plan_priors                    # measure (resumable)
    python benchmarks/plan_priors.py --out /tmp/plan_priors --write vabench/plan/priors.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks.paper_rates import MIN_RATE, success_rates  # noqa: E402
from benchmarks.plan_replies import Failing, ServoReplies  # noqa: E402
from tests.openai_server import ScriptedServer  # noqa: E402
from tests.prompt_caching import OPENAI, PromptCache, blocks  # noqa: E402
from vabench.agents.chat.model import ModelConfig  # noqa: E402
from vabench.agents.episode import Episode, run_episode  # noqa: E402
from vabench.agents.models.llm import LiteLLMModel  # noqa: E402
from vabench.core.vocab import ACTIVE, PASSIVE, Track  # noqa: E402
from vabench.envs import RENDER_PRESETS, EnvConfig  # noqa: E402
from vabench.envs.env import VABenchEnv  # noqa: E402
from vabench.envs.seeds import eval_seeds  # noqa: E402
from vabench.envs.tasks import task_class, tasks_of_track  # noqa: E402

logging.getLogger("toppra").setLevel(logging.ERROR)
MODEL = "openai/gpt-4o"
KEY = "VABENCH_PLAN_PRIORS_KEY"
FAILURE, SUCCESS = "failure", "success"
# (track, protocol) pairs the paper runs: base in both protocols (Table 4), transfer and long horizon active (Table 5)
MEASURED = ((Track.BASE, ACTIVE.name), (Track.BASE, PASSIVE.name), (Track.TRANSFER, ACTIVE.name))
MEASURED += ((Track.LONG_HORIZON, ACTIVE.name),)


class Meter:
    """Each request's text beyond the system prompt, its current observation's text and its images,
    in the fake provider's own token counts, in front of its prompt cache."""

    def __init__(self, cache: PromptCache):
        self.cache, self.calls = cache, []

    def __call__(self, body: dict):
        out = self.cache(body)
        messages = body["messages"]
        system = messages[:1] if messages and messages[0].get("role") == "system" else []
        text = sum(b.tokens for b in blocks(body, OPENAI) if b.text is not None)
        self.calls.append(
            {
                "text": text - sum(b.tokens for b in blocks({"messages": system}, OPENAI)),
                "current": sum(b.tokens for b in blocks({"messages": messages[-1:]}, OPENAI) if b.text is not None),
                "output": self.cache.log[-1].output,
            }
        )
        return out


def episode(env: VABenchEnv, task: str, seed: int, protocol: str, arm: str, folder: Path) -> dict:
    """One measured episode: its row's figures and the meter's."""
    arms = tuple(task_class(task).arms)
    policy = ServoReplies(protocol, task) if arm == SUCCESS else Failing(arms, protocol == ACTIVE.name)
    meter = Meter(PromptCache(OPENAI, policy, output_tokens=None))
    with ScriptedServer(default=meter, keep_bodies=False) as server:
        model = LiteLLMModel(ModelConfig(MODEL, api_base=server.url, api_key_env=KEY, extra={}))
        cpu = time.process_time()
        row = run_episode(env, model, Episode.of(task, seed, protocol, env=env), folder)
        cpu = time.process_time() - cpu
    calls = meter.calls
    return {
        "task": task,
        "protocol": protocol,
        "arm": arm,
        "seed": seed,
        "budget": row.budget,
        "steps": row.steps,
        "calls": len(calls),
        "success": bool(row.success),
        "end_reason": row.end_reason,
        "text_tokens": sum(c["text"] for c in calls),  # summed over the calls, the system prompt left out
        "current_tokens": statistics.mean(c["current"] for c in calls) if calls else 0.0,
        "reply_tokens": statistics.mean(c["output"] for c in calls) if calls else 0.0,
        "prompt_tokens": row.prompt_tokens,
        "cached_tokens": row.cached_tokens,
        "cost_usd": row.cost_usd,
        "harness_s": max(0.0, row.wall_s - row.model_latency_s),  # wall: as loaded as the machine was
        "cpu_s": cpu,  # the process's CPU seconds (the fake provider's and the servo's included)
    }


def plan_of_work(rates: dict, failure_seeds: int, success_seeds: int) -> list[tuple[str, str, str, int]]:
    """(task, protocol, arm, seed) of every episode to measure: the failing model on the last
    verified seeds, the servo on the ones before them where the paper's rate is MIN_RATE or more."""
    work = []
    for track, protocol in MEASURED:
        for task in tasks_of_track(track):
            seeds = eval_seeds(task)
            work += [(task, protocol, FAILURE, s) for s in seeds[len(seeds) - failure_seeds :]]
            if rates[(protocol, task)][0] >= MIN_RATE:
                end = len(seeds) - failure_seeds
                work += [(task, protocol, SUCCESS, s) for s in seeds[end - success_seeds : end]]
    return work


def measure(out: Path, failure_seeds: int, success_seeds: int, tasks: list[str] | None) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "rows.jsonl"
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()] if rows_path.exists() else []
    done = {(r["task"], r["protocol"], r["arm"], r["seed"]) for r in rows}
    os.environ[KEY] = "fake-key"
    env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["paper"]))
    try:
        for key in plan_of_work(success_rates(), failure_seeds, success_seeds):
            if key in done or (tasks and key[0] not in tasks):
                continue
            folder = out / "records" / "-".join(map(str, key))
            shutil.rmtree(folder, ignore_errors=True)
            task, protocol, arm, seed = key
            row = episode(env, task, seed, protocol, arm, folder)
            shutil.rmtree(folder, ignore_errors=True)  # records and videos are never kept
            rows.append(row)
            with rows_path.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    finally:
        env.close()
    return rows


def arm_of(rows: list[dict], made: str) -> dict:
    """One arm's priors from its episodes, with their source: per episode, its steps and calls; per
    call, the current observation's text (obs_tokens), what each earlier call leaves in a request
    (turn_tokens: its observation or repair text, its reply, its images' stubs; pooled so that the
    sum over an episode's calls is the measured one) and the reply's tokens; per step, CPU seconds."""
    mean = lambda k: round(statistics.mean(r[k] for r in rows), 3)  # noqa: E731
    calls, steps = sum(r["calls"] for r in rows), sum(r["steps"] for r in rows)
    obs = sum(r["current_tokens"] * r["calls"] for r in rows) / max(calls, 1)
    pairs = sum(r["calls"] * (r["calls"] - 1) / 2 for r in rows)
    turn = sum(r["text_tokens"] - r["calls"] * obs for r in rows) / max(pairs, 1)
    r0 = rows[0]
    return {
        "episodes": len(rows),
        "seeds": sorted(r["seed"] for r in rows),
        "successes": sum(r["success"] for r in rows),
        "end_reasons": sorted({r["end_reason"] for r in rows}),
        "steps": mean("steps"),
        "calls": mean("calls"),
        "obs_tokens": round(obs, 1),
        "turn_tokens": round(turn, 1),
        "reply_tokens": round(sum(r["reply_tokens"] * r["calls"] for r in rows) / max(calls, 1), 1),
        "cpu_s_per_step": round(sum(r["cpu_s"] for r in rows) / max(steps, 1), 3),
        "wall_s_per_step": round(sum(r["harness_s"] for r in rows) / max(steps, 1), 3),
        "measured_cost_usd": mean("cost_usd"),
        "source": f"{len(rows)} measured episode(s) of {r0['task']}, {r0['protocol']}, seeds "
        f"{', '.join(str(r['seed']) for r in rows)}: {made}",
    }


def cells(rows: list[dict], rates: dict, made: str) -> list[dict]:
    """Every (protocol, track, task) with its paper rate, and where measured its two kinds of episode
    (``measured``: a success the servo never completed, or under MIN_RATE, is left out: the plan then
    takes a success as spending the whole budget; a cell the paper never runs has none: the plan
    borrows them)."""
    out = []
    for track in Track:
        for protocol in (ACTIVE.name, PASSIVE.name):
            out += [_cell(rows, rates, track, protocol, task, made) for task in tasks_of_track(track)]
    return out


def _cell(rows: list[dict], rates: dict, track: str, protocol: str, task: str, made: str) -> dict:
    mine = [r for r in rows if r["task"] == task and r["protocol"] == protocol]
    rate, why = rates[(protocol, task)]
    cls = task_class(task)
    cell = {"protocol": protocol, "track": str(track), "task": task, "budget": cls.budget, "robot_arms": len(cls.arms)}
    cell |= {"success_rate": round(rate, 4), "success_source": why, "measured": {}}
    if (track, protocol) not in MEASURED:
        cell["not_measured"] = f"the paper runs no {track} episodes in the {protocol} protocol"
        return cell
    for arm, replies in ((FAILURE, "Failing"), (SUCCESS, "ServoReplies")):
        measured = [r for r in mine if r["arm"] == arm and (arm == FAILURE or r["success"])]
        if measured:
            cell["measured"][arm] = arm_of(measured, f"benchmarks/plan_replies.{replies} replies, {made}")
    servo = [r for r in mine if r["arm"] == SUCCESS]
    if servo:  # all the servo's episodes, for the plan of model=servo
        steps = sum(r["steps"] for r in servo)
        cell["servo"] = {
            "episodes": len(servo),
            "successes": sum(r["success"] for r in servo),
            "steps": round(statistics.mean(r["steps"] for r in servo), 2),
            "cpu_s_per_step": round(sum(r["cpu_s"] for r in servo) / max(steps, 1), 3),
        }
    if SUCCESS not in cell["measured"]:
        cell["success_as_failure"] = (
            f"the servo completed none of {len(servo)} episodes" if servo else "rate under 1 %: not measured"
        )
    return cell


def write(rows: list[dict], path: Path, failure_seeds: int, success_seeds: int) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    made = {
        "by": "benchmarks/plan_priors.py",
        "command": f"python benchmarks/plan_priors.py --out OUT --failure-seeds {failure_seeds} "
        f"--success-seeds {success_seeds} --write {path.name}",
        "commit": commit.stdout.strip(),
        "date": date.today().isoformat(),
        "provider": f"fake OpenAI endpoint (tests/openai_server.py, tests/prompt_caching.py) priced as {MODEL}",
        "render": "paper",
        "observation": "paper",
        "summary": "none (the plan adds the summary's tokens to the system prompt)",
        "load_average": round(os.getloadavg()[0], 1),
        "episodes": len(rows),
    }
    assumption = (
        "An episode of today's models fails and spends its whole step budget (the failing replies), or succeeds "
        "in the steps the servo agent takes (its decisions as replies); the two mix at the paper's success rate for "
        "the protocol, track and task (success_source). Reply length, looks (one step in six, active) and repairs "
        "(one call in twenty) are the failing replies'; the observation text, the conversation's growth and the "
        "harness's time per step are the harness's own."
    )
    by = f"benchmarks/plan_priors.py at {made['commit']}, {made['date']}"
    doc = {"made": made, "assumption": assumption, "cells": cells(rows, success_rates(), by)}
    cells_ = doc.pop("cells")
    cells_text = ",\n".join(json.dumps(c) for c in cells_)  # a cell a line: small, and diffs by cell
    head = json.dumps(doc, indent=1)[:-2]
    path.write_text(f'{head},\n "cells": [\n{cells_text}\n ]\n}}\n')
    print(f"wrote {path}: {len(cells_)} cells from {len(rows)} episodes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--failure-seeds", type=int, default=1)
    ap.add_argument("--success-seeds", type=int, default=2)
    ap.add_argument("--tasks", nargs="*", help="measure only these (default: every task of the measured tracks)")
    ap.add_argument("--write", type=Path, help="write the priors file from OUT's rows (measures nothing)")
    a = ap.parse_args()
    started = time.perf_counter()
    if a.write:
        rows = [json.loads(line) for line in (a.out / "rows.jsonl").read_text().splitlines()]
        write(rows, a.write, a.failure_seeds, a.success_seeds)
        return
    rows = measure(a.out, a.failure_seeds, a.success_seeds, a.tasks)
    print(f"{len(rows)} episodes in OUT; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
