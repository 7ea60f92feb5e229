"""grasp_single_bottle_upright (paper Table 22, row 2): grasp a standing bottle and lift it."""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import RIGHT

from ..objects.common import BOTTLE_MODELS, bottle
from ..privileged import PrivilegedState
from ..sim.scene import World
from . import expert
from .base import SPAWN_Z, GraspAndLift, Task
from .grasp_single_bottle import pick_model
from .registry import register_task


def add_upright_bottle(task: Task, world: World, rng: np.random.Generator, x_range, y_range, mass: float) -> None:
    """The standing bottle of both upright-bottle tasks (fixed upright orientation, no yaw)."""
    x, y = rng.uniform(*x_range), rng.uniform(*y_range)
    task.model_id = pick_model(task, rng)
    task.model = task.MODELS[task.model_id]
    world.add(bottle("bottle", task.model, mass), (x, y, SPAWN_Z + task.model.body / 2))


def grasp_by_the_cap(task: Task, s: PrivilegedState, body: str = "bottle", model=None):
    """Top-down, the open jaw around the cap (any yaw: it is round), close, so the bottle hangs
    upright from the gripper. ``body``/``model`` name another standing bottle (the basket task)."""
    cap_z = s.position(body)[2] + (model or task.model).cap_z
    yield from expert.grasp_from_above(s, RIGHT, body, 0.0, grasp_z=cap_z)


@register_task()
class GraspSingleBottleUpright(GraspAndLift):
    TARGET = "bottle"
    name, arms, budget = "grasp_single_bottle_upright", (RIGHT,), 50
    instruction = "Use the right arm to grasp the upright bottle and lift it off the table."
    X, Y = (0.20, 0.28), (-0.16, -0.04)
    LIFT_M = 0.050  # lifted > 50 mm, right gripper closed
    MASS = 0.05
    MODELS = BOTTLE_MODELS  # held-out variants swap in unseen models
    MODEL_ID: int | None = 0  # one fixed bottle, as in the reference; None: draw one of MODELS per seed (held-out)

    def build(self, world: World, rng: np.random.Generator) -> None:
        add_upright_bottle(self, world, rng, self.X, self.Y, self.MASS)

    def expert(self, s: PrivilegedState):
        yield from grasp_by_the_cap(self, s)
        yield from expert.lift(s, RIGHT, 0.12)
