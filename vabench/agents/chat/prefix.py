"""Requests a provider's prompt cache can reuse, and what that is billed.

Providers bill a repeated request prefix at a fraction of the input price (OpenAI automatically,
from 1,024 identical tokens; Gemini implicitly; Anthropic up to ``cache_control`` breakpoints the
request sets), but only when the prefix is byte-identical. The conversation
(:mod:`vabench.agents.chat.history`) keeps it so: every turn is sent as it was sent before, except
where the paper's rules change it (an earlier image becomes its text stub, compaction folds old
turns into a digest). Here: the breakpoints Anthropic needs, the cached-token counts of a reply,
and per-token prices (read from LiteLLM's map by :func:`vabench.agents.models.llm.prices`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Prices:
    """US dollars per token from LiteLLM's local price map: input, input read from the provider's
    prompt cache, input written to it, output, and reasoning output (the output price when the map
    has none)."""

    input: float
    cached_input: float
    cache_write: float
    output: float
    reasoning: float


def cache_tokens(usage: Any) -> dict[str, int]:
    """Prompt tokens read from and written to the provider's prompt cache (both part of
    ``prompt_tokens``): OpenAI's ``prompt_tokens_details.cached_tokens``, which LiteLLM also fills
    from Anthropic's ``cache_read_input_tokens``; Anthropic's ``cache_creation_input_tokens``."""
    details = getattr(usage, "prompt_tokens_details", None)
    read = getattr(details, "cached_tokens", None) or getattr(usage, "cache_read_input_tokens", 0)
    return {
        "cached_tokens": int(read or 0),
        "cache_write_tokens": int(getattr(usage, "cache_creation_input_tokens", 0) or 0),
    }


BREAKPOINT = {"type": "ephemeral"}  # Anthropic's cache_control: the prefix up to here is cached (5 minutes)


def cache_breakpoints(messages: list[dict]) -> list[dict]:
    """The messages with Anthropic ``cache_control`` breakpoints (a copy; only the marked parts are
    new objects): one after the system prompt, and one after the newest user turn's text, before its
    images. The paper's rules turn that turn's images into text stubs in the next request
    (vabench.agents.chat.history), so the next request reads the cache up to that text (Anthropic looks
    up to 20 blocks back from its own breakpoints) and no image is ever written to the cache in vain.
    Nothing the model reads changes: only the markers are added."""
    out = list(messages)
    for i in (0, max(i for i, m in enumerate(out) if m.get("role") == "user")) if out else ():
        message = out[i]
        if message.get("role") not in ("system", "user"):
            continue
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        texts = [j for j, p in enumerate(parts) if p.get("type") == "text"]
        if not texts:
            continue
        last_text = texts[0] if len(texts) < len(parts) else texts[-1]  # before the images, if any
        parts[last_text] = {**parts[last_text], "cache_control": BREAKPOINT}
        out[i] = {**message, "content": parts}
    return out


def anthropic(model_id: str) -> bool:
    """Whether LiteLLM sends this model to Anthropic's Messages API (the only provider here whose
    prompt cache needs breakpoints; OpenAI's and Gemini's cache prefixes by themselves)."""
    return model_id.split("/", 1)[0] == "anthropic"
