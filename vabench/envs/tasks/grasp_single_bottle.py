"""grasp_single_bottle (paper Table 22, row 1): grasp a bottle lying on its side and lift it."""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import RIGHT

from ..objects.common import BOTTLE_MODELS, bottle
from ..privileged import PrivilegedState
from ..sim.geometry import axis_angle, matrix_to_quat
from ..sim.scene import World
from . import expert
from .base import SPAWN_Z, GraspAndLift, Task
from .registry import register_task

LYING = axis_angle([1, 0, 0], -np.pi / 2)  # on a flat face, the axis (local z, cap end) toward +y


def pick_model(task: Task, rng: np.random.Generator) -> int:
    """The bottle's index into ``task.MODELS``: the base tasks' fixed ``MODEL_ID`` (0, the
    reference's one bottle: no draw, so the layout's later draws do not depend on it) or, where
    ``MODEL_ID`` is None (the held-out variants), one drawn per seed."""
    return int(rng.integers(len(task.MODELS))) if task.MODEL_ID is None else task.MODEL_ID


@register_task()
class GraspSingleBottle(GraspAndLift):
    TARGET = "bottle"
    name, arms, budget = "grasp_single_bottle", (RIGHT,), 50
    instruction = "Use the right arm to grasp the bottle lying on the table and lift it up."
    X, Y, YAW_DEG = (0.20, 0.28), (-0.16, -0.04), 22.5
    LIFT_M = 0.050  # lifted > 50 mm, right gripper closed
    MASS = 0.05
    MODELS = BOTTLE_MODELS  # held-out variants swap in unseen models
    MODEL_ID: int | None = 0  # one fixed bottle, as in the reference; None: draw one of MODELS per seed (held-out)

    def build(self, world: World, rng: np.random.Generator) -> None:
        x, y = rng.uniform(*self.X), rng.uniform(*self.Y)
        yaw = np.radians(rng.uniform(-self.YAW_DEG, self.YAW_DEG))
        self.model_id = pick_model(self, rng)
        self.model = m = self.MODELS[self.model_id]
        # lying on a flat face, cap toward +y (away from the robot), then yawed
        rot = axis_angle([0, 0, 1], yaw) @ LYING
        world.add(bottle("bottle", m, self.MASS), (x, y, SPAWN_Z + m.radius), matrix_to_quat(rot))

    def expert(self, s: PrivilegedState):
        axis = s.matrix("bottle")[:3, 2]  # the bottle's long axis, now horizontal
        across = np.arctan2(axis[1], axis[0]) - np.pi / 2  # close the jaw across it
        yield from expert.grasp_from_above(
            s, RIGHT, "bottle", across, grasp_z=s.position("bottle")[2], symmetry_deg=180.0
        )
        yield from expert.lift(s, RIGHT, 0.12)
