"""The one door into an agent: what it is shown each turn and what it may answer.

Every kind of agent meets the episode loop (:mod:`vabench.agents.episode`) here. The loop builds
an :class:`Observation` from the env's and the condition's rules: exactly what the paper lets a
model see, and under an ablation or intervention exactly what that condition adds, as data
(images as arrays, the robot state as numbers). An agent answers with a typed :class:`Answer`: one
of the paper's commands or camera actions (:class:`Command`), under ``control=ee_delta`` a
continuous end-effector step (:class:`Control`), a tool call (:class:`ToolCall`) or :class:`Stop`.
The chat harness (:mod:`vabench.agents.chat.agent`) is one agent among others: it renders the
observation into the paper's prompt, asks a chat :class:`~vabench.agents.chat.model.Model` and
parses its reply into an answer; offline agents and policies read the observation directly.

Nothing here imports the simulator: the servo baseline imports this module and no env code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Union

import numpy as np

from vabench.core.vocab import ControlMode


@dataclass(frozen=True)
class ArmProprio:
    """What the paper lets the model know about one arm (all in the world frame, metres, unit
    vectors, degrees): the robot state as numbers."""

    ee_position: tuple[float, float, float]
    ee_quat_wxyz: tuple[float, float, float, float]
    ee_rpy_deg: tuple[float, float, float]
    gripper_closed: bool
    gc: tuple[float, float, float]  # the midpoint of the finger pads
    rx: tuple[float, float, float]  # the gripper-local axes rotate_local turns about
    ry: tuple[float, float, float]
    rz: tuple[float, float, float]
    # control=ee_delta only (policy layouts such as openpi's LIBERO read them), else None: the two
    # finger joints' positions, metres (0.04 each wide open); the paper tells a model open or closed
    fingers: tuple[float, float] | None = None


@dataclass(frozen=True)
class Frame:
    """One image the agent is shown: ``pixels`` as rendered (uint8 HxWx3, before the render
    preset's encoding), and ``file``, the encoded frame the record keeps, which is the exact byte
    string a chat model is sent; an agent that reads observations gets no file (None): the
    record's folder holds evaluator-side state beside it."""

    view: str  # "active", a passive view name, or an intervention's added view
    pixels: np.ndarray = field(repr=False)
    file: Path | None = None


@dataclass(frozen=True)
class Feedback:
    """The previous action's outcome: its label and the paper's two booleans; ``text`` (why an
    action was invalid or stopped short) only under ``observation=explained``."""

    action: str
    valid: bool
    planner_success: bool
    text: str | None = None


@dataclass(frozen=True)
class ToolResult:
    """A tool's answer (it never advances the simulator): ``text`` as a model reads it, ``images``
    (frame files) to attach for a chat model, ``data`` the same answer as data for agents that read
    observations (its images as arrays under ``"images"``, never as files)."""

    text: str
    images: list[Path] = field(default_factory=list)
    ok: bool = True  # False: the call was refused (bad args, gate); the text says why
    data: Mapping | None = None


@dataclass(frozen=True)
class Observation:
    """Everything an agent may see at one decision point, and nothing else (docs/design.md: the
    privilege boundary). ``None`` marks what the condition does not show."""

    step: int
    instruction: str
    protocol: str
    images: tuple[Frame, ...]  # the protocol's images in the order sent, then a view intervention's
    arms: Mapping[str, ArmProprio]  # per controlled arm, left before right
    executed: tuple[str, ...] = ()  # the labels of the actions executed so far
    camera_chain: int = 0  # consecutive camera actions just executed (the C.6 rule counts them)
    actions: tuple[str, ...] = ()  # the command and camera action names this episode accepts
    tools: tuple[str, ...] = ()  # the tools callable now
    feedback: Feedback | None = None  # None before the first action
    summary: str | None = None  # the demonstration summary, where the condition has one
    budget: int | None = None  # the step budget and what is left of it: observation=explained only
    budget_left: int | None = None
    objects: tuple[Mapping, ...] | None = None  # intervention=object_poses: the task bodies' poses
    tool_result: ToolResult | None = None  # the answer to the agent's last tool call in this step


def observation_of(obs, frames: tuple[Frame, ...] | None = None, *, explained: bool = False, objects=None, **shown):
    """The agent's :class:`Observation` of the env's ``obs`` (vabench.envs.Observation): its frames
    (by default the env's images as they are, unrecorded and without a view intervention's choice),
    the previous action's outcome and, under ``explained``, the budget and the env's reason text;
    ``shown``: the loop's own fields (executed, camera_chain, actions, tools, summary)."""
    if frames is None:
        frames = tuple(Frame(view, rgb) for view, rgb in obs.images.items())
    feedback = None
    if obs.last_action is not None:
        text = obs.feedback if explained else None
        feedback = Feedback(obs.last_action, bool(obs.action_valid), bool(obs.planner_success), text)
    return Observation(
        **shown,
        step=obs.step,
        instruction=obs.instruction,
        protocol=obs.protocol,
        images=frames,
        arms=dict(obs.proprio),
        feedback=feedback,
        budget=obs.budget if explained else None,
        budget_left=obs.budget_left if explained else None,
        objects=tuple(objects) if objects is not None else None,
    )


@dataclass(frozen=True)
class Brief:
    """What an agent learns when an episode starts. ``expert`` is set for privileged agents only
    (the oracle)."""

    task: str
    seed: int
    arms: tuple[str, ...]
    protocol: str
    instruction: str = ""
    summary: str | None = None
    transfer: bool = False
    observation: str = "paper"  # the observation profile (vabench.core.vocab.ObservationProfile)
    intervention: str = "none"
    actions: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    expert: Callable[[], Iterator[dict]] | None = None
    control: str = ControlMode.COMMANDS  # the action interface: under ee_delta the agent answers Control


@dataclass(frozen=True)
class Usage:
    """What model calls cost, one value that adds up: per reply or failed call, per episode, per
    summary learning. Its field names are the outcome row's columns, copied as they are."""

    model_calls: int = 0  # calls the provider answered
    provider_attempts: int = 0  # HTTP attempts, failed and retried ones included
    provider_retries: int = 0  # attempts that repeated a failed one (rate limit, timeout, 5xx)
    backoff_s: float = 0.0  # waited before retries (Retry-After honoured)
    limit_wait_s: float = 0.0  # waited on the run's rate limits before sending; never an error
    prompt_tokens: int = 0
    completion_tokens: int = 0  # reasoning tokens included
    reasoning_tokens: int = 0  # of completion_tokens: the provider's reasoning / thinking tokens
    cost_usd: float | None = 0.0  # None: some price was unknown (unmapped model)
    cache_hits: int = 0  # replies answered from the response cache (model.cache): no request, no cost
    cached_tokens: int = 0  # of prompt_tokens: read from the provider's prompt cache (billed at its cached rate)
    cache_write_tokens: int = 0  # of prompt_tokens: written to the provider's prompt cache (Anthropic bills 1.25x)
    model_latency_s: float = 0.0  # the answering attempts' durations (Reply.latency_s), summed

    @classmethod
    def of_call(cls, attempts: int, answered: bool, backoff_s: float = 0.0, limit_wait_s: float = 0.0, **tokens):
        """One call's usage: ``attempts`` HTTP attempts, answered or not, and its tokens and cost."""
        return cls(int(answered), attempts, max(0, attempts - 1), backoff_s, limit_wait_s, **tokens)

    def __add__(self, other: Usage) -> Usage:
        added = {f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self) if f.name != "cost_usd"}
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(**added, cost_usd=cost)

    def columns(self) -> dict:
        """The outcome row's usage columns (waits rounded to milliseconds)."""
        rounded = {k: round(getattr(self, k), 3) for k in ("backoff_s", "limit_wait_s", "model_latency_s")}
        return {**asdict(self), **rounded}


ANSWERED = Usage(model_calls=1)  # an offline agent's answer: one call, no HTTP, no cost


@dataclass(frozen=True)
class Command:
    """One of the paper's commands or camera actions, as the paper's JSON fields (Tables 26-27):
    ``{"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": 20}``. The loop
    validates it against the episode's arms and protocol before the env sees it."""

    fields: Mapping
    reason: str = ""
    usage: Usage = ANSWERED
    latency_s: float = 0.0


@dataclass(frozen=True)
class Control:
    """One control step under ``control=ee_delta`` (vabench.envs.control states it whole): per
    controlled arm seven numbers, ``dx dy dz`` (the TCP's translation, world frame, metres), ``rx ry
    rz`` (a rotation vector, radians, about the TCP in world axes) and the gripper target (0 open ..
    1 closed). The env clips it to its limits; a non-finite number or a wrong length is an invalid
    action, reported as feedback."""

    deltas: Mapping[str, tuple]  # arm -> 7 numbers, as the agent sent them
    reason: str = ""
    usage: Usage = ANSWERED
    latency_s: float = 0.0


@dataclass(frozen=True)
class ToolCall:
    """A call of one of the observation's tools; the answer comes back as ``tool_result`` of the
    same step's observation, the simulator untouched."""

    name: str
    args: Mapping = field(default_factory=dict)
    reason: str = ""
    usage: Usage = ANSWERED
    latency_s: float = 0.0


@dataclass(frozen=True)
class Stop:
    """The agent ends the episode."""

    reason: str = ""
    usage: Usage = ANSWERED
    latency_s: float = 0.0


Answer = Union[Command, Control, ToolCall, Stop]
EE_DELTA = str(ControlMode.EE_DELTA)  # a Control's field in the paper-style JSON (vabench.envs.control reads it)


def answer_of(obj: Mapping, usage: Usage = ANSWERED, latency_s: float = 0.0) -> Answer:
    """The typed answer a decision object in the paper's JSON form names (``{"stop": true}``,
    ``{"tool": name, "args": {}}``, or a command): for agents that plan in that form."""
    reason = str(obj.get("reason") or "")
    if obj.get("stop") is True:
        return Stop(reason, usage, latency_s)
    if "tool" in obj:
        args = obj.get("args") or {}  # not a mapping: kept as it is, for validation to refuse (untrusted)
        return ToolCall(str(obj["tool"]), dict(args) if isinstance(args, Mapping) else args, reason, usage, latency_s)
    if EE_DELTA in obj:
        given = obj[EE_DELTA]
        return Control(dict(given) if isinstance(given, Mapping) else {"": given}, reason, usage, latency_s)
    return Command({k: v for k, v in obj.items() if k != "reason"}, reason, usage, latency_s)


def payload(answer: Answer) -> dict:
    """An answer as the paper's JSON object (what records keep and replay sends again)."""
    if isinstance(answer, Stop):
        return {"stop": True, "reason": answer.reason}
    if isinstance(answer, ToolCall):
        return {"tool": answer.name, "args": dict(answer.args), "reason": answer.reason}
    if isinstance(answer, Control):
        deltas = {arm: _numbers(v) for arm, v in answer.deltas.items()}
        return {EE_DELTA: deltas.get("", deltas), "reason": answer.reason}
    return {**answer.fields, "reason": answer.reason}


def _numbers(value):
    """A control vector as JSON keeps it (plain floats; anything else as it came, for the env to refuse)."""
    try:
        return [float(x) for x in value]
    except (TypeError, ValueError):
        return value if isinstance(value, str | int | float | list) else repr(value)


class Participant(ABC):  # noqa: B024 (the hooks are optional; the answering method is each kind's own)
    """The hooks every kind of agent shares, whether it answers chat requests or observations."""

    name: str  # the id written to records and outcome tables
    privileged: bool = False  # True: reads simulator state (the oracle); labelled in every output
    # True: it answers the paper's commands only (servo, posetext, a seat), so control=ee_delta refuses it
    # (vabench.envs.control.refusal) rather than let it send commands into a control-rate episode
    plays_commands: bool = False
    plays_controls: bool = False  # True: it answers control steps only (a replay of an ee_delta record)
    # The run's rate limiter (anything with acquire/settle/pause, see vabench.agents.models.ratelimit), set by
    # the worker so every caller of the run shares it; None: the agent has none, or makes its own.
    limiter = None

    def refuses(self, task: str, arms: tuple[str, ...], seed: int, protocol: str) -> str | None:
        """Why this agent cannot play that episode at all (a two-arm task for a one-arm agent, a
        replay of another episode), or None: the config refuses such a run before any work, and an
        episode that starts anyway ends as a permanent error, never retried."""
        return None

    def step_budget(self, task_budget: int) -> int:
        """The env steps this agent's episodes may take: the task's budget, or the agent's own (a
        replay, the recorded episode's)."""
        return task_budget

    def warm(self) -> None:  # noqa: B027 (optional hook)
        """Pay one-time start-up costs now (a worker calls this before its first episode)."""

    def end(self) -> None:  # noqa: B027 (optional hook)
        """The episode is over, however it ended (``run_episode`` calls this last): let go of what the
        agent holds for one episode (a policy server's connection, closed with a close frame)."""

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Let go of what the agent holds across episodes; the worker calls this when it ends."""


class Agent(Participant):
    """An agent that reads observations directly (offline agents, policies, tool-using clients)."""

    @abstractmethod
    def start(self, brief: Brief) -> None:
        """Called before the first observation of each episode."""

    @abstractmethod
    def act(self, obs: Observation) -> Answer:
        """The answer to one observation (after a tool call, the same step's with its result)."""

    def reads(self, views: tuple[str, ...]) -> tuple[str, ...]:
        """Which of an observation's ``views`` it reads (default: all): only these are sent to it and
        kept as its frames, so a view it never looks at costs no transport and no stored image."""
        return views

    def refused(self, error: str) -> None:  # noqa: B027 (optional hook)
        """Its last answer was refused (a wrong axis, a distance out of range, a tool not offered):
        ``error`` is the text a chat model's repair prompt carries; :meth:`act` is asked again with
        the same observation, and the refusal cost one of the step's repairs."""
