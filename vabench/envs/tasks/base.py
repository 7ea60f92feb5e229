"""What a task family declares: name, arms, budget, instruction, a seeded layout, a success
predicate and checkpoints over privileged state, and a scripted expert.

A task instance is built fresh for every reset; attributes set in ``build`` (the bodies, drawn
model ids) describe that episode only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator

import numpy as np

from vabench.core.vocab import RIGHT

from ..objects.common import PAD_HALF_HEIGHT
from ..privileged import PrivilegedState
from ..sim.scene import TABLE_TOP_Z, World

SPAWN_Z = TABLE_TOP_Z + 0.001  # RoboTwin drops objects from 1 mm above the table


class Task(ABC):
    name: str
    arms: tuple[str, ...]  # controlled arms: ("right",) or ("left", "right")
    budget: int  # env steps (camera + robot + invalid actions)
    instruction: str
    labels: dict[str, str] = {}  # body name -> how feedback may call it (static bodies only)
    # set by @register_task (registry.py): the track, the task whose summary it uses, its demos
    track: str
    summary_task: str
    demos: tuple[str, ...]

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

    def objects_placed(self, s: PrivilegedState) -> int | None:
        """Objects placed so far (multi-object tasks: the basket track's count); None for the others."""
        return None

    def placement(self, s: PrivilegedState) -> dict[str, dict] | None:
        """Per-object state for the episode record (multi-object tasks); None for the others."""
        return None

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
        held = s.held(self.TARGET, RIGHT)
        return {
            "grasped": self.latch(s, "grasped", held),
            "lifted": self.latch(s, "lifted", s.lift(self.TARGET) > self.LIFT_M and held),
        }

    def success(self, s: PrivilegedState) -> bool:
        return s.lift(self.TARGET) > self.LIFT_M and s.closed(RIGHT)


class PlaceOnPad(Task, ABC):
    """The target-placement predicate of paper Table 23 (one shared checker in the reference),
    for ``TARGET`` on the static ``target_pad``: previously lifted >= LIFT_M; |dx|, |dy| from the
    pad centre each <= XY_TOL_M; height within HEIGHT_TOL_M of resting on the pad; pad moved <=
    PAD_MOVE_M; touching the pad; gripper open."""

    TARGET: str
    LIFT_M: float
    XY_TOL_M: float
    HEIGHT_TOL_M: float
    PAD_MOVE_M: float

    def rest_z(self, s: PrivilegedState) -> float:
        """TARGET's origin height resting on the pad: the pad top plus the height it settled at
        above the table (RoboTwin's object_support_offset)."""
        support = s.start[self.TARGET][2, 3] - TABLE_TOP_Z
        return float(s.position("target_pad")[2] + PAD_HALF_HEIGHT + support)

    def update(self, s: PrivilegedState) -> None:
        self.latch(s, "lifted", s.peak_lift(self.TARGET) >= self.LIFT_M)

    def _over_pad(self, s: PrivilegedState) -> bool:
        d = s.position(self.TARGET) - s.position("target_pad")
        return bool(max(abs(d[0]), abs(d[1])) <= self.XY_TOL_M)

    def checkpoints(self, s: PrivilegedState) -> dict[str, bool]:
        held = s.held(self.TARGET, RIGHT)
        return {
            "grasped": self.latch(s, "grasped", held),
            "lifted": s.flags.get("lifted", False),
            "above_target": self.latch(s, "above_target", held and self._over_pad(s) and s.flags.get("lifted", False)),
            "placed": self.success(s),
        }

    def conditions(self, s: PrivilegedState) -> dict[str, bool]:
        """The terminal predicate's parts, in the paper's order; success is all of them."""
        return {
            "lifted": s.flags.get("lifted", False),
            "xy": self._over_pad(s),
            "height": bool(abs(s.position(self.TARGET)[2] - self.rest_z(s)) <= self.HEIGHT_TOL_M),
            "pad_still": s.displacement("target_pad") <= self.PAD_MOVE_M,
            "contact": s.touching(self.TARGET, "target_pad"),
            "open": not s.closed(RIGHT),
        }

    def success(self, s: PrivilegedState) -> bool:
        return all(self.conditions(s).values())
