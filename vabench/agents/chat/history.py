"""One conversation per episode, and what of it each request carries.

The conversation keeps every turn (the on-disk record keeps them too). A request is built from
it under two bounds that are the same for every model:

- an image cap: the current observation (one active image, or the five passive views) and the
  newest tool result (e.g. up to 8 demo frames) always carry all their images; earlier images
  fill the request newest first until it holds ``max_images``, and the rest become a one-line
  text stub. A request therefore carries at most max(max_images, current + newest tool images).
  In the passive protocol earlier bundles are never re-sent (paper D.1: each passive request
  carries only the current bundle). With ``resend=False`` (the ``paper`` observation profile)
  no earlier image is re-sent in either protocol (D.1: "Earlier visual payloads are not re-sent as
  the current observation"): a request carries the current observation's images and those of the
  newest tool result after it (``camera.history`` is how a model looks back).
- a context limit: when the estimated request size (the harness's model-agnostic estimate,
  :mod:`vabench.agents.chat.tokens`) exceeds ``context_tokens``, the oldest turns
  (all but the last ``keep_turns`` observations) are replaced by one harness-written digest of
  what happened in them, prepended to the first kept observation (so user and assistant turns
  still alternate, which strict chat templates require). The digest is deterministic and
  model-agnostic, unlike the reference harness's model-written handoff, so compaction cannot
  favour one model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from vabench.agents.chat.model import image_part

from .harness_config import HarnessConfig
from .tokens import estimate_text, openai_image_tokens

SYSTEM, USER, ASSISTANT = "system", "user", "assistant"
_CURRENT = "\n\n--- current observation ---\n"  # separates a digest from the observation it precedes


@dataclass(frozen=True)
class ImageRef:
    path: Path  # PNG on disk (the model-facing frame)
    label: str  # e.g. "step 3 active", "step 3 side"
    width: int
    height: int


@dataclass
class Turn:
    role: str
    text: str
    kind: str  # system | observation | tool | repair | reply | compaction | task
    step: int
    images: list[ImageRef] = field(default_factory=list)


class Encoder:
    """Frame files to data URLs. Frames are stored in the format they are sent in (see
    records.save_frame), so the bytes on disk are exactly what the model received and nothing is
    encoded twice; the media type comes from the bytes, never from a label. The cache holds only
    what the last request carried: older frames are not sent again."""

    def __init__(self):
        self._cache: dict[Path, dict] = {}

    def part(self, ref: ImageRef) -> dict:
        if ref.path not in self._cache:
            self._cache[ref.path] = image_part(ref.path.read_bytes())
        return self._cache[ref.path]

    def keep_only(self, paths: set[Path]) -> None:
        self._cache = {p: v for p, v in self._cache.items() if p in paths}


class Conversation:
    def __init__(
        self,
        system: str,
        passive: bool = False,
        limits: HarnessConfig | None = None,
        encoder: Encoder | None = None,
        resend: bool = True,
    ):
        """``limits``: the harness settings whose ``max_images``, ``context_tokens`` and
        ``keep_turns`` bound what is sent."""
        limits = limits or HarnessConfig()
        self.turns: list[Turn] = [Turn(SYSTEM, system, "system", 0)]
        self.passive, self.max_images, self.resend = passive, limits.max_images, resend
        self.context_tokens, self.keep_turns = limits.context_tokens, limits.keep_turns
        self.encoder = encoder or Encoder()
        self.compactions = 0

    def add(self, role: str, text: str, kind: str, step: int, images: list[ImageRef] | None = None) -> Turn:
        turn = Turn(role, text, kind, step, list(images or []))
        self.turns.append(turn)
        return turn

    # -- request ------------------------------------------------------------------------
    def _included(self) -> set[int]:
        """ids of the ImageRefs this request carries (see module docstring)."""
        keep: set[int] = set()
        image_turns = [t for t in self.turns if t.images]
        if not image_turns:
            return keep
        keep.update(id(r) for r in image_turns[-1].images)
        observations = [t for t in image_turns if t.kind == "observation"]
        current = observations[-1] if observations else None
        if current is not None:
            keep.update(id(r) for r in current.images)
        if not self.resend and current is not None:
            return keep  # the current observation, and the newest tool result (which can only follow it)
        for turn in reversed(image_turns):
            if self.passive and turn.kind == "observation" and turn is not current:
                continue
            for ref in reversed(turn.images):
                if len(keep) >= self.max_images:
                    return keep
                keep.add(id(ref))
        return keep

    def request(self) -> tuple[list[dict], dict]:
        """OpenAI-format messages plus a summary for the record (images sent, tokens)."""
        keep = self._included()
        messages, sent, omitted, tokens = [], [], 0, 0
        for turn in self.turns:
            tokens += estimate_text(turn.text)
            if not turn.images:
                messages.append({"role": turn.role, "content": turn.text})
                continue
            parts = [{"type": "text", "text": turn.text}]
            for ref in turn.images:
                if id(ref) in keep:
                    parts.append(self.encoder.part(ref))
                    sent.append(str(ref.path))
                    tokens += openai_image_tokens(ref.width, ref.height)
                else:
                    parts.append({"type": "text", "text": f"[image omitted: {ref.label}]"})
                    omitted += 1
            messages.append({"role": turn.role, "content": parts})
        self.encoder.keep_only({Path(p) for p in sent})
        return messages, {"images": sent, "omitted_images": omitted, "est_tokens": tokens, "messages": len(messages)}

    # -- compaction -----------------------------------------------------------------------
    def estimate(self) -> int:
        keep = self._included()
        total = 0
        for turn in self.turns:
            total += estimate_text(turn.text)
            total += sum(openai_image_tokens(r.width, r.height) for r in turn.images if id(r) in keep)
        return total

    def compact_if_needed(self, digest: Callable[[int, int], str], header: str) -> str | None:
        """Fold old turns into a digest when the request would exceed the context limit; returns
        the digest text (for the record) or None."""
        if self.estimate() <= self.context_tokens:
            return None
        starts = [i for i, t in enumerate(self.turns) if t.kind == "observation"]
        if len(starts) <= self.keep_turns or starts[-self.keep_turns] <= 1:
            return None
        cut = starts[-self.keep_turns]
        first = self.turns[cut]
        last = first.step - 1  # the digest restarts from step 0 each time, so it subsumes older ones
        text = header.format(first=0, last=last) + "\n" + digest(0, last)
        body = first.text.split(_CURRENT, 1)[-1]  # an earlier digest is replaced, not stacked
        merged = Turn(USER, text + _CURRENT + body, "observation", first.step, first.images)
        self.turns = [self.turns[0], merged] + self.turns[cut + 1 :]
        self.compactions += 1
        return text
