"""The response cache (``model.cache``: off | on | only): a provider's replies kept per episode, so
an attempt that was interrupted (Ctrl-C, kill -9, a lost worker) or failed for infrastructure
sends its already-answered prefix again at no cost and goes on where it stopped. The simulation
being deterministic, the same replies replay the same trajectory, so the prefix's requests are
byte for byte the ones already answered.

- Keyed on the exact request: the model id, its parameters (max_tokens, temperature, extra) and
  the messages with their images' bytes (inline base64), hashed with sha256. Never the key: a
  config names its variable, and the request carries none.
- Scoped to one episode of one run index of one run folder (``<run>/_cache/<episode key>/``):
  independent runs, repetitions and episodes never share a reply.
- A hit is a reply with ``cache_hits=1`` and no tokens or cost (the row counts hits, never bills
  them); ``only`` never calls a provider: a miss is a permanent error.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from vabench.agents.chat.model import Model, ModelConfig, ModelError, Reply, Usage
from vabench.core.vocab import CacheMode


def request_key(cfg: ModelConfig, messages: list[dict]) -> str:
    """The sha256 of the exact request: model, parameters, messages (images inline)."""
    request = {
        "model": cfg.id,
        "max_tokens": cfg.max_tokens,
        "temperature": cfg.temperature,
        "extra": cfg.extra,
        "messages": messages,
    }
    return hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()


class CachedModel(Model):
    """A provider model behind the episode's response cache (:meth:`bind` names its folder)."""

    def __init__(self, inner: Model, cfg: ModelConfig):
        self.inner, self.cfg, self.mode = inner, cfg, CacheMode(cfg.cache)
        self.name, self.privileged = inner.name, inner.privileged
        self.folder: Path | None = None

    @property
    def limiter(self):
        return self.inner.limiter

    @limiter.setter
    def limiter(self, value) -> None:  # the worker sets the run's limiter: the provider's calls use it
        self.inner.limiter = value

    def bind(self, folder: Path | None) -> None:
        """The cache folder of the episode about to run (None: no cache, e.g. a record kept off the
        run folder's node)."""
        self.folder = Path(folder) if folder is not None else None

    def start_episode(self, ctx) -> None:
        self.inner.start_episode(ctx)

    def warm(self) -> None:
        self.inner.warm()

    def close(self) -> None:
        self.inner.close()

    def complete(self, messages: list[dict]) -> Reply:
        path = self.folder / f"{request_key(self.cfg, messages)[:32]}.json" if self.folder is not None else None
        if path is not None and path.is_file():
            kept = json.loads(path.read_text(encoding="utf-8"))
            return Reply(kept["text"], Usage(cache_hits=1), 0.0, kept.get("request_id"), kept.get("reasoning"))
        if self.mode == CacheMode.ONLY:
            raise ModelError(f"{self.name}: model.cache=only and this request is not in the cache", permanent=True)
        reply = self.inner.complete(messages)
        if path is not None:
            kept = {"text": reply.text, "request_id": reply.request_id, "reasoning": reply.reasoning}
            _write(path, {**kept, "cost_usd": reply.usage.cost_usd})  # what it cost: model.max_cost_usd counts it
        return reply


def _write(path: Path, data: dict) -> None:
    """Atomically: a reply is in the cache whole or not at all (a kill -9 mid-write leaves none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)
