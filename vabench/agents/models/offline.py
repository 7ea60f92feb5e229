"""Offline agents behind the agent boundary (vabench.core.boundary): no network, no keys, deterministic.

- ``oracle`` runs the task's scripted expert and answers with its protocol JSON, or under
  ``control=ee_delta`` with control steps toward each command's target
  (vabench.agents.models.oracle_control). It is PRIVILEGED (the expert reads object poses):
  every record and result row says so, and its score is a ceiling for the harness and
  executor, never a model result.
- ``random`` sends uniformly random valid decisions, or control steps under control=ee_delta (a
  floor under both interfaces; it never stops by itself).
- ``replay`` sends the replies of an earlier episode record again, in order, so an episode can
  be reproduced or inspected: a chat model's replies through the chat harness, an agent's typed
  answers directly; it inherits the recorded episode's privileged flag. Past the last reply it
  fails (the episode diverged), or, with ``then_stop`` (rescoring under changed checks), stops:
  the model said nothing more.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from vabench.agents.chat.model import Model, ModelError, Reply
from vabench.agents.chat.prompts import CAMERA_CHAIN_LIMIT
from vabench.agents.chat.protocol import INVALID, InvalidAnswer
from vabench.core.boundary import (
    ANSWERED,
    Agent,
    Answer,
    Brief,
    Command,
    Control,
    Observation,
    Participant,
    Stop,
    answer_of,
)
from vabench.core.vocab import ControlMode
from vabench.envs.actions import MOVE_AXES, ROTATE_AXES, SIGNS
from vabench.envs.control import MAX_STEP_M, MAX_STEP_RAD, clipped
from vabench.results.recordfile import Event, view_name
from vabench.results.records import read_events

from .oracle_control import ControlOracle

ORACLE_REASON = "privileged oracle: scripted expert reading simulator state"
ENDS = "replay: the recorded replies end here"
HUMAN = "human"  # model=human: people at a page (vabench.human); every operator's row names this model


class OracleAgent(Agent):
    privileged = True

    def __init__(self, name: str = "oracle"):
        self.name = name
        self._actions = None
        self._control: ControlOracle | None = None  # under control=ee_delta

    def start(self, brief: Brief) -> None:
        if brief.expert is None:
            raise ModelError("the oracle needs the privileged expert; the harness did not provide it")
        self._actions = brief.expert()
        control = brief.control == ControlMode.EE_DELTA
        self._control = ControlOracle(self._actions, brief.arms) if control else None

    def act(self, obs: Observation) -> Answer:
        if self._actions is None:
            raise ModelError("oracle: no episode started")
        if self._control is not None:
            deltas = self._control.step(dict(obs.arms))
            return Stop(ORACLE_REASON + ": expert finished") if deltas is None else Control(deltas, ORACLE_REASON)
        action = next(self._actions, None)
        if action is None:
            return Stop(ORACLE_REASON + ": expert finished")
        return Command(action, ORACLE_REASON)


SEATED = "is played from outside through a seat: python -m vabench.mcp (docs/mcp.md), not the launcher"
PEOPLE = "is played by people at a page: python -m vabench.launch model=human (docs/human.md), never by the driver"


class Seated(Agent):
    """``model=mcp`` and ``model=human``: an agent outside the process plays each episode through a
    seat (vabench.run.seat); the driver never asks it, and an episode that reaches it anyway ends
    as a permanent error (never retried). ``how``: how it is played instead."""

    plays_commands = True  # its tools and its page offer the paper's commands: control=ee_delta is refused

    def __init__(self, name: str = "mcp", how: str = SEATED):
        self.name, self.how = name, how

    def start(self, brief: Brief) -> None:
        raise ModelError(f"model={self.name} {self.how}", permanent=True)

    def act(self, obs: Observation) -> Answer:
        raise ModelError(f"model={self.name} {self.how}", permanent=True)


class RandomAgent(Agent):
    """The floor under both interfaces: uniformly random valid commands, or under control=ee_delta
    uniformly random control steps within the interface's limits; seeded per episode."""

    def __init__(self, name: str = "random", seed: int = 0):
        self.name, self.seed = name, seed
        self.rng = np.random.default_rng(seed)
        self.names: tuple[str, ...] = ()
        self.arms: tuple[str, ...] = ()
        self.chain = 0
        self.control = False

    def start(self, brief: Brief) -> None:
        self.rng = np.random.default_rng([self.seed, brief.seed])
        self.arms = brief.arms
        self.names = brief.actions
        self.chain = 0
        self.control = brief.control == ControlMode.EE_DELTA

    def step(self) -> Control:
        """Per arm a translation and a rotation vector drawn uniformly from the limits' cubes, then
        held to the limits by norm as the env would, and a gripper target in 0..1."""
        deltas = {}
        for arm in self.arms:
            v = np.concatenate(
                [
                    self.rng.uniform(-MAX_STEP_M, MAX_STEP_M, 3),
                    self.rng.uniform(-MAX_STEP_RAD, MAX_STEP_RAD, 3),
                    self.rng.uniform(0.0, 1.0, 1),
                ]
            )
            deltas[arm] = tuple(float(x) for x in clipped(v)[0])
        return Control(deltas, "random")

    def _move(self) -> dict:
        return {
            "axis": str(self.rng.choice(MOVE_AXES)),
            "sign": str(self.rng.choice(SIGNS)),
            "distance_mm": round(float(self.rng.uniform(1, 100)), 1),
        }

    def decision(self) -> dict:
        names = [n for n in self.names if not (n.startswith("camera.") and self.chain >= CAMERA_CHAIN_LIMIT)]
        name = str(self.rng.choice(names))
        self.chain = self.chain + 1 if name.startswith("camera.") else 0
        out: dict = {"action": name}
        if name == "gripper.move_world":
            out.update(self._move())
        elif name == "gripper.rotate_local":
            out.update(
                axis=str(self.rng.choice(ROTATE_AXES)),
                sign=str(self.rng.choice(SIGNS)),
                angle_deg=round(float(self.rng.uniform(1, 90)), 1),
            )
        elif name == "dual_gripper.move_world":
            out.update(left=self._move(), right=self._move())
        if len(self.arms) == 2 and name.startswith("gripper."):
            out["arm"] = str(self.rng.choice(self.arms))
        return out

    def act(self, obs: Observation) -> Answer:
        return self.step() if self.control else Command(self.decision(), "random")


def replay(record: Path, name: str | None = None, then_stop: bool = False) -> Participant:
    """The agent that plays an earlier episode's record again: a chat model's replies through the
    chat harness (records with ``reply`` events), else an agent's recorded answers."""
    events = read_events(Path(record))
    if any(e.get("type") == Event.ANSWER for e in events):
        return AnswerReplay(events, name, then_stop)
    return ReplayAgent(events, name, then_stop)  # records from before the boundary: every agent's replies


class _Replay:
    """What both replays read from a record: the episode it is of, its agent's name and flag."""

    def __init__(self, events: list[dict], name: str | None, then_stop: bool):
        start = next((e for e in events if e.get("type") == Event.EPISODE_START), {})
        self.episode = (start.get("task"), start.get("seed"), start.get("protocol"))
        self.privileged = bool(start.get("privileged", False))
        self.budget = start.get("budget")  # the recorded episode's (a policy's own differs from the task's)
        self.name = name or f"replay:{start.get('model', 'unknown')}"
        self.then_stop = then_stop
        self._next = 0

    def refuses(self, task: str, arms: tuple[str, ...], seed: int, protocol: str) -> str | None:
        if self.episode == (task, seed, protocol):
            return None
        t, s, p = self.episode
        return (
            f"replay: the record is of task {t}, seed {s}, protocol {p}, not ({task}, {seed}, {protocol}); "
            f"set tasks=[{t}] seeds=[{s}] protocol={p}"
        )

    def step_budget(self, task_budget: int) -> int:
        return int(self.budget or task_budget)

    def _begin(self, brief: Brief) -> None:
        why = self.refuses(brief.task, brief.arms, brief.seed, brief.protocol)
        if why:
            raise ModelError(why, permanent=True)  # the same record never matches on a retry
        self._next = 0

    recorded: list  # what the record's agent said, in order: a chat model's replies, another agent's answers
    said = "replies"

    def _take(self) -> object | None:
        """The next recorded reply or answer; None past the last with ``then_stop``."""
        if self._next >= len(self.recorded) and self.then_stop:
            return None
        if self._next >= len(self.recorded):
            raise ModelError(f"replay: the record has only {len(self.recorded)} {self.said}; the episode diverged")
        self._next += 1
        return self.recorded[self._next - 1]


class ReplayAgent(_Replay, Model):
    """A chat model's recorded replies, sent again in order through the chat harness."""

    def __init__(self, events: list[dict], name: str | None = None, then_stop: bool = False):
        super().__init__(events, name, then_stop)
        self.recorded = [e["text"] for e in events if e.get("type") == Event.REPLY]

    def start_episode(self, ctx: Brief) -> None:
        self._begin(ctx)

    def complete(self, messages: list[dict]) -> Reply:
        text = self._take()
        return Reply(text if text is not None else json.dumps({"stop": True, "reason": ENDS}))


class AnswerReplay(_Replay, Agent):
    """An agent's recorded answers (its ``answer`` events' payloads), in order."""

    def __init__(self, events: list[dict], name: str | None = None, then_stop: bool = False):
        super().__init__(events, name, then_stop)
        self.recorded = [e["payload"] for e in events if e.get("type") == Event.ANSWER]
        self.said = "answers"
        # a record of the paper's commands or of control steps (a refused answer, {INVALID: why},
        # names no interface)
        said = [answer_of(p) for p in self.recorded if isinstance(p, dict) and INVALID not in p]
        self.plays_commands = any(isinstance(a, Command) for a in said)
        self.plays_controls = any(isinstance(a, Control) for a in said)
        seen = [e for e in events if e.get("type") == Event.TURN and e.get("kind") == "observation"]
        self.views = {view_name(i) for i in seen[0].get("images", [])} if seen else None  # None: every view

    def start(self, brief: Brief) -> None:
        self._begin(brief)

    def reads(self, views: tuple[str, ...]) -> tuple[str, ...]:
        """The views the recorded agent was sent (its first observation's), so a replay keeps the
        frames the record has (a policy that read one camera: that camera's only)."""
        return views if self.views is None else tuple(v for v in views if v in self.views)

    def act(self, obs: Observation) -> Answer:
        obj = self._take()
        if obj is None:
            return Stop(ENDS)
        if INVALID in obj:  # an answer the agent could not give (a policy's NaN chunk): refused again
            raise InvalidAnswer(str(obj[INVALID]), ANSWERED)
        # as recorded, whatever it was (a stop, a tool call, a bad answer): the exchange parses it as it did then
        return Command({k: v for k, v in obj.items() if k != "reason"}, obj.get("reason", ""))
