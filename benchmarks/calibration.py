"""Calibration, checked: the plan calibrated on a pilot of 2 tasks x 3 seeds against the rest of a
recorded study, beside the uncalibrated plan (docs/plan.md, "Calibration, checked").

The study's model is not the one the priors assume (``benchmarks/plan_replies.py``). Per one-arm
episode (a hash of its first request, so of its scene), with probability ``--succeed`` it answers as
the servo agent does (which has no two-arm skill), else as a failing model that looks every third
step, repairs every eighth call and writes its reasons twice over. Real harness, real SAPIEN at
``render=paper``, real HTTP through LiteLLM to the fake OpenAI endpoint priced as ``openai/gpt-4o``,
which bills with the real tokenizer and caches prompts as OpenAI documents. The pilot is the study's
first two tasks; the rest is its other four (one-arm tasks too, some of 100 steps), on the same three
seeds. The plan of the rest's config, from the shipped priors and calibrated on the pilot's run
folder (``plan.calibrate=PILOT``), is compared with the rest's rows.

    python benchmarks/calibration.py --out /tmp/calibration    # resumable: a rerun plays what is missing
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks.cost_control import KEY, launch, planned  # noqa: E402
from benchmarks.plan_replies import Failing, ServoReplies  # noqa: E402
from tests.openai_server import ScriptedServer  # noqa: E402
from tests.prompt_caching import OPENAI, PromptCache  # noqa: E402
from vabench.core.vocab import ACTIVE, PROTOCOLS  # noqa: E402
from vabench.results.outcometable import load  # noqa: E402

PILOT = "[grasp_single_cube,place_cube_in_bowl]"
REST = "[click_bell_right,grasp_single_bottle,place_single_cube,beat_block_hammer_right]"
SEEDS = 3


class StudyModel:
    """The study's model (module docstring): the servo's replies in a share of episodes, else a
    failing model unlike the priors' (looks, repairs and reply length)."""

    def __init__(self, protocol: str, succeed: float):
        self.succeed = succeed
        self.servo = ServoReplies(protocol)
        active = protocol == ACTIVE.name
        self.failing = {arms: Failing(arms, active, 3, 8, 2) for arms in (("right",), ("left", "right"))}

    def __call__(self, body: dict) -> str:
        two = "left arm:" in json.dumps(body["messages"][-1])  # the servo has no two-arm skill: always failing
        first = next(m for m in body["messages"] if m.get("role") == "user")
        if not two and zlib.crc32(json.dumps(first, sort_keys=True).encode()) % 1000 < self.succeed * 1000:
            return self.servo(body)
        return self.failing[("left", "right") if two else ("right",)](body)


def run(server: ScriptedServer, out: Path, protocol: str, part: str, tasks: str, succeed: float) -> Path:
    """Play (or finish) one part of the study in ``protocol``; its run folder."""
    server.default = PromptCache(OPENAI, StudyModel(protocol, succeed), output_tokens=None)
    run_id = f"{protocol}-{part}"
    rc, _, tail = launch(server, out, run_id, SEEDS, f"protocol={protocol}", tasks=tasks)
    if rc != 0:
        raise SystemExit(f"{run_id} failed (exit {rc}): {tail}")
    return out / run_id


def off(plan: float, actual: float) -> str:
    return f"{100 * (plan / actual - 1):+.1f}%"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--succeed", type=float, default=0.4, help="the share of episodes played as the servo")
    args = ap.parse_args()
    os.environ[KEY] = "fake-key"
    from vabench.agents.models.llm import prices

    price = prices("openai/gpt-4o")
    print("| protocol | rest: episodes | successes | calls: measured | uncalibrated | calibrated ", end="")
    print("| $: measured | uncalibrated | calibrated |")
    print("|---|---|---|---|---|---|---|---|---|")
    with ScriptedServer(keep_bodies=False) as server:
        for protocol in PROTOCOLS:
            pilot = run(server, args.out, protocol, "pilot", PILOT, args.succeed)
            rest = load(run(server, args.out, protocol, "rest", REST, args.succeed))
            calls, dollars = float(rest["model_calls"].sum()), float(rest["cost_usd"].sum())
            prior, _, _, _ = planned(SEEDS, server, protocol, tasks=REST)
            tuned, _, _, _ = planned(SEEDS, server, protocol, pilot, tasks=REST)
            print(
                f"| {protocol} | {len(rest)} | {int(rest['success'].sum())} | {calls:,.0f} | {prior.calls:,.0f} "
                f"({off(prior.calls, calls)}) | {tuned.calls:,.0f} ({off(tuned.calls, calls)}) | {dollars:,.2f} | "
                f"{prior.cost(price):,.2f} ({off(prior.cost(price), dollars)}) | {tuned.cost(price):,.2f} "
                f"({off(tuned.cost(price), dollars)}) |"
            )


if __name__ == "__main__":
    main()
