"""Offline agents behind the model interface: no network, no keys, deterministic.

- ``oracle`` runs the task's scripted expert and answers with its protocol JSON. It is
  PRIVILEGED (the expert reads object poses): every record and result row says so, and its
  score is a ceiling for the harness and executor, never a model result.
- ``random`` sends uniformly random valid decisions (a floor; it never stops by itself).
- ``replay`` sends the replies of an earlier episode record again, in order, so an episode can
  be reproduced or inspected; it inherits the recorded episode's privileged flag. Past the last
  reply it fails (the episode diverged), or, with ``then_stop`` (rescoring under changed checks),
  stops: the model said nothing more.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from vabench.envs import action_names
from vabench.recordfile import Event
from vabench.vocab import protocol_named

from .models import EpisodeContext, Model, ModelError, Reply
from .prompts import CAMERA_CHAIN_LIMIT
from .records import read_events

ORACLE_REASON = "privileged oracle: scripted expert reading simulator state"


class OracleAgent(Model):
    privileged = True

    def __init__(self, name: str = "oracle"):
        self.name = name
        self._actions = None

    def start_episode(self, ctx: EpisodeContext) -> None:
        if ctx.expert is None:
            raise ModelError("the oracle needs the privileged expert; the harness did not provide it")
        self._actions = ctx.expert()

    def complete(self, messages: list[dict]) -> Reply:
        if self._actions is None:
            raise ModelError("oracle: no episode started")
        action = next(self._actions, None)
        if action is None:
            return Reply(json.dumps({"stop": True, "reason": ORACLE_REASON + ": expert finished"}))
        return Reply(json.dumps({**action, "reason": ORACLE_REASON}))


class RandomAgent(Model):
    def __init__(self, name: str = "random", seed: int = 0):
        self.name, self.seed = name, seed
        self.rng = np.random.default_rng(seed)
        self.names: tuple[str, ...] = ()
        self.arms: tuple[str, ...] = ()
        self.chain = 0

    def start_episode(self, ctx: EpisodeContext) -> None:
        self.rng = np.random.default_rng([self.seed, ctx.seed])
        self.arms = ctx.arms
        self.names = action_names(ctx.arms, camera=protocol_named(ctx.protocol).camera_actions)
        self.chain = 0

    def _move(self) -> dict:
        return {
            "axis": str(self.rng.choice(["x", "y", "z"])),
            "sign": str(self.rng.choice(["+", "-"])),
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
                axis=str(self.rng.choice(["rx", "ry", "rz"])),
                sign=str(self.rng.choice(["+", "-"])),
                angle_deg=round(float(self.rng.uniform(1, 90)), 1),
            )
        elif name == "dual_gripper.move_world":
            out.update(left=self._move(), right=self._move())
        if len(self.arms) == 2 and name.startswith("gripper."):
            out["arm"] = str(self.rng.choice(self.arms))
        return out

    def complete(self, messages: list[dict]) -> Reply:
        return Reply(json.dumps({**self.decision(), "reason": "random"}))


class ReplayAgent(Model):
    def __init__(self, record: Path, name: str | None = None, then_stop: bool = False):
        events = read_events(Path(record))
        self.replies = [e["text"] for e in events if e.get("type") == Event.REPLY]
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

    def start_episode(self, ctx: EpisodeContext) -> None:
        why = self.refuses(ctx.task, ctx.arms, ctx.seed, ctx.protocol)
        if why:
            raise ModelError(why, permanent=True)  # the same record never matches on a retry
        self._next = 0

    def complete(self, messages: list[dict]) -> Reply:
        if self._next >= len(self.replies) and self.then_stop:
            return Reply(json.dumps({"stop": True, "reason": "replay: the recorded replies end here"}))
        if self._next >= len(self.replies):
            raise ModelError(f"replay: the record has only {len(self.replies)} replies; the episode diverged")
        self._next += 1
        return Reply(self.replies[self._next - 1])
