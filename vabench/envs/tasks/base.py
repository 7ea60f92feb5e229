"""What a task family declares: name, arms, budget, instruction, a seeded layout, a success
predicate and checkpoints over privileged state, and a scripted expert.

A task instance is built fresh for every reset; attributes set in ``build`` (the bodies, drawn
model ids) describe that episode only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator

import numpy as np

from ..privileged import PrivilegedState
from ..scene import TABLE_TOP_Z, World

SPAWN_Z = TABLE_TOP_Z + 0.001  # RoboTwin drops objects from 1 mm above the table


class Task(ABC):
    name: str
    arms: tuple[str, ...]  # controlled arms: ("right",) or ("left", "right")
    budget: int  # env steps (camera + robot + invalid actions)
    instruction: str
    labels: dict[str, str] = {}  # body name -> how feedback may call it (static bodies only)

    @abstractmethod
    def build(self, world: World, rng: np.random.Generator) -> None:
        """Add this episode's bodies; every random draw comes from ``rng``."""

    @abstractmethod
    def success(self, s: PrivilegedState) -> bool:
        """The paper's terminal predicate (checked after every dispatched action)."""

    @abstractmethod
    def checkpoints(self, s: PrivilegedState) -> dict[str, bool]:
        """Subtask progress, in order. Latch what must stay achieved via ``s.flags``."""

    @abstractmethod
    def expert(self, s: PrivilegedState) -> Iterator[dict]:
        """Protocol actions (the same JSON a model emits), computed from privileged state."""

    def update(self, s: PrivilegedState) -> None:  # noqa: B027 (optional hook, no-op by default)
        """Latch history-dependent flags; called after every action, before the checks."""

    def latch(self, s: PrivilegedState, key: str, value: bool) -> bool:
        s.flags[key] = s.flags.get(key, False) or bool(value)
        return s.flags[key]


class GraspAndLift(Task, ABC):
    """The direct-grasp predicate of paper Table 22, shared by its five rows: ``TARGET`` lifted more
    than ``LIFT_M`` above where it settled, and the right gripper closed."""

    TARGET: str
    LIFT_M = 0.050

    def checkpoints(self, s: PrivilegedState) -> dict[str, bool]:
        held = s.held(self.TARGET, "right")
        return {
            "grasped": self.latch(s, "grasped", held),
            "lifted": self.latch(s, "lifted", s.lift(self.TARGET) > self.LIFT_M and held),
        }

    def success(self, s: PrivilegedState) -> bool:
        return s.lift(self.TARGET) > self.LIFT_M and s.closed("right")
