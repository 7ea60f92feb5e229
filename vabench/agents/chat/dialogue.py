"""One decision from an agent: repairs of bad answers, tool calls answered within the step, the
per-step call limit, and the usage and retries counted per call. The chat model's side
(:class:`Dialogue`) is shared by evaluation episodes (:mod:`vabench.agents.chat.agent`) and summary
learning; :class:`Direct` asks agents that read observations (vabench.core.boundary)."""

from __future__ import annotations

import dataclasses
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

from vabench.agents.chat.model import Model, ModelError, Reply, Usage
from vabench.core.boundary import Agent, Answer, Brief, Observation, ToolResult, payload
from vabench.core.errors import CostCapReached, RunStopped, VabenchError
from vabench.core.vocab import CostLimit, EndReason, ErrorKind
from vabench.results.recordfile import Event
from vabench.results.records import EpisodeRecord

from . import prompts
from .history import ASSISTANT, USER, Conversation, ImageRef
from .protocol import INVALID, TOOL, Decision, InvalidAnswer, ProtocolError


class EpisodeEnd(VabenchError):
    """Ends an episode (or a learning exchange) with an end reason; one that could not be judged
    (``infra_error``) says why (``error``) and whether retrying can help (``kind``)."""

    def __init__(self, reason: EndReason, error: str | None = None, kind: ErrorKind | None = None):
        super().__init__(reason)
        self.reason, self.error = reason, error
        self.kind = kind or (ErrorKind.INFRA if reason == EndReason.INFRA_ERROR else None)


class Exchange(ABC):
    """One decision from an agent: the per-step call limit, repairs of invalid answers, tool calls
    answered without advancing the simulator, and the usage counted per call. The chat harness's
    :class:`Dialogue` asks a chat model; :class:`Direct` asks an agent that reads observations."""

    def __init__(
        self,
        record: EpisodeRecord,
        config,  # a HarnessConfig (max_repairs, max_calls_per_step, max_episode_cost_usd)
        overdue: Callable[[], str | None] | None = None,
        counted: Callable[[Usage], None] | None = None,
    ):
        self.record, self.config = record, config
        self.overdue = overdue  # a reason when the episode ran out of time (checked before each call)
        self.counted = counted  # told the usage so far after each call (the progress bar's in-flight figures)
        self.calls = self.repairs = self.tool_calls = 0  # calls asked; repair prompts sent; tool calls answered
        self.usage = Usage()  # what the calls cost, answered or not

    def ask(self, step: int, parse, tools, until=None) -> Decision:
        """Return the next non-tool decision. ``parse(answer) -> Decision`` may raise ProtocolError;
        ``tools(decision) -> ToolResult`` answers tool calls; ``until()``, if given, is checked
        after each tool call and ends the exchange with that tool decision when true."""
        calls = repairs = 0
        while True:
            if calls >= self.config.max_calls_per_step:
                raise EpisodeEnd(EndReason.CALL_LIMIT, f"{calls} model calls in step {step} without an action")
            calls += 1
            try:
                decision = parse(self._call(step))  # _call raises InvalidAnswer for an answer an agent could not give
            except ProtocolError as e:
                self.record.event(Event.REJECTED, step=step, error=str(e), repairs_used=repairs)
                if repairs >= self.config.max_repairs:
                    raise EpisodeEnd(EndReason.REPAIRS_EXHAUSTED, str(e)) from None
                repairs += 1
                self.repairs += 1  # repair prompts sent
                self._repair(str(e), step)
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
            self._answer_tool(decision.tool, result, step)
            if until is not None and until():
                return decision

    def _count(self, usage: Usage) -> None:
        self.usage += usage
        if self.counted is not None:
            self.counted(self.usage)

    def _call(self, step: int):
        late = self.overdue() if self.overdue is not None else None
        if late:
            self.record.event(Event.TIMEOUT, step=step, error=late)
            raise EpisodeEnd(EndReason.INFRA_ERROR, late)
        cap = self.config.max_episode_cost_usd
        if cap is not None and (self.usage.cost_usd or 0.0) >= cap:  # the episode ends as interrupted
            raise CostCapReached(CostLimit.EPISODE, self.usage.cost_usd or 0.0, cap)
        self.calls += 1
        self._prepare(step)  # outside the agent's try: a failure to build the request is the harness's (a crash)
        started = time.perf_counter()
        try:
            answer = self._answer(step)
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
        except InvalidAnswer as e:  # asked and answered, but not with a decision: refused as a bad reply is
            self._count(e.usage + Usage(model_latency_s=e.latency_s))
            self._answered(step, e, started)
            raise
        except RunStopped:  # a cap reached before the request left: the episode ends as interrupted
            raise
        except Exception as e:  # a broken agent is infrastructure, not a model's answer
            self.record.event(Event.MODEL_ERROR, step=step, error=traceback.format_exc(limit=5))
            raise EpisodeEnd(EndReason.INFRA_ERROR, f"model crashed: {type(e).__name__}: {e}") from None
        self._count(answer.usage + Usage(model_latency_s=answer.latency_s))  # the row's model_latency_s
        self._answered(step, answer, started)
        return answer

    def _prepare(self, step: int) -> None:  # noqa: B027 (optional hook)
        """What a call needs before the agent is asked (a chat model's request, built and recorded)."""

    @abstractmethod
    def _answer(self, step: int):
        """Ask once: a chat model's :class:`Reply`, or an agent's typed answer."""

    def _answered(self, step: int, answer, started: float) -> None:  # noqa: B027 (optional hook)
        """What the record and the conversation keep of an answer."""

    @abstractmethod
    def _repair(self, error: str, step: int) -> None:
        """Tell the agent why its answer was refused."""

    @abstractmethod
    def _answer_tool(self, tool: str, result: ToolResult, step: int) -> None:
        """Hand the agent a tool's result."""


class Dialogue(Exchange):
    """The chat harness's exchange with a chat model: requests from the conversation, replies
    parsed by the caller's ``parse(text)``, repairs and tool results sent back as user turns.

    Shared by evaluation episodes and summary learning."""

    def __init__(self, model: Model, conv: Conversation, record: EpisodeRecord, config, overdue=None, counted=None):
        super().__init__(record, config, overdue, counted)
        self.model, self.conv, self.messages = model, conv, []

    def ask(self, step: int, parse, tools, until=None) -> Decision:
        return super().ask(step, lambda reply: parse(reply.text), tools, until)

    def _say(self, text: str, kind: str, step: int, images: list[ImageRef] | None = None) -> None:
        self.conv.add(USER, text, kind, step, images)
        self.record.event(
            Event.TURN, role=USER, kind=kind, step=step, text=text, images=record_paths(self.record, images)
        )

    def _repair(self, error: str, step: int) -> None:
        self._say(prompts.REPAIR.format(error=error), "repair", step)

    def _answer_tool(self, tool: str, result: ToolResult, step: int) -> None:
        refs = [_ref(self.record.keep(p), f"{tool} {i}") for i, p in enumerate(result.images)]
        self._say(prompts.TOOL_RESULT.format(tool=tool, text=result.text), "tool", step, refs)

    def _prepare(self, step: int) -> None:
        self.messages, info = self.conv.request()
        self.record.event(Event.REQUEST, step=step, call=self.calls, **_relinfo(self.record, info))

    def _answer(self, step: int) -> Reply:
        return self.model.complete(self.messages)

    def _answered(self, step: int, reply: Reply, started: float) -> None:
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


class Direct(Exchange):
    """The exchange with an agent that reads observations (vabench.core.boundary.Agent): its typed
    answers are validated as a model's replies are; each is kept as an ``answer`` event (the paper's
    JSON as ``payload``, its calls and latency), so replay sends the same answers again. A tool's
    result comes back as the same step's observation with ``tool_result`` set. The record keeps each
    observation as the text the paper's prompt would carry, with its frames, for reviewers and exports
    (``brief``: the condition's observation profile and intervention)."""

    def __init__(self, agent: Agent, record: EpisodeRecord, config, brief: Brief, overdue=None, counted=None):
        super().__init__(record, config, overdue, counted)
        self.agent, self.brief, self.obs = agent, brief, None

    def ask_about(self, obs: Observation, parse, tools) -> Decision:
        self.obs, b = obs, self.brief
        text = prompts.observation_text(obs, self.config.history_actions, b.observation, b.intervention)
        images = [self.record.rel(f.file) for f in obs.images]
        self.record.event(Event.TURN, role=USER, kind="observation", step=obs.step, text=text, images=images)
        self.obs = dataclasses.replace(obs, images=tuple(dataclasses.replace(f, file=None) for f in obs.images))
        return self.ask(obs.step, lambda answer: parse(payload(answer)), tools)

    def _answer(self, step: int) -> Answer:
        return self.agent.act(self.obs)

    def _answered(self, step: int, answer: Answer | InvalidAnswer, started: float) -> None:
        said = {INVALID: str(answer)} if isinstance(answer, InvalidAnswer) else payload(answer)
        self.record.event(
            Event.ANSWER,
            step=step,
            call=self.calls,
            payload=said,
            model_calls=answer.usage.model_calls,
            model_latency_s=round(answer.latency_s, 4),
        )

    def _repair(self, error: str, step: int) -> None:
        """A typed agent is asked again with the same observation (it keeps its own state)."""

    def _answer_tool(self, tool: str, result: ToolResult, step: int) -> None:
        """The result as the same step's observation; the record keeps it as the text a model reads."""
        text = prompts.TOOL_RESULT.format(tool=tool, text=result.text)
        images = [self.record.rel(self.record.keep(p)) for p in result.images]
        self.record.event(Event.TURN, role=USER, kind="tool", step=step, text=text, images=images)
        data = {**(result.data or {}), **({"images": [_pixels(p) for p in result.images]} if result.images else {})}
        self.obs = dataclasses.replace(self.obs, tool_result=dataclasses.replace(result, images=[], data=data or None))


def _pixels(path: Path):
    """An image file as the uint8 HxWx3 array an agent that reads observations gets instead of the file."""
    import numpy as np
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def _ref(path: Path, label: str) -> ImageRef:
    from PIL import Image

    with Image.open(path) as im:
        return ImageRef(Path(path), label, im.width, im.height)


def record_paths(record: EpisodeRecord, images) -> list[str]:
    return [record.rel(r.path) for r in images or []]


def _relinfo(record: EpisodeRecord, info: dict) -> dict:
    return {**info, "images": [record.rel(Path(p)) for p in info["images"]]}
