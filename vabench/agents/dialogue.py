"""One decision from the model: repairs of bad replies, tool calls answered in the same thread,
the per-step call limit, and the provider's usage and retries counted per call. Shared by
evaluation episodes (:mod:`vabench.agents.harness`) and summary learning."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from pathlib import Path

from vabench.errors import CostCapReached, RunStopped, VabenchError
from vabench.recordfile import Event
from vabench.vocab import CostLimit, EndReason, ErrorKind

from . import prompts
from .history import ASSISTANT, USER, Conversation, ImageRef
from .models import Model, ModelError, Reply, Usage
from .protocol import TOOL, Decision, ProtocolError
from .records import EpisodeRecord
from .tools import ToolResult


class EpisodeEnd(VabenchError):
    """Ends an episode (or a learning exchange) with an end reason; one that could not be judged
    (``infra_error``) says why (``error``) and whether retrying can help (``kind``)."""

    def __init__(self, reason: EndReason, error: str | None = None, kind: ErrorKind | None = None):
        super().__init__(reason)
        self.reason, self.error = reason, error
        self.kind = kind or (ErrorKind.INFRA if reason == EndReason.INFRA_ERROR else None)


class Dialogue:
    """Calls the model for one decision: repairs, tool calls and the per-step call limit.

    Shared by evaluation episodes and summary learning."""

    def __init__(
        self,
        model: Model,
        conv: Conversation,
        record: EpisodeRecord,
        config,  # a HarnessConfig (max_repairs, max_calls_per_step, max_episode_cost_usd)
        overdue: Callable[[], str | None] | None = None,
        counted: Callable[[Usage], None] | None = None,
    ):
        self.model, self.conv, self.record, self.config = model, conv, record, config
        self.overdue = overdue  # a reason when the episode ran out of time (checked before each call)
        self.counted = counted  # told the usage so far after each call (the progress bar's in-flight figures)
        self.calls = self.repairs = self.tool_calls = 0  # calls asked; repair prompts sent; tool calls answered
        self.usage = Usage()  # what the calls cost, answered or not

    def ask(self, step: int, parse, tools, until=None) -> Decision:
        """Return the next non-tool decision. ``parse(text) -> Decision`` may raise ProtocolError;
        ``tools(decision) -> ToolResult`` answers tool calls; ``until()``, if given, is checked
        after each tool call and ends the exchange with that tool decision when true."""
        calls = repairs = 0
        while True:
            if calls >= self.config.max_calls_per_step:
                raise EpisodeEnd(EndReason.CALL_LIMIT, f"{calls} model calls in step {step} without an action")
            calls += 1
            reply = self._call(step)
            try:
                decision = parse(reply.text)
            except ProtocolError as e:
                self.record.event(Event.REJECTED, step=step, error=str(e), repairs_used=repairs)
                if repairs >= self.config.max_repairs:
                    raise EpisodeEnd(EndReason.REPAIRS_EXHAUSTED, str(e)) from None
                repairs += 1
                self.repairs += 1  # repair prompts sent
                self._say(prompts.REPAIR.format(error=str(e)), "repair", step)
                continue
            self.record.event(
                Event.DECISION, step=step, kind=decision.kind, label=decision.label, reason=decision.reason
            )
            if decision.kind != TOOL:
                return decision
            self.tool_calls += 1
            try:
                result = tools(decision)
            except Exception as e:  # untrusted arguments must never crash the episode
                result = ToolResult(f"{decision.tool} failed on these arguments: {type(e).__name__}", ok=False)
            self.record.event(Event.TOOL_RESULT, step=step, tool=decision.tool, ok=result.ok)  # text: the next turn
            refs = [_ref(self.record.keep(p), f"{decision.tool} {i}") for i, p in enumerate(result.images)]
            self._say(prompts.TOOL_RESULT.format(tool=decision.tool, text=result.text), "tool", step, refs)
            if until is not None and until():
                return decision

    def _count(self, usage: Usage) -> None:
        self.usage += usage
        if self.counted is not None:
            self.counted(self.usage)

    def _say(self, text: str, kind: str, step: int, images: list[ImageRef] | None = None) -> None:
        self.conv.add(USER, text, kind, step, images)
        self.record.event(
            Event.TURN, role=USER, kind=kind, step=step, text=text, images=record_paths(self.record, images)
        )

    def _call(self, step: int) -> Reply:
        late = self.overdue() if self.overdue is not None else None
        if late:
            self.record.event(Event.TIMEOUT, step=step, error=late)
            raise EpisodeEnd(EndReason.INFRA_ERROR, late)
        cap = self.config.max_episode_cost_usd
        if cap is not None and (self.usage.cost_usd or 0.0) >= cap:  # the episode ends as interrupted
            raise CostCapReached(CostLimit.EPISODE, self.usage.cost_usd or 0.0, cap)
        messages, info = self.conv.request()
        self.calls += 1
        self.record.event(Event.REQUEST, step=step, call=self.calls, **_relinfo(self.record, info))
        started = time.perf_counter()
        try:
            reply = self.model.complete(messages)
        except ModelError as e:
            self._count(e.usage)
            u = e.usage
            self.record.event(
                Event.MODEL_ERROR,
                step=step,
                error=str(e),
                permanent=e.permanent,
                attempts=u.provider_attempts,
                backoff_s=round(u.backoff_s, 4),
            )
            kind = ErrorKind.PERMANENT if e.permanent else ErrorKind.INFRA
            raise EpisodeEnd(EndReason.INFRA_ERROR, f"model: {e}", kind) from None
        except RunStopped:  # a cap reached before the request left: the episode ends as interrupted
            raise
        except Exception as e:  # a broken agent is infrastructure, not a model's answer
            self.record.event(Event.MODEL_ERROR, step=step, error=traceback.format_exc(limit=5))
            raise EpisodeEnd(EndReason.INFRA_ERROR, f"model crashed: {type(e).__name__}: {e}") from None
        self._count(reply.usage + Usage(model_latency_s=reply.latency_s))  # the row's model_latency_s
        u = reply.usage
        self.record.event(
            Event.REPLY,
            step=step,
            call=self.calls,
            text=reply.text,
            prompt_tokens=u.prompt_tokens,
            completion_tokens=u.completion_tokens,
            reasoning_tokens=u.reasoning_tokens,
            cached_tokens=u.cached_tokens,  # of prompt_tokens: read from the provider's prompt cache
            cache_write_tokens=u.cache_write_tokens,
            reasoning=reply.reasoning,  # evaluator side: the conversation keeps only the reply's text
            cost_usd=u.cost_usd,
            attempts=u.provider_attempts,
            backoff_s=round(u.backoff_s, 4),
            limit_wait_s=round(u.limit_wait_s, 4),
            model_latency_s=round(reply.latency_s, 4),  # the answering attempt
            call_s=round(time.perf_counter() - started, 4),  # retries and backoff included
            request_id=reply.request_id,
            cached=bool(u.cache_hits),  # answered from the response cache (model.cache): not sent
        )
        self.conv.add(ASSISTANT, reply.text, "reply", step)
        return reply


def _ref(path: Path, label: str) -> ImageRef:
    from PIL import Image

    with Image.open(path) as im:
        return ImageRef(Path(path), label, im.width, im.height)


def record_paths(record: EpisodeRecord, images) -> list[str]:
    return [record.rel(r.path) for r in images or []]


def _relinfo(record: EpisodeRecord, info: dict) -> dict:
    return {**info, "images": [record.rel(Path(p)) for p in info["images"]]}
