"""Summary learning (paper 3.3, C.8, D.3): a model studies an RGB-only demonstration through tools
and saves a structured summary, which later evaluation episodes carry in their system prompt.

The learning episode needs no simulator: the model gets the instruction, calls
``expert.retrieve`` for the frame index, inspects frames with ``expert.frame`` (at most 8 per
call), and may save its summary with ``expert.learn`` only after at least 3 distinct frames (of
each demonstration). It runs under the same call and repair limits as one evaluation step.
Unlike the reference harness it shows no live scene (which needed a full simulator reset only
to show one frame) and learns all tasks independently, so a driver can run them in parallel.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from vabench.agents.chat import prompts
from vabench.agents.chat.dialogue import Dialogue, EpisodeEnd
from vabench.agents.chat.harness_config import HarnessConfig
from vabench.agents.chat.history import USER, Conversation
from vabench.agents.chat.model import Model, Usage
from vabench.agents.chat.protocol import TOOL, Decision, ProtocolError, parse_decision
from vabench.agents.chat.tools import ToolResult
from vabench.core.vocab import LEARNED, RIGHT, EndReason, Render
from vabench.results.recordfile import Event
from vabench.results.records import EpisodeRecord

from .demo_tools import DemoStore, summary_task, task_demos
from .summary_schema import SummaryError
from .summary_store import Summary, SummaryStore

LEARN_TOOLS = ("expert.retrieve", "expert.frame", "expert.learn")
MAX_ATTEMPTS = 3


@dataclass
class LearnResult:
    task: str
    model: str
    summary: Summary | None
    end_reason: str  # learned | repairs_exhausted | call_limit | infra_error
    attempts: int
    usage: Usage = field(default_factory=Usage)
    error: str | None = None


def ensure_demos(task: str, root: Path | None = None, preset: str = Render.PAPER) -> None:
    """Record any missing demonstration of ``task`` at ``preset`` (needs the simulator; cached afterwards)."""
    from vabench.envs.demo_recorder import record

    for name in task_demos(task):
        record(name, root, preset)


def learn_summary(
    model: Model,
    task: str,
    store: SummaryStore,
    out_dir: Path,
    demo_root: Path | None = None,
    config: HarnessConfig | None = None,
    attempts: int = MAX_ATTEMPTS,
    preset: str = Render.PAPER,
) -> LearnResult:
    """Run learning episodes until one saves a summary (at most ``attempts``), from the demos
    recorded at the run's render ``preset``."""
    config = config or HarnessConfig()
    base = summary_task(task)
    ensure_demos(base, demo_root, preset)
    total = LearnResult(base, model.name, None, EndReason.CALL_LIMIT, 0)
    for attempt in range(1, attempts + 1):
        demos = DemoStore(base, demo_root, preset)
        one = _attempt(model, base, store, Path(out_dir) / f"attempt_{attempt}", demos, config)
        total.attempts, total.usage = attempt, total.usage + one.usage
        total.summary, total.end_reason, total.error = one.summary, one.end_reason, one.error
        if one.summary is not None or one.end_reason == EndReason.INFRA_ERROR:
            break
    return total


def _attempt(
    model: Model, task: str, store: SummaryStore, out_dir: Path, demos: DemoStore, config: HarnessConfig
) -> LearnResult:
    from vabench.envs.tasks import task_class

    record = EpisodeRecord(out_dir)
    conv = Conversation(prompts.LEARNING_SYSTEM, False, config)
    dialogue = Dialogue(model, conv, record, config)
    result = LearnResult(task, model.name, None, EndReason.CALL_LIMIT, 1)
    saved: list[Summary] = []
    started = time.perf_counter()
    record.event(
        Event.LEARNING_START,
        format="vabench.learning_record.v1",
        task=task,
        model=model.name,
        demos=list(demos.demos),
        prompt_version=prompts.PROMPT_VERSION,
        prompt_digest=prompts.prompt_digest(),
    )
    record.event(Event.TURN, role="system", kind="system", step=0, text=prompts.LEARNING_SYSTEM, images=[])
    opening = prompts.LEARNING_TASK.format(instruction=task_class(task).instruction)
    conv.add(USER, opening, "task", 0)
    record.event(Event.TURN, role=USER, kind="task", step=0, text=opening, images=[])
    try:
        dialogue.ask(0, _parse, _tools(demos, store, model.name, task, saved), until=lambda: bool(saved))
        result.end_reason, result.summary = LEARNED, saved[-1]
    except EpisodeEnd as end:
        result.end_reason, result.error = end.reason, end.error
    except BaseException as e:  # Ctrl-C, or a bug: the record says so, and the exception goes on
        record.interrupted(e, time.perf_counter() - started)
        raise
    result.usage = dialogue.usage
    record.event(
        Event.LEARNING_RESULT,
        end_reason=result.end_reason,
        error=result.error,
        frames_inspected=demos.inspected,
        model_calls=result.usage.model_calls,
        provider_attempts=result.usage.provider_attempts,
        provider_retries=result.usage.provider_retries,
        backoff_s=round(result.usage.backoff_s, 3),
        wall_s=round(time.perf_counter() - started, 3),
    )
    record.close()
    return result


def _parse(text: str) -> Decision:
    decision = parse_decision(text, (RIGHT,), False, LEARN_TOOLS)
    if decision.kind != TOOL:
        raise ProtocolError(
            "during summary learning only the tools expert.retrieve, expert.frame and expert.learn are "
            "available; no robot or camera action exists yet. Save your summary with expert.learn."
        )
    return decision


def _tools(demos: DemoStore, store: SummaryStore, model: str, task: str, saved: list[Summary]):
    """The learning tools: the demo tools, and ``expert.learn`` behind the frame-inspection gate."""

    def tools(decision: Decision) -> ToolResult:
        if decision.tool == "expert.retrieve":
            return demos.retrieve(decision.args)
        if decision.tool == "expert.frame":
            return demos.frame(decision.args)
        gate = demos.learn_gate()
        if gate:
            return ToolResult(gate, ok=False)
        try:
            path = store.save(model, task, decision.args, demos.inspected, prompts.PROMPT_VERSION)
        except SummaryError as e:
            return ToolResult(f"summary not saved: {e}", ok=False)
        saved.append(store.load(model, task))
        return ToolResult(f"summary saved ({path.name}):\n{json.dumps(saved[-1].fields, indent=1)}")

    return tools
