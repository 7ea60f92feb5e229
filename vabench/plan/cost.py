"""The plan's cost lines: the headline at the caches this run will use (the provider's prompt cache
as ``model.prompt_cache`` and the provider leave it, the response cache as ``model.cache``), then
what the other prompt-cache setting would cost."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from vabench.core.vocab import CacheMode, PromptCache
from vabench.plan.estimate import Estimate, cache_kind
from vabench.run.config.run import RunConfig

_READS = {
    PromptCache.AUTOMATIC: "automatic (the provider reads a repeated prefix by itself)",
    PromptCache.BREAKPOINTS: "on (model.prompt_cache=true: breakpoints after the system prompt and the newest turn)",
    PromptCache.NONE: str(PromptCache.NONE),
}
_RESPONSES = {
    CacheMode.OFF: str(CacheMode.OFF),
    CacheMode.ON: "on (a retried or resumed attempt replays its answered requests free: each is paid once, as here)",
}


def _usd(value: float | None) -> str:
    return "unknown (no price in LiteLLM's map)" if value is None else f"${value:,.2f}"


def _each(cost: float | None, n: float) -> str:
    return _usd(None if cost is None else cost / max(n, 1))


def cost_lines(
    run: RunConfig, total: Estimate, learn: Estimate, price, totals: Callable[[RunConfig], Estimate]
) -> list[str]:
    """The headline cost and the other prompt-cache setting's, per episode and in all (``totals``:
    the episodes of a run, to price one with the other setting)."""
    n = total.episodes
    if run.model.cache == CacheMode.ONLY:
        return [
            "cost: $0.00 (model.cache=only: every reply comes from the run's response cache and nothing is sent; "
            "a request not in it fails)"
        ]
    kind, cost, learned = cache_kind(run), total.cost(price), learn.cost(price)
    both = None if cost is None or learned is None else cost + learned
    reads = _READS[kind]
    if kind == PromptCache.NONE and run.model.id.startswith("anthropic/"):
        reads = "off (model.prompt_cache=false: no breakpoints)"
    lines = [
        f"cost: {_usd(both)}: episodes {_usd(cost)} ({_each(cost, n)} per episode) + summary learning "
        f"{_usd(learned)}; prompt cache {reads}; response cache {_RESPONSES[CacheMode(run.model.cache)]}"
    ]
    uncached = Estimate(input=total.input, output=total.output, reasoning=total.reasoning).cost(price)
    if kind != PromptCache.NONE:
        lines.append(f"  without a prompt cache: episodes {_usd(uncached)} ({_each(uncached, n)} per episode)")
    elif run.model.id.startswith("anthropic/"):
        cached = totals(replace(run, model=replace(run.model, prompt_cache=True))).cost(price)
        lines.append(f"  with model.prompt_cache=true: episodes {_usd(cached)} ({_each(cached, n)} per episode)")
    return lines
