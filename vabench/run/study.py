"""A seat's summary stage (``summary=own``): the outside party studies the demonstration and writes
its own procedure summary before its episode starts, as a model does in its learning episode
(:mod:`vabench.agents.summaries.learning`).

::

    study = Study(run, task, model)            # the demos of the task's base task, at the run's render
    study.intro                                # what a model is told first (the stage's rules and fields)
    shown = study.demonstration({})            # the frame index (a model's expert.retrieve)
    shown = study.demonstration({"steps": [0, 2, 5]})  # captions and frames (a model's expert.frame)
    shown.text, shown.images                   # the text and the frame files, in the order shown
    study.frame("grasp_single_cube", 3)        # one frame's file (counted as inspected), for a page
    saved = study.write(fields)                # a Summary once stored, else the refusal's text

The texts are a model's, with the tools named as the seat's caller names them (``demonstration``,
``write_summary``); the gate is a model's (at least 3 distinct frames of each demonstration before
a summary is accepted), and so are the summary's fields and size limits. The summary is stored in
the run's summary root under the seat's model (its author), where a model's learned summary is: the
episode carries it as a model's episode carries its own, and the row's ``summary_model`` names the
seat's model. A later seat of the same model in the same summary root plays with it, as every
episode of a model uses the one summary learned for its base task.

The stage is recorded as a model's learning is (``<run>/_learning/<task>/<time>-<author>/``, a
``vabench.learning_record.v1`` record): its start, what was shown, each call as an ``answer`` in a
model's terms (``{"tool": "expert.frame", "args": ...}``, with the think time before it), each
call's ``tool_result``, and its end (``learning_result``), or ``interrupted`` when the seat is left.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from vabench.agents.chat import prompts
from vabench.agents.summaries.demo_tools import DemoStore, summary_task
from vabench.agents.summaries.learning import ensure_demos
from vabench.agents.summaries.summary_schema import SummaryError
from vabench.agents.summaries.summary_store import Summary, SummaryStore
from vabench.core.errors import SeatLeft
from vabench.core.vocab import LEARNED
from vabench.results.recordfile import Event
from vabench.results.records import EpisodeRecord

LEARNING_FORMAT = "vabench.learning_record.v1"

DEMONSTRATION = "demonstration"
WRITE_SUMMARY = "write_summary"
# a model's tool names -> the seat's (longest first: a call's example before the bare name)
_RENAMED = (
    ('expert.retrieve {"mode": "trajectory"}', DEMONSTRATION + " {}"),
    ("expert.retrieve", DEMONSTRATION),
    ("expert.frame", DEMONSTRATION),
    ("expert.learn", WRITE_SUMMARY),
)


def renamed(text: str) -> str:
    """A model's learning-stage text with its tools named as the seat's caller names them."""
    for old, new in _RENAMED:
        text = text.replace(old, new)
    return text


def intro() -> str:
    """What a model is told as its learning starts (the system prompt's account of the stage and of
    the summary's fields), for tools rather than JSON replies."""
    head, _, rest = prompts.LEARNING_SYSTEM.partition(" Reply with exactly one")
    fields = rest[rest.index("Summary fields") :]
    return renamed(
        f"{head} Call demonstration with no arguments for the frame index, demonstration with "
        '{"steps": [i, j, ...]} for up to 8 frames, then write_summary with the summary fields; it is '
        f"accepted only after you have inspected at least 3 distinct frames (of each demonstration).\n{fields}"
    )


@dataclass(frozen=True)
class Shown:
    """What a stage call shows: its text, the frame files (in the order the text lists them), and
    whether it was refused."""

    text: str
    images: tuple[Path, ...] = ()
    refused: bool = False


class Study:
    """The summary stage of one seat (see the module's docstring)."""

    def __init__(self, store: SummaryStore, task: str, model: str, demo_root: Path | None, render: str, record: Path):
        from vabench.envs.tasks import task_class

        self.store, self.model = store, model
        self.task = summary_task(task)
        ensure_demos(self.task, demo_root, render)  # recorded once, then cached (as for a model's learning)
        self.demos = DemoStore(self.task, demo_root, render)
        self.instruction = task_class(self.task).instruction
        self.intro = intro()
        self.record, self.calls, self.began = EpisodeRecord(record), 0, time.perf_counter()
        self._shown = self.began  # when the last answer was shown: the think time before a call starts there
        self.record.event(
            Event.LEARNING_START,
            format=LEARNING_FORMAT,
            task=self.task,
            model=model,
            demos=list(self.demos.demos),
            prompt_version=prompts.PROMPT_VERSION,
            prompt_digest=prompts.prompt_digest(),
        )
        self.record.event(Event.TURN, role="system", kind="system", step=0, text=self.intro, images=[])

    def index_text(self) -> str:
        """The task and the frame index, as the ``demonstration`` tool answers with no ``steps``,
        without recording a call (a page that shows it on every refresh makes no call)."""
        told = prompts.LEARNING_TASK.format(instruction=self.instruction).splitlines()[0]
        return f"{told}\n{renamed(self.demos.retrieve().text)}"

    def demonstration(self, args: dict) -> Shown:
        """No ``steps``: the task and the frame index; with ``steps`` (and ``demo``): those frames."""
        if not args:
            return self._said("expert.retrieve", {}, Shown(self.index_text()))
        self.demos.retrieved = True  # the index is the tool's own answer: asking for frames needs no other call
        out = self.demos.frame(args)
        return self._said("expert.frame", args, Shown(renamed(out.text), tuple(out.images or ()), not out.ok))

    def frame(self, demo: str, i: int) -> Path | None:
        """One frame's file, counted as inspected (a page shows frames one by one), or None."""
        shown = self.demonstration({"steps": [i], "demo": demo})
        return shown.images[0] if not shown.refused else None

    def write(self, fields: dict) -> Summary | Shown:
        """Store ``fields`` as the seat model's summary (the stored :class:`Summary`), or the refusal."""
        gate = self.demos.learn_gate()
        if gate:
            return self._said("expert.learn", fields, Shown(renamed(gate), refused=True))
        try:
            path = self.store.save(self.model, self.task, fields, self.demos.inspected, prompts.PROMPT_VERSION)
        except SummaryError as e:
            return self._said("expert.learn", fields, Shown(f"summary not saved: {e}", refused=True))
        saved = self.store.load(self.model, self.task)
        self._said("expert.learn", fields, Shown(f"summary saved ({path.name})"))
        self._end()
        return saved

    def leave(self) -> None:
        """The seat was left in its stage: the record says so (no summary was stored)."""
        self.record.interrupted(SeatLeft("left in the summary stage"), time.perf_counter() - self.began)

    def _said(self, tool: str, args, shown: Shown) -> Shown:
        """Record one call as a model's (its answer, the tool's result and the turn it shows)."""
        now, self.calls = time.perf_counter(), self.calls + 1
        payload = {"tool": tool, "args": args if isinstance(args, dict) else {"value": repr(args)[:200]}}
        r = self.record
        r.event(
            Event.ANSWER, step=0, call=self.calls, payload=payload, model_calls=1, model_latency_s=now - self._shown
        )
        r.event(Event.TOOL_RESULT, step=0, tool=tool, ok=not shown.refused)
        images = [r.rel(r.keep(p)) for p in shown.images]
        r.event(Event.TURN, role="user", kind="tool", step=0, text=shown.text, images=images)
        self._shown = time.perf_counter()
        return shown

    def _end(self) -> None:
        self.record.event(
            Event.LEARNING_RESULT,
            end_reason=LEARNED,
            error=None,
            frames_inspected=len(self.demos.inspected),
            model_calls=self.calls,
            provider_attempts=0,
            provider_retries=0,
            backoff_s=0.0,
            wall_s=round(time.perf_counter() - self.began, 3),
        )
        self.record.close()
