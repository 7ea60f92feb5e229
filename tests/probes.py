"""Test-only tasks that exercise the env where the real tasks do not (yet): two arms, an object
that never settles."""

from __future__ import annotations

import contextlib

from vabench.envs.objects.common import BLUE, cube
from vabench.envs.sim.bodies import BodySpec, Part
from vabench.envs.tasks.base import SPAWN_Z, Task
from vabench.envs.tasks.registry import TASKS, register_task


class DualProbe(Task):
    name, arms, budget = "dual_probe", ("left", "right"), 100
    instruction = "Probe both arms."

    def build(self, world, rng):
        world.add(cube("cube", 0.02, BLUE), (0.0, 0.15, SPAWN_Z + 0.02))

    def success(self, s):
        return False

    def checkpoints(self, s):
        return {}

    def expert(self, s):
        return iter(())


class ShortBudgetProbe(DualProbe):
    name, arms, budget = "short_probe", ("right",), 3


class SpinningProbe(Task):
    """A ball spinning about the vertical: point contacts have no torsional friction, so it
    never settles and the seed screener must reject the scene."""

    name, arms, budget = "spinning_probe", ("right",), 10
    instruction = "Nothing to do."

    def build(self, world, rng):
        spec = BodySpec("ball", (Part("sphere", (0.03,)),), mass=0.05, friction=0.8)
        body = world.add(spec, (0.0, 0.0, SPAWN_Z + 0.03))
        body.component.set_angular_velocity([0.0, 0.0, 3.0])

    def success(self, s):
        return False

    def checkpoints(self, s):
        return {}

    def expert(self, s):
        yield {"action": "gripper.open"}


@contextlib.contextmanager
def registered(*tasks: type[Task]):
    """The probe tasks registered by name while the block runs (an episode names its task), and
    unregistered after, so the suite's registry stays the paper's."""
    for cls in tasks:
        register_task()(cls)
    try:
        yield
    finally:
        for cls in tasks:
            TASKS.remove(cls.name)
