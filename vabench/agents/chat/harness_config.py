"""The harness's settings (``harness.*`` in the config): the defaults and bounds live here once;
Hydra composes them as ``harness/_defaults`` (vabench.run.config.run). What the model is shown (the
observation profile, an intervention) belongs to the condition (vabench.core.condition), not here."""

from __future__ import annotations

from dataclasses import dataclass

from vabench.core.checks import at_least


@dataclass(frozen=True)
class HarnessConfig:
    max_repairs: int = 2  # per env step; the next bad reply ends the episode
    max_calls_per_step: int = 20  # model calls per env step, tool calls and repairs included
    max_images: int = 4  # images per request; the current observation and the newest tool result always go (history.py)
    context_tokens: int = 200_000  # compaction threshold (estimated request tokens)
    keep_turns: int = 6  # observations kept verbatim when compacting
    history_actions: int = 20  # executed actions listed in each observation
    # Paper C.6: "the agent instruction limits camera-only chains to at most five consecutive actions": an
    # instruction (the system prompt says so); later camera actions execute and are counted in the row
    # (camera_chain_over). True (an ablation): the sixth in a row is rejected as a bad reply and costs a repair.
    enforce_camera_chain: bool = False
    # US dollars one episode attempt may spend on its model calls (vocab.CostLimit): past it the episode ends as
    # interrupted, resumable with a higher limit. None: no limit.
    max_episode_cost_usd: float | None = None

    def __post_init__(self):
        at_least(self, "harness", 0, "max_repairs", "history_actions")
        at_least(self, "harness", 1, "max_calls_per_step", "max_images", "context_tokens", "keep_turns")
        at_least(self, "harness", 0, "max_episode_cost_usd", strict=True)
