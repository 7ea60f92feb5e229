"""Privileged test staging: build a task's layout without physics, and put a body where a test
needs it (the near-miss tests judge predicates on poses set this way)."""

from __future__ import annotations

import numpy as np
import sapien

from vabench.envs.sim.geometry import matrix_to_quat


class RecordingWorld:
    """Stands in for World in build(): records what would be added, no physics."""

    def __init__(self):
        self.added = {}

    def add(self, spec, position, quat_wxyz=(1.0, 0.0, 0.0, 0.0)):
        self.added[spec.name] = (spec, np.asarray(position, float), np.asarray(quat_wxyz, float))


def teleport(env, name: str, position, rot=None, steps: int = 0) -> None:
    """Put body ``name`` at ``position`` with rotation ``rot`` (3x3; default: as it is), at rest.
    ``steps`` physics steps afterwards refresh the contacts; with none, a predicate reads exactly
    this pose."""
    body = env.world.bodies[name]
    rot = body.matrix()[:3, :3] if rot is None else rot
    body.entity.set_pose(sapien.Pose([float(v) for v in position], [float(v) for v in matrix_to_quat(rot)]))
    if not body.static:
        body.component.set_linear_velocity([0.0, 0.0, 0.0])
        body.component.set_angular_velocity([0.0, 0.0, 0.0])
    env.world.step(steps)
