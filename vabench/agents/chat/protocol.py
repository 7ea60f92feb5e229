"""The decision protocol: one JSON object per model reply, parsed and validated, never executed.

A reply is untrusted text. :func:`parse_decision` finds one JSON object in it (the first fenced
block, else the whole reply, else the span from the first ``{`` to the last ``}``), rejects what
JSON allows but a decision must not carry (NaN and infinities, huge strings, deep nesting, many
keys), and sorts it into one of four kinds, in the reference harness's order:

- ``stop``: ``{"stop": true}``;
- ``tool``: ``{"tool": name, "args": {...}}``, or an ``action`` that names a tool;
- ``camera`` / ``action``: ``{"action": ...}``, validated against the env's action vocabulary
  (paper Tables 26-27) so that range errors reach the model as repairs, not as wasted steps.

Every error is a :class:`ProtocolError` whose text names the field, the value and what is allowed;
the harness sends it back to the model as the repair prompt.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from vabench.core.boundary import EE_DELTA, Command, Control, Stop, Usage, answer_of
from vabench.core.errors import VabenchError
from vabench.envs import ActionError, parse_action

MAX_REPLY_CHARS = 200_000  # a longer reply is not read at all
MAX_OBJECT_CHARS = 16_000  # the JSON object itself
MAX_STRING = 2_000  # any string value inside it
MAX_DEPTH = 4  # decision > args > field > value
MAX_KEYS = 64
STOP, TOOL, CAMERA, ACTION = "stop", "tool", "camera", "action"
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)


class ProtocolError(VabenchError, ValueError):
    """A reply that is not a valid decision; the message is written for the model."""


class InvalidAnswer(ProtocolError):
    """An agent that reads observations got an answer it cannot give as a decision (a policy
    server's chunk of NaN, of the wrong width, or empty): the exchange refuses it as a model's bad
    reply is (a ``rejected`` event with this message, a repair, ``repairs_exhausted`` at the limit).
    ``usage`` and ``latency_s``: what asking cost; the record keeps it as an ``answer`` event whose
    payload is ``{INVALID: message}``, so a replay refuses it again."""

    def __init__(self, message: str, usage: Usage | None = None, latency_s: float = 0.0):
        super().__init__(message)
        self.usage, self.latency_s = usage or Usage(), latency_s


INVALID = "invalid_answer"  # the payload key of a recorded InvalidAnswer


@dataclass(frozen=True)
class Decision:
    kind: str  # stop | tool | camera | action
    obj: dict  # the decoded object, as the model sent it (validated)
    reason: str = ""
    label: str = ""  # canonical action label, or the tool name
    tool: str | None = None
    args: dict = field(default_factory=dict)

    def answer(self) -> Stop | Command | Control:
        """A stop, command or control decision as the agent boundary's answer (the object as it was sent)."""
        if self.kind == STOP:
            return Stop(self.reason)
        return answer_of(self.obj) if EE_DELTA in self.obj else Command(self.obj, self.reason)


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "..."


def _reject_constant(name: str):
    raise ProtocolError(f"model output contains {name}; every number must be finite")


def extract_json(text) -> dict:
    """The one JSON object in a reply (see module docstring)."""
    if not isinstance(text, str) or not text.strip():
        raise ProtocolError("model output is empty; output exactly one JSON object")
    if len(text) > MAX_REPLY_CHARS:
        raise ProtocolError(f"model output is {len(text)} characters long; at most {MAX_REPLY_CHARS} are read")
    fenced = _FENCE.search(text)
    body = fenced.group(1).strip() if fenced else text.strip()
    if not fenced and not body.startswith("{"):
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end <= start:
            raise ProtocolError("model output contains no JSON object; output exactly one JSON object")
        body = body[start : end + 1]
    if len(body) > MAX_OBJECT_CHARS:
        raise ProtocolError(f"the JSON object is {len(body)} characters long; at most {MAX_OBJECT_CHARS} are allowed")
    try:
        obj = json.loads(body, parse_constant=_reject_constant)
    except ProtocolError:
        raise
    except (ValueError, RecursionError) as e:
        raise ProtocolError(f"model output is not valid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"model output JSON must be an object, got {type(obj).__name__}")
    _check_tree(obj, "", 1)
    return obj


def _check_tree(value, where: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ProtocolError(f"'{where}' is nested too deeply (at most {MAX_DEPTH} levels)")
    if isinstance(value, dict):
        if len(value) > MAX_KEYS:
            raise ProtocolError(f"'{where or 'decision'}' has {len(value)} fields; at most {MAX_KEYS} are allowed")
        for key, sub in value.items():
            _check_tree(sub, f"{where}.{key}" if where else key, depth + 1)
    elif isinstance(value, list):
        if len(value) > MAX_KEYS:
            raise ProtocolError(f"'{where}' has {len(value)} entries; at most {MAX_KEYS} are allowed")
        for i, sub in enumerate(value):
            _check_tree(sub, f"{where}[{i}]", depth + 1)
    elif isinstance(value, str) and len(value) > MAX_STRING:
        raise ProtocolError(f"field '{where}' is {len(value)} characters long; at most {MAX_STRING} are allowed")
    elif isinstance(value, float) and not math.isfinite(value):  # e.g. 1e999 decodes to inf
        raise ProtocolError(f"field '{where}' must be a finite number, got {value!r}")


def parse_decision(text, arms: tuple[str, ...], camera: bool, tools: tuple[str, ...]) -> Decision:
    """Parse and validate one reply for an episode controlling ``arms``.

    ``camera`` says whether camera actions exist (active protocol); ``tools`` are the tool names
    callable now. Raises :class:`ProtocolError`.
    """
    return decision_of(extract_json(text), arms, camera, tools)


def decision_of(
    obj: dict, arms: tuple[str, ...], camera: bool, tools: tuple[str, ...], control: bool = False
) -> Decision:
    """Validate one decision object (a parsed reply, or a typed agent's answer as the paper's JSON);
    ``control``: the episode runs under control=ee_delta, whose steps the env validates (a bad one
    is an invalid action with feedback, a wasted step, as a policy cannot be repaired)."""
    reason = obj.get("reason", "")
    if reason is None:
        reason = ""
    if not isinstance(reason, str):
        raise ProtocolError(f"field 'reason' must be a string, got {_show(reason)}")
    if obj.get("stop") is True:
        return Decision(STOP, obj, reason, "stop")
    if "stop" in obj and obj["stop"] is not False:
        raise ProtocolError(f"field 'stop' must be true to end the episode, got {_show(obj['stop'])}")
    name = obj.get("tool", obj.get("tool_name"))
    action = obj.get("action")
    if name is None and isinstance(action, str) and action.strip().lower() in tools:
        name = action
    if name is not None:
        return _tool(obj, name, reason, tools)
    if action is None and EE_DELTA in obj:
        if not control:
            raise ProtocolError(f"'{EE_DELTA}' steps need control=ee_delta; this episode takes the paper's commands")
        return Decision(ACTION, obj, reason, EE_DELTA)
    if action is None:
        raise ProtocolError('JSON must contain "action", "tool", or true "stop"')
    try:
        act = parse_action(obj, arms, camera=camera)
    except ActionError as e:
        raise ProtocolError(str(e)) from None
    kind = CAMERA if act.label.startswith("camera.") else ACTION
    return Decision(kind, obj, reason, act.label)


def _tool(obj: dict, name, reason: str, tools: tuple[str, ...]) -> Decision:
    if not isinstance(name, str) or not name.strip():
        raise ProtocolError(f"field 'tool' must be a tool name ({', '.join(tools) or 'none available'})")
    name = name.strip().lower()
    if name not in tools:
        allowed = ", ".join(tools) if tools else "no tools are available now"
        raise ProtocolError(f"unknown tool {_show(name)}; allowed: {allowed}")
    args = obj.get("args", obj.get("tool_args"))
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ProtocolError(f"field 'args' must be a JSON object, got {_show(args)}")
    return Decision(TOOL, obj, reason, name, tool=name, args=args)
