"""The chat model interface and how to reach a model (:class:`ModelConfig`).

A chat model receives OpenAI-format chat messages (images as base64 data URLs) and returns the text
of one reply plus its usage; the chat harness (:mod:`vabench.agents.chat.agent`) is the agent that asks
it. Implementations: the LiteLLM client (:mod:`vabench.agents.models.llm`), its response cache and the
replay of a chat record; agents that read observations implement :class:`vabench.core.boundary.Agent`
instead. :mod:`vabench.agents.models.kinds` picks one for a config. A provider that cannot answer
raises :class:`ModelError`: infrastructure, never skill.
"""

from __future__ import annotations

import base64
from abc import abstractmethod
from dataclasses import dataclass, field

from vabench.core.boundary import ANSWERED, Brief, Participant, Usage
from vabench.core.checks import at_least, one_of
from vabench.core.errors import ConfigError, VabenchError
from vabench.core.vocab import CacheMode


@dataclass(frozen=True)
class Reply:
    text: str
    usage: Usage = ANSWERED
    latency_s: float = 0.0  # the answering HTTP attempt
    request_id: str | None = None
    reasoning: str | None = None  # reasoning text a provider returned: kept in the record, never sent back


class ModelError(VabenchError, RuntimeError):
    """The provider could not answer (retries exhausted, or a non-retryable error). Infra, not skill.

    ``permanent``: retrying cannot help (bad key, unknown model, a rejected request), so a driver
    should stop and say so instead of burning every episode's attempts; ``usage``: what the
    unanswered call cost (HTTP attempts, waits)."""

    def __init__(self, message: str, permanent: bool = False, usage: Usage | None = None):
        super().__init__(message)
        self.permanent, self.usage = permanent, usage or Usage()


class Model(Participant):
    """A chat model: answers OpenAI-format requests. The chat harness (vabench.agents.chat.agent) is the
    agent that renders observations into its requests and parses its replies."""

    def start_episode(self, ctx: Brief) -> None:  # noqa: B027 (optional hook)
        """Called before the first request of each episode."""

    @abstractmethod
    def complete(self, messages: list[dict]) -> Reply:
        """Answer one chat request (OpenAI message format)."""


@dataclass(frozen=True)
class ModelConfig:
    """How to reach one model: the defaults of every ``conf/model/*.yaml`` live here, once
    (``vabench.run.config.run`` registers them as Hydra's ``model/_defaults``). Keys never live
    here: ``api_key_env`` names the environment variable."""

    # what to call (``model.id``): an offline agent (oracle, random, servo, ...) or a LiteLLM provider string:
    # openai/..., anthropic/..., gemini/..., hosted_vllm/..., ollama_chat/...
    id: str
    name: str | None = None  # what rows and records call it (the condition's model); default: the id
    api_base: str | None = None  # the endpoint (a vLLM or Ollama server, a proxy); None: the provider's own
    api_key_env: str | None = None  # the environment variable holding the key; None: the provider's usual one
    timeout_s: float = 180.0  # per HTTP attempt; replies with several images can take a minute
    max_retries: int = 6  # retries of a failed HTTP attempt (rate limit, timeout, 5xx), with backoff
    backoff_initial_s: float = 2.0  # exponential backoff with full jitter from this; a longer Retry-After wins
    backoff_max_s: float = 60.0  # the longest wait between retries
    max_tokens: int = 4096  # output tokens per reply (reasoning tokens included)
    temperature: float | None = None  # None: the provider's default (extended thinking accepts only None or 1)
    max_concurrency: int = 8  # episodes in flight for this model at once (a provider's rate limit)
    rpm: float | None = None  # requests/min for this model's key: all workers, nodes, runs (docs/limits.md); None: off
    tpm: float | None = None  # tokens (prompt + completion) per minute, the same way (vabench.agents.models.ratelimit)
    share_limits: bool = True  # rpm/tpm: one budget with every run of this model id, endpoint and key; False: alone
    extra: dict = field(default_factory=dict)  # more LiteLLM kwargs (reasoning_effort, top_p, ...)
    cache: str = CacheMode.OFF  # off | on | only: the response cache (vabench.agents.models.cache)
    # Anthropic cache_control breakpoints after the system prompt and the newest turn's text (agents.models.llm);
    # OpenAI and Gemini cache a repeated prefix by themselves. False: requests carry no breakpoints.
    prompt_cache: bool = True
    # US dollars this run may spend on the model (LiteLLM's prices), across every worker and node, summary learning
    # included; counted from the spend the run folder's rows already record. None: no limit.
    max_cost_usd: float | None = None

    def __post_init__(self):
        one_of(self, "model", "cache", CacheMode)
        at_least(self, "model", 0, "timeout_s", "rpm", "tpm", "max_cost_usd", strict=True)
        at_least(self, "model", 0, "max_retries", "backoff_initial_s", "backoff_max_s")
        at_least(self, "model", 1, "max_tokens", "max_concurrency")
        thinking = self.extra.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") == "enabled" and self.temperature not in (None, 1, 1.0):
            raise ConfigError(
                f"'model.temperature' = {self.temperature}: with extended thinking (model.extra.thinking) providers "
                "accept only no temperature or 1; set model.temperature=null, or model.extra.thinking.type=disabled"
            )


# Images

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_media_type(data: bytes) -> str:
    """The media type of encoded image bytes, read from the magic bytes (never trusted from a label:
    Anthropic rejects a JPEG declared as PNG, and LiteLLM forwards the declared type unchecked)."""
    for magic, media in _MAGIC:
        if data.startswith(magic):
            return media
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    raise ValueError(f"not a PNG, JPEG, GIF or WEBP image (first bytes {data[:8]!r})")


def image_part(png_or_jpeg_bytes: bytes) -> dict:
    """An OpenAI-format ``image_url`` content part carrying the image inline as a base64 data URL."""
    media = image_media_type(png_or_jpeg_bytes)
    b64 = base64.b64encode(png_or_jpeg_bytes).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{media};base64,{b64}"}}
