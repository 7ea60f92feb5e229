"""The planner's token counts checked against counts it did not make (issue 48): the real tokenizer
(``litellm.token_counter`` for ``openai/gpt-4o``: tiktoken's o200k_base, OpenAI's image tiles) on
every request of recorded episodes: the real harness, real SAPIEN at ``render=paper``, real HTTP
through LiteLLM to the fake provider (``tests/openai_server.py``), the failing replies
(``benchmarks/plan_replies.Failing``) for the whole step budget, both protocols, several tasks, on
each task's first verified seed (the priors were measured on its last).

Per protocol it prints, summed over the episodes' requests, how far from the reference count are:

- ``before``: the old rule (4 characters a token plus 8 a text, OpenAI's tiles): the planner's rule
  before issue 48, which is still the harness's model-agnostic estimate (``estimate_messages``);
- ``after``: :func:`vabench.agents.chat.tokens.request_tokens`, what the planner and
  ``python -m vabench.plan tokens`` count now;
- the uncalibrated plan of each episode (the priors' failing arm, ``arm_episode``), before (its
  system prompt by the old rule) and after (by the tokenizer), against the episode's reference sum.
  The priors' per-call text figures were measured through the fake provider, which counted 4
  characters a token until issue 48: remaking them (``benchmarks/plan_priors.py``) moves them too.

    nice python benchmarks/plan_tokens.py --out /tmp/plan_tokens       # about 6 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402

from benchmarks.plan_replies import Failing  # noqa: E402
from tests.openai_server import ScriptedServer  # noqa: E402
from vabench.agents.chat import prompts  # noqa: E402
from vabench.agents.chat.model import ModelConfig  # noqa: E402
from vabench.agents.chat.tokens import estimate_messages, estimate_text, request_tokens  # noqa: E402
from vabench.agents.episode import Episode, run_episode  # noqa: E402
from vabench.agents.models.llm import LiteLLMModel  # noqa: E402
from vabench.core.vocab import PromptCache, Track  # noqa: E402
from vabench.envs import RENDER_PRESETS, EnvConfig  # noqa: E402
from vabench.envs.env import VABenchEnv  # noqa: E402
from vabench.envs.seeds import eval_seeds  # noqa: E402
from vabench.envs.tasks import task_class  # noqa: E402

MODEL = "openai/gpt-4o"
KEY = "VABENCH_PLAN_TOKENS_KEY"
TASKS = ("grasp_single_cube", "place_cube_in_bowl", "lift_pot")
PROTOCOLS = ("active", "passive")


class Counts:
    """Each request's reference, old-rule and new-rule counts, taken as it arrives (no body is kept)."""

    def __init__(self, reply):
        self.reply, self.rows = reply, []

    def __call__(self, body: dict) -> str:
        messages = body["messages"]
        self.rows.append(
            {
                "reference": int(litellm.token_counter(model=MODEL, messages=messages)),
                "before": estimate_messages(messages),
                "after": request_tokens(MODEL, messages).total,
            }
        )
        return self.reply(body)


def planned(task: str, protocol: str) -> dict:
    """The uncalibrated plan of one failing episode (input tokens), with its system prompt counted
    by the tokenizer (after) and by the old rule (before)."""
    from tests.test_plan import _run
    from vabench.plan.estimate import arm_episode
    from vabench.plan.priors import cell

    run = _run(Path("/tmp/vabench-plan-tokens"), "model=openai", f"model.id={MODEL}", f"tasks=[{task}]")
    cls = task_class(task)
    est = arm_episode(run, task, protocol, cell(task, protocol).failure, PromptCache.NONE)
    prompt = prompts.system_prompt(task, tuple(cls.arms), protocol, None, cls.track != Track.BASE)
    new = request_tokens(MODEL, [{"role": "system", "content": prompt}]).total
    return {"calls": est.calls, "after": est.input, "before": est.input + est.calls * (estimate_text(prompt) - new)}


def episode(env: VABenchEnv, task: str, protocol: str, folder: Path) -> dict:
    counts = Counts(Failing(tuple(task_class(task).arms), protocol == "active"))
    with ScriptedServer(default=counts, keep_bodies=False) as server:
        model = LiteLLMModel(ModelConfig(MODEL, api_base=server.url, api_key_env=KEY))
        seed = eval_seeds(task)[0]
        row = run_episode(env, model, Episode.of(task, seed, protocol, env=env), folder)
    sums = {k: sum(r[k] for r in counts.rows) for k in ("reference", "before", "after")}
    worst = {k: max(abs(r[k] - r["reference"]) / r["reference"] for r in counts.rows) for k in ("before", "after")}
    return {"task": task, "protocol": protocol, "seed": seed, "steps": row.steps, "calls": len(counts.rows)} | {
        "sums": sums,
        "worst": worst,
        "billed": row.prompt_tokens,
        "plan": planned(task, protocol),
    }


def off(value: float, reference: float) -> str:
    return f"{(value - reference) / reference:+.1%}"


def table(rows: list[dict]) -> list[str]:
    out = [
        "| protocol | episodes | requests | rule before | rule after | worst request before / after | "
        "plan before | plan after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for protocol in PROTOCOLS:
        mine = [r for r in rows if r["protocol"] == protocol]
        if not mine:
            continue
        ref = sum(r["sums"]["reference"] for r in mine)
        worst = [max(r["worst"][k] for r in mine) for k in ("before", "after")]
        plan = {k: statistics.mean((r["plan"][k] - r["sums"]["reference"]) / r["sums"]["reference"] for r in mine)
                for k in ("before", "after")}  # fmt: skip
        out.append(
            f"| {protocol} | {len(mine)} | {sum(r['calls'] for r in mine)} | "
            f"{off(sum(r['sums']['before'] for r in mine), ref)} | {off(sum(r['sums']['after'] for r in mine), ref)} | "
            f"{worst[0]:.1%} / {worst[1]:.1%} | {plan['before']:+.1%} | {plan['after']:+.1%} |"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--tasks", nargs="*", default=list(TASKS))
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    os.environ[KEY] = "fake-key"
    started, rows = time.perf_counter(), []
    env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["paper"]))
    try:
        for task in a.tasks:
            for protocol in PROTOCOLS:
                rows.append(episode(env, task, protocol, a.out / "records" / f"{task}-{protocol}"))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        env.close()
    (a.out / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    print("\n".join(table(rows)))
    print(f"{len(rows)} episodes, {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
