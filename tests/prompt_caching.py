"""Fake providers' prompt caches, as the providers document them, for :class:`ScriptedServer`.

:class:`PromptCache` is a reply callable (like ``Faults``): it reads each request body as it
arrived over HTTP, works out which of its input tokens the provider would read from its prompt
cache and which it would write, and answers ``reply(body)`` with that usage in the provider's own
format, which LiteLLM then reads as it reads a real provider's.

- **OpenAI** (``openai``, chat completions): automatic; a request whose prefix is identical to an
  earlier request's for 1,024 tokens or more reads the longest such prefix from the cache, in
  increments of 128 tokens after the first 1,024.
- **Anthropic** (``anthropic``, Messages API): only up to ``cache_control`` breakpoints. A
  breakpoint's prefix is read when an earlier request wrote that exact prefix; the provider also
  looks back up to 20 content blocks from each breakpoint for an earlier entry. What lies between
  the read and the last breakpoint is written (billed at 1.25x), once it reaches the model's
  minimum of 1,024 tokens; ``usage.input_tokens`` is what is neither read nor written.

Tokens are counted over content blocks (a text, an image) as the provider counts them, by
:mod:`vabench.agents.chat.tokens` (never the harness's or the planner's rule): text by the model's
tokenizer through ``litellm.token_counter``, images by the provider's rule at their encoded size
(OpenAI's tiles, Anthropic's width x height / 750 after its resize). Two blocks are the same when
their bytes are; a text block that only extends an earlier one matches up to their common
characters, counted by the same tokenizer (OpenAI caches at token granularity).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
from dataclasses import dataclass, field

from vabench.agents.chat.tokens import image_tokens, text_tokens

OPENAI, ANTHROPIC = "openai", "anthropic"
MIN_PREFIX = 1024  # both providers' smallest cacheable prefix (Claude Sonnet; OpenAI's documented minimum)
OPENAI_STEP = 128
LOOKBACK = 20  # Anthropic: content blocks checked before a breakpoint for an earlier entry


@dataclass(frozen=True)
class Block:
    key: str  # the block's bytes, hashed: equal keys are identical blocks
    tokens: int
    text: str | None = None  # a text block's text (partial matches)
    breakpoint: bool = False  # Anthropic cache_control after this block
    model: str = ""  # whose tokenizer counts the block (a partial match's tokens)


def _text(text: str, model: str, breakpoint: bool = False) -> Block:
    return Block(hashlib.sha256(text.encode()).hexdigest(), text_tokens(model, text), text, breakpoint, model)


def _image(data: bytes, model: str, breakpoint: bool = False) -> Block:
    from PIL import Image

    w, h = Image.open(io.BytesIO(data)).size
    tokens = image_tokens(model, w, h)  # the provider's documented rule
    return Block(hashlib.sha256(data).hexdigest(), tokens, None, breakpoint, model)


def _part(part: dict, model: str) -> Block:
    mark = bool(part.get("cache_control"))
    kind = part.get("type")
    if kind == "text":
        return _text(part.get("text") or "", model, mark)
    if kind == "image_url":
        url = (part.get("image_url") or {}).get("url", "")
        return _image(base64.b64decode(url.partition(",")[2]), model, mark)
    if kind == "image":
        return _image(base64.b64decode(part["source"]["data"]), model, mark)
    return _text(json.dumps(part, sort_keys=True), model, mark)


def model_of(body: dict, provider: str) -> str:
    """The LiteLLM model id a request body was sent for (``provider/model``: whose tokenizer counts it)."""
    return f"{provider}/{body.get('model') or 'model'}"


def blocks(body: dict, provider: str) -> list[Block]:
    """A request body as the provider's cache sees it: its content blocks in order, each role
    change a block of its own (so moving text between roles is not a match; the role's block
    stands for the message's framing)."""
    out: list[Block] = []
    model = model_of(body, provider)
    system = body.get("system")
    if system:
        out.append(_text("<system>", model))
        parts = [{"type": "text", "text": system}] if isinstance(system, str) else system
        out += [_part(p, model) for p in parts]
    for message in body.get("messages", []):
        out.append(_text(f"<{message.get('role')}>", model))
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        out += [_part(p, model) for p in parts]
    return out


def common_tokens(a: list[Block], b: list[Block]) -> int:
    """Tokens of the longest common prefix of two requests (a text block that only extends the
    other counts up to their common characters)."""
    total = 0
    for x, y in zip(a, b, strict=False):
        if x.key == y.key:
            total += x.tokens
            continue
        if x.text is not None and y.text is not None:
            total += text_tokens(x.model, _common_prefix(x.text, y.text))
        break
    return total


def _common_prefix(a: str, b: str) -> str:
    n = 0
    for n, (p, q) in enumerate(zip(a, b, strict=False)):  # noqa: B007
        if p != q:
            return a[:n]
    return a[: min(len(a), len(b))]


def _prefix_keys(bs: list[Block]) -> list[str]:
    """The hash of each prefix ending after block i."""
    keys, h = [], hashlib.sha256()
    for b in bs:
        h.update(b.key.encode())
        keys.append(h.copy().hexdigest())
    return keys


@dataclass
class Usage:
    input_tokens: int  # all input tokens of the request
    read: int = 0
    written: int = 0
    repeated: int = 0  # tokens of its prefix identical to the previous request's
    output: int = 0  # the reply's tokens


@dataclass
class PromptCache:
    """A provider's prompt cache (``provider``: openai | anthropic) in front of ``reply(body)``,
    which returns the reply's text; ``output_tokens`` is what each reply reports (None: the reply
    text's tokens by the model's tokenizer). ``log`` keeps each request's :class:`Usage` in arrival
    order."""

    provider: str
    reply: object
    output_tokens: int | None = 120
    log: list[Usage] = field(default_factory=list)
    _seen: list[list[Block]] = field(default_factory=list)
    _entries: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict):
        text = self.reply(body)
        with self._lock:
            usage = self._use(blocks(body, self.provider))
            usage.output = self.output_tokens if self.output_tokens is not None else self._reply_tokens(body, text)
            self.log.append(usage)
        return {"content": text, "usage": self._wire(usage)}

    def _reply_tokens(self, body: dict, text: str) -> int:
        return text_tokens(model_of(body, self.provider), text)

    def _use(self, bs: list[Block]) -> Usage:
        total = sum(b.tokens for b in bs)
        repeated = common_tokens(bs, self._seen[-1]) if self._seen else 0
        usage = Usage(total, repeated=repeated)
        if self.provider == OPENAI:
            best = max((common_tokens(bs, seen) for seen in self._seen), default=0)
            usage.read = 0 if best < MIN_PREFIX else MIN_PREFIX + (best - MIN_PREFIX) // OPENAI_STEP * OPENAI_STEP
        else:
            usage.read, usage.written = self._anthropic(bs)
        self._seen.append(bs)
        return usage

    def _anthropic(self, bs: list[Block]) -> tuple[int, int]:
        keys, ends = _prefix_keys(bs), [0]
        for b in bs:
            ends.append(ends[-1] + b.tokens)
        marks = [i for i, b in enumerate(bs) if b.breakpoint]
        read_at = -1  # the last block of the longest prefix read from the cache
        for i in marks:
            for j in range(i, max(-1, i - LOOKBACK - 1), -1):
                if keys[j] in self._entries:
                    read_at = max(read_at, j)
                    break
        read = ends[read_at + 1]
        written = 0
        for i in marks:
            if ends[i + 1] >= MIN_PREFIX and keys[i] not in self._entries:
                self._entries.add(keys[i])
                written = max(written, ends[i + 1] - read)
        return read, max(0, written)

    def _wire(self, u: Usage) -> dict:
        if self.provider == OPENAI:
            return {
                "prompt_tokens": u.input_tokens,
                "completion_tokens": u.output,
                "prompt_tokens_details": {"cached_tokens": u.read},
            }
        return {
            "input_tokens": u.input_tokens - u.read - u.written,
            "output_tokens": u.output,
            "cache_read_input_tokens": u.read,
            "cache_creation_input_tokens": u.written,
        }
