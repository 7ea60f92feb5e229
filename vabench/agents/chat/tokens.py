"""Tokens: how each provider counts a request's input, and the harness's own model-agnostic estimate.

Two kinds of figure, each declared here once:

- **a count** (:func:`request_tokens`, :func:`text_tokens`, :func:`image_tokens`): what the model's
  provider would bill. Text goes through the provider's own tokenizer where LiteLLM ships one offline
  (``litellm.token_counter``: tiktoken's encodings for OpenAI's models); where none is known, OpenAI's
  o200k encoding stands in and :func:`tokenizer` says so (``exact=False``), so the plan can print it.
  Images follow each provider's published rule at their encoded size: OpenAI's 512-px tiles by
  ``detail``, Anthropic's width x height / 750 after its resize, Gemini's 768-px tiles. The plan, the
  ``python -m vabench.plan tokens`` command and the fake providers of the tests and benchmarks count so.
- **an estimate** (:func:`estimate_text`, :func:`estimate_messages`): 4 characters a token plus 8 a
  text, images by OpenAI's tiles, the same for every model. The harness bounds a conversation with it
  (compaction at ``harness.context_tokens``) and books a request on ``model.tpm`` with it before
  sending; it must not depend on the model (compaction may not favour one), so it is not a count.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import os
from dataclasses import dataclass
from io import BytesIO

OPENAI_LOW = 85  # an OpenAI image at detail=low, whatever its size
_HEADER_B64 = 8192  # base64 characters decoded first: enough for a PNG's or a plain JPEG's header
_OPENAI_PROVIDERS = ("openai", "azure", "text-completion-openai")
STAND_IN = "openai/gpt-4o"  # whose tokenizer (o200k_base) counts a model with none known
_PER_MESSAGE, _REPLY_PRIMING = 3, 3  # OpenAI's chat framing: each message's header, and the reply's start


def openai_image_tokens(width: int, height: int, detail: str = "high") -> int:
    """OpenAI's rule: ``low`` is 85; else fit in 2,048 px, scale the short side to at most 768 px,
    then 85 + 170 per 512-px tile."""
    if detail == "low":
        return OPENAI_LOW
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    return OPENAI_LOW + 170 * math.ceil(w * scale / 512) * math.ceil(h * scale / 512)


def provider_of(model_id: str) -> str:
    return model_id.split("/", 1)[0] if "/" in model_id else "openai"


def image_tokens(model_id: str, width: int, height: int, detail: str = "auto") -> int:
    """Input tokens of one image of this size, by the model's provider's published rule: Anthropic
    (resized to a long edge of at most 1,568 px and about 1.15 megapixels, then width x height / 750),
    Gemini (258 per image up to 384 px a side, else 258 per 768-px tile), otherwise OpenAI's tiles."""
    provider = provider_of(model_id)
    if provider == "anthropic":
        scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
        return math.ceil(width * scale * height * scale / 750)
    if provider in ("gemini", "vertex_ai"):
        if max(width, height) <= 384:
            return 258
        return 258 * math.ceil(width / 768) * math.ceil(height / 768)
    return openai_image_tokens(width, height, detail)


@dataclass(frozen=True)
class Tokenizer:
    """What counts a model's text: ``name`` (e.g. ``o200k_base``), ``exact`` (the provider's own
    tokenizer) and, where not, ``note``: why a stand-in counts."""

    name: str
    exact: bool
    note: str = ""


@functools.lru_cache(maxsize=256)
def tokenizer(model_id: str) -> Tokenizer:
    """The tokenizer :func:`text_tokens` uses for this model (LiteLLM's choice, named)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from litellm.litellm_core_utils.token_counter import openai_tokenizer_encoding_name

    provider = provider_of(model_id)
    if provider in _OPENAI_PROVIDERS:
        return Tokenizer(openai_tokenizer_encoding_name(model_id.split("/", 1)[-1]), True)
    encoding = openai_tokenizer_encoding_name(STAND_IN)
    why = {
        "anthropic": "Anthropic publishes no tokenizer for Claude 3 and later",
        "gemini": "Google's tokenizer is counted online only (countTokens)",
        "vertex_ai": "Google's tokenizer is counted online only (countTokens)",
    }.get(provider, f"no offline tokenizer is known for {provider}")
    return Tokenizer(encoding, False, f"{why}: OpenAI's {encoding} stands in for {model_id}'s text")


@functools.lru_cache(maxsize=1 << 16)
def text_tokens(model_id: str, text: str) -> int:
    """Tokens of ``text`` by the model's tokenizer (:func:`tokenizer`), through ``litellm.token_counter``."""
    if not text:
        return 0
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    name = model_id if tokenizer(model_id).exact else STAND_IN
    return int(litellm.token_counter(model=name, text=text))


def image_size(url: str) -> tuple[int, int] | None:
    """Width and height of a base64 data-URL image (or bare base64), from its header; None if unreadable."""
    from PIL import Image

    head, sep, b64 = url.partition(",")
    if not sep:
        b64, head = url, "data:;base64"
    if not head.startswith("data:") or not head.endswith(";base64"):
        return None
    for chunk in (b64[: _HEADER_B64 - _HEADER_B64 % 4], b64):  # a JPEG's size can sit after large EXIF data
        try:
            return Image.open(BytesIO(base64.b64decode(chunk))).size
        except Exception:  # an unreadable image is counted as unknown, never fails
            continue
    return None


@dataclass
class RequestTokens:
    """A request's prompt tokens: its texts, its images, the chat framing, and ``unknown`` images
    (sizes that could not be read: counted as the largest square's)."""

    text: int = 0
    images: int = 0
    framing: int = 0
    image_count: int = 0
    unknown: int = 0

    @property
    def total(self) -> int:
        return self.text + self.images + self.framing


def _part(model_id: str, part: dict, out: RequestTokens) -> None:
    kind = part.get("type")
    if kind == "text":
        out.text += text_tokens(model_id, str(part.get("text") or ""))
        return
    if kind in ("image_url", "image"):
        if kind == "image_url":
            image = part.get("image_url") or {}
            url, detail = (
                (image, "auto") if isinstance(image, str) else (str(image.get("url", "")), image.get("detail"))
            )
        else:  # Anthropic's {"type": "image", "source": {"data": base64}}
            url, detail = str((part.get("source") or {}).get("data", "")), "auto"
        size = None if detail == "low" else image_size(url)
        out.unknown += size is None and detail != "low"
        out.image_count += 1
        out.images += image_tokens(model_id, *(size or (2048, 2048)), detail=detail or "auto")
        return
    out.text += text_tokens(model_id, json.dumps({k: v for k, v in part.items() if k != "cache_control"}))


def request_tokens(model_id: str, messages: list[dict]) -> RequestTokens:
    """Prompt tokens of a chat-format messages list (OpenAI's parts, or Anthropic's image blocks):
    each text by the model's tokenizer, each image by its provider's rule, plus OpenAI's framing
    (3 a message and its role's tokens, 1 and the name's for a name, 3 for the reply's start), as
    ``litellm.token_counter`` counts it."""
    out = RequestTokens(framing=_REPLY_PRIMING)
    for message in messages:
        out.framing += _PER_MESSAGE + text_tokens(model_id, str(message.get("role") or ""))
        if message.get("name"):
            out.framing += 1 + text_tokens(model_id, str(message["name"]))
        content = message.get("content")
        for part in [{"type": "text", "text": content}] if isinstance(content, str) else content or ():
            _part(model_id, part, out)
        for call in message.get("tool_calls") or ():
            fn = call.get("function") or {}
            out.text += text_tokens(model_id, str(fn.get("name") or "")) + text_tokens(
                model_id, str(fn.get("arguments") or "")
            )
    return out


# -- the harness's estimate (model-agnostic; not a count) ----------------------------------------------


def estimate_text(text: str) -> int:
    """The harness's estimate of one text: 4 characters a token, plus 8."""
    return math.ceil(len(text) / 4) + 8


UNKNOWN_IMAGE = openai_image_tokens(2048, 2048)  # an image whose size cannot be read: the largest square's


def estimate_messages(messages: list[dict]) -> int:
    """The harness's estimate of OpenAI-format messages, as :meth:`Conversation.request` makes it:
    :func:`estimate_text` per text, OpenAI's tiles per image at its encoded size (``detail: low``: 85)."""
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += estimate_text(content)
            continue
        for part in content or ():
            if part.get("type") == "text":
                total += estimate_text(part.get("text") or "")
            elif part.get("type") == "image_url":
                image = part.get("image_url") or {}
                if image.get("detail") == "low":
                    total += OPENAI_LOW
                    continue
                size = image_size(str(image.get("url", "")))
                total += openai_image_tokens(*size) if size else UNKNOWN_IMAGE
    return total
