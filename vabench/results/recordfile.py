"""The on-disk layout of an episode record, shared by the harness and summary learning that write
it and everything that reads it (the review app, the diagnostic proxies, replay): one place for
the names, the event types and reading the event log.

A record folder holds ``events.jsonl`` (append-only, one JSON object per line), ``frames/`` (the
model-facing images as sent), ``recording/step_NNN.jpg`` (the evaluator's recording views, never
sent to a model) and ``episode.mp4`` (made from the recording views).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, make_dataclass
from enum import StrEnum
from pathlib import Path

from vabench.results.outcomes import COLUMNS

EVENTS = "events.jsonl"
FRAMES = "frames"
FRAMES_INDEX = "frames.index.json"  # a record packed without its frames (vabench.results.bundle): {path: sha256}
RECORDING = "recording"
VIDEO_NAME = "episode.mp4"


class Event(StrEnum):
    """The ``type`` of a record event. Every event also has ``seq`` and ``time``; ``step`` is the env
    step it belongs to (0 before the first action)."""

    EPISODE_START = "episode_start"  # task, instruction, seed, protocol, model, arms, budget, prompts, summary, config
    LEARNING_START = "learning_start"  # summary learning: task, model, demos, prompts
    TURN = "turn"  # a message added to the conversation: role, kind, text, images (frame files)
    REQUEST = "request"  # a request as sent: call, images (frame files), omitted_images, est_tokens, messages
    REPLY = (
        "reply"  # call, text, tokens, cost, attempts, waits, latency, request_id, reasoning (kept here only), cached
    )
    ANSWER = "answer"  # an agent's typed answer (vabench.core.boundary): call, payload, model_calls, model_latency_s
    MODEL_ERROR = "model_error"  # the provider could not answer: error, permanent, attempts
    REJECTED = "rejected"  # a reply that failed validation: error, repairs_used
    DECISION = "decision"  # a valid decision: kind, label, reason
    TOOL_RESULT = "tool_result"  # tool, ok (its text is the next turn)
    COMPACTION = "compaction"  # text, turns_kept
    ACTION = "action"  # the env step: label, kind, payload, valid, planner_success, feedback, success, checkpoints
    STATE = "state"  # evaluator state after reset and each action: bodies, arms, recording (view file)
    STOP = "stop"  # the model stopped: reason
    TIMEOUT = "timeout"  # the episode ran out of time: error
    CRASH = "crash"  # the simulator or the harness crashed: error (traceback)
    INTERRUPTED = "interrupted"  # Ctrl-C or exit: no result follows
    RESULT = "result"  # the outcome row
    LEARNING_RESULT = "learning_result"  # summary learning's end: end_reason, error, frames, usage


ENDINGS = (Event.STOP, Event.CRASH, Event.TIMEOUT, Event.INTERRUPTED)  # how an episode can end besides its result

# -- each event's fields: one frozen dataclass per Event (a field with a default may be left out) -----------

FIELDS: dict[Event, type] = {}


def _fields(kind: Event):
    def declare(cls: type) -> type:
        FIELDS[kind] = dataclass(frozen=True, kw_only=True)(cls)
        return FIELDS[kind]

    return declare


@_fields(Event.EPISODE_START)
class EpisodeStart:
    format: str  # recordfile's reader of this record (vabench.results.records.RECORD_FORMAT)
    task: str
    instruction: str
    seed: int
    protocol: str
    model: str
    privileged: bool
    arms: list[str]
    budget: int
    prompt_version: str
    prompt_digest: str
    summary_model: str | None
    summary: str | None  # as the system prompt carries it
    config: dict  # the harness config, with the observation profile and intervention


@_fields(Event.LEARNING_START)
class LearningStart:
    format: str
    task: str
    model: str
    demos: list[str]
    prompt_version: str
    prompt_digest: str


@_fields(Event.TURN)
class Turn:
    role: str
    kind: str  # system | task | observation | repair | tool
    step: int
    text: str
    images: list[str]  # frame files, relative to the record


@_fields(Event.REQUEST)
class Request:
    step: int
    call: int
    images: list[str]  # frame files sent, relative to the record: never bytes
    omitted_images: int
    est_tokens: int
    messages: int


@_fields(Event.REPLY)
class Reply:
    step: int
    call: int
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    reasoning_tokens: int | None
    cached_tokens: int | None
    cache_write_tokens: int | None
    reasoning: str | None  # evaluator side: never sent back
    cost_usd: float | None
    attempts: int
    backoff_s: float
    limit_wait_s: float
    model_latency_s: float
    call_s: float
    request_id: str | None
    cached: bool  # answered from the response cache


@_fields(Event.ANSWER)
class Answer:
    step: int
    call: int
    payload: dict  # the paper's JSON of a Command, ToolCall or Stop (vabench.core.boundary)
    model_calls: int  # 0 where a policy answers from a chunk it already has
    model_latency_s: float


@_fields(Event.MODEL_ERROR)
class ModelError:
    error: str
    step: int | None = None  # absent where the agent refused the episode as it started
    permanent: bool | None = None  # absent where the agent crashed (a traceback)
    attempts: int | None = None
    backoff_s: float | None = None


@_fields(Event.REJECTED)
class Rejected:
    step: int
    error: str
    repairs_used: int


@_fields(Event.DECISION)
class Decision:
    step: int
    kind: str
    label: str
    reason: str | None


@_fields(Event.TOOL_RESULT)
class ToolResult:
    step: int
    tool: str
    ok: bool  # its text is the next turn


@_fields(Event.COMPACTION)
class Compaction:
    step: int
    text: str
    turns_kept: int


@_fields(Event.ACTION)
class Action:
    step: int
    label: str
    kind: str  # vocab.StepKind
    payload: dict
    reason: str | None
    valid: bool
    planner_success: bool
    feedback: str
    success: bool
    checkpoints: dict[str, bool]  # evaluator side
    placement: dict | None = None  # multi-object tasks only


@_fields(Event.STATE)
class State:
    step: int
    recording: str | None  # the recording view's file, relative to the record
    objects: dict  # vabench.envs.privileged snapshot: every body's pose and lift
    arms: dict  # each controlled gripper
    robot: dict  # every arm's robot state


@_fields(Event.STOP)
class Stop:
    step: int
    reason: str | None


@_fields(Event.TIMEOUT)
class Timeout:
    step: int
    error: str


@_fields(Event.CRASH)
class Crash:
    error: str  # a traceback


@_fields(Event.INTERRUPTED)
class Interrupted:
    error: str  # the exception's class name
    wall_s: float


FIELDS[Event.RESULT] = make_dataclass("Result", [(c, object) for c in COLUMNS], frozen=True, kw_only=True)  # the row


@_fields(Event.LEARNING_RESULT)
class LearningResult:
    end_reason: str
    error: str | None
    frames_inspected: int
    model_calls: int
    provider_attempts: int
    provider_retries: int
    backoff_s: float
    wall_s: float


def checked(kind: Event | str, data: dict) -> Event:
    """``kind`` as an Event, once ``data`` has been found to be its fields: an undeclared kind, an
    unknown field or a missing one is a programming error (ValueError, TypeError) at the call site."""
    kind = Event(kind)
    try:
        FIELDS[kind](**data)
    except TypeError as e:
        raise TypeError(f"a {kind} event: {e}") from None
    return kind


def view_name(image: str) -> str:
    """The name of a model-facing image from its file (``frames/step_003_topdown.jpg``: topdown)."""
    m = re.match(r"step_\d+_(.+)$", Path(image).stem)
    return m.group(1) if m else Path(image).stem


def read_events(path: Path) -> list[dict]:
    """All events of a record; a torn last line (a crash mid-write) or a line that is not a JSON
    object is skipped."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            out.append(event)
    return out


def recording_frames(folder: Path) -> list[Path]:
    """The recording views of a record folder, in step order."""
    return sorted((Path(folder) / RECORDING).glob("step_*.jpg"))


def record_digest(folder: Path) -> str:
    """The sha256 prefix (16 hex) of a record: its event lines, the ``result`` aside (it carries
    this digest), and the index of its model-facing frames (each file's name and content), so an
    edited reply, a changed or deleted frame shows. Recording views are not covered (not model-facing)."""
    folder, h = Path(folder), hashlib.sha256()
    for line in (folder / EVENTS).read_bytes().splitlines(keepends=True):
        try:
            kind = json.loads(line).get("type")
        except (json.JSONDecodeError, AttributeError):
            kind = None
        if kind != Event.RESULT:
            h.update(line)
    for name, sha in frames_index(folder).items():
        h.update(b"\0frame\0" + name.encode() + b"\0" + bytes.fromhex(sha))
    return h.hexdigest()[:16]


def frames_index(folder: Path) -> dict[str, str]:
    """{path relative to the record: sha256} of a record's model-facing frames; a record packed
    without them keeps this index instead (``FRAMES_INDEX``)."""
    folder = Path(folder)
    files = sorted(p for p in (folder / FRAMES).rglob("*") if p.is_file())
    if not files and (folder / FRAMES_INDEX).is_file():
        return json.loads((folder / FRAMES_INDEX).read_text())
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
