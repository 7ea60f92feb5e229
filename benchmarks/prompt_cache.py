"""How much of each request a provider's prompt cache can bill at its cached rate: a 50-step
active episode and a 30-step passive one (render ``paper``, observation profile ``paper``) over
real HTTP against fake OpenAI and Anthropic endpoints whose caches work as the providers document
(``tests/prompt_caching.py``).

Per request: the share of its input tokens that repeats the previous request's prefix byte for
byte (what any prefix cache can reuse), and what the provider read from its cache. Per episode:
the dollars billed at LiteLLM's prices (input, cached input, cache writes, output) with the
cache and without it (every input token at the full rate). The rows' ``cached_tokens`` and
``cost_usd`` are checked against the fake provider's own counts.

    python benchmarks/prompt_cache.py [--active-steps 50] [--passive-steps 30]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.openai_server import ScriptedServer  # noqa: E402
from tests.prompt_caching import ANTHROPIC, OPENAI, PromptCache  # noqa: E402
from vabench.agents.chat.model import ModelConfig  # noqa: E402
from vabench.agents.episode import Episode, run_episode  # noqa: E402
from vabench.agents.models.llm import LiteLLMModel, prices  # noqa: E402
from vabench.envs import RENDER_PRESETS, EnvConfig  # noqa: E402
from vabench.envs.env import VABenchEnv  # noqa: E402
from vabench.envs.seeds import eval_seeds  # noqa: E402

logging.getLogger("toppra").setLevel(logging.ERROR)
TASK = "place_cube_in_bowl"  # a 50-step budget
MODELS = {OPENAI: "openai/gpt-4o", ANTHROPIC: "anthropic/claude-sonnet-4-5"}
KEY = "VABENCH_PROMPT_CACHE_KEY"
# A plausible decision with its reasoning: alternating small moves that never finish the task, so
# the episode runs its whole length.
MOVES = ("x", "y", "z")


class Policy:
    """Deterministic replies computed from the request alone (so a resumed attempt asks the same):
    small moves back and forth, ``{"stop": true}`` after ``steps`` actions (0: never)."""

    def __init__(self, steps: int = 0):
        self.steps = steps

    def __call__(self, body: dict) -> str:
        n = 1 + sum(m.get("role") == "assistant" for m in body.get("messages", []))
        if self.steps and n > self.steps:  # the budget ends an episode of as many steps by itself
            return json.dumps({"stop": True, "reason": "giving up for the benchmark"})
        axis, sign = MOVES[n % 3], "+-"[(n // 3) % 2]
        reason = (
            f"The gripper is still above and to the side of the cube; I move it along {axis} to line the fingers up "
            "with the cube's faces before descending, keeping clear of the bowl rim."
        )
        decision = {"action": "gripper.move_world", "axis": axis, "sign": sign, "distance_mm": 20, "reason": reason}
        return json.dumps(decision)


def episode(provider: str, protocol: str, steps: int, env: VABenchEnv, out: Path) -> dict:
    cache = PromptCache(provider, Policy(steps))
    with ScriptedServer(default=cache) as server:
        api = server.url if provider == OPENAI else server.base
        model = LiteLLMModel(ModelConfig(MODELS[provider], api_base=api, api_key_env=KEY, extra={}))
        row = run_episode(env, model, Episode.of(TASK, eval_seeds(TASK)[0], protocol, env=env), out)
    price = prices(MODELS[provider])
    share = [u.repeated / u.input_tokens for u in cache.log[1:]]
    billed = without = 0.0
    for u in cache.log:
        out_usd = cache.output_tokens * price.output
        fresh = u.input_tokens - u.read - u.written
        billed += fresh * price.input + u.read * price.cached_input + u.written * price.cache_write + out_usd
        without += u.input_tokens * price.input + out_usd
    assert row.cached_tokens == sum(u.read for u in cache.log), (row.cached_tokens, [u.read for u in cache.log])
    return {
        "requests": len(cache.log),
        "steps": row.steps,
        "mean_tokens": statistics.mean(u.input_tokens for u in cache.log),
        "share_median": statistics.median(share),
        "share_mean": statistics.mean(share),
        "share_min": min(share),
        "read_share": sum(u.read for u in cache.log) / sum(u.input_tokens for u in cache.log),
        "billed": billed,
        "without": without,
        "row_cost": row.cost_usd,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--active-steps", type=int, default=50)
    ap.add_argument("--passive-steps", type=int, default=30)
    args = ap.parse_args()
    os.environ[KEY] = "fake-key"
    env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["paper"]))
    print(f"{TASK}, render paper, observation paper; dollars at LiteLLM's prices for {', '.join(MODELS.values())}")
    header = "provider   protocol steps reqs mean_tok  repeat%(median/mean/min)  cache-read%  $billed  $uncached  saved"
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for protocol, steps in (("active", args.active_steps), ("passive", args.passive_steps)):
            for provider in (OPENAI, ANTHROPIC):
                r = episode(provider, protocol, steps, env, Path(tmp) / f"{provider}-{protocol}")
                print(
                    f"{provider:10s} {protocol:8s} {r['steps']:5d} {r['requests']:4d} {r['mean_tokens']:8.0f}  "
                    f"{100 * r['share_median']:6.1f} /{100 * r['share_mean']:5.1f} /{100 * r['share_min']:5.1f}"
                    f"        {100 * r['read_share']:6.1f}   {r['billed']:7.4f}  {r['without']:8.4f}  "
                    f"{100 * (1 - r['billed'] / r['without']):5.1f}%   (row cost_usd {r['row_cost']:.4f})"
                )
    env.close()


if __name__ == "__main__":
    main()
