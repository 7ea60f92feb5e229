"""Held-out variants: they reuse their base task's summary, instruction and predicate, and change
exactly what their docstring says."""

from __future__ import annotations

import numpy as np
import pytest

from vabench.agents.summaries.demo_tools import summary_task, task_demos
from vabench.envs import seeds
from vabench.envs.tasks import TASKS

VARIANTS = sorted(name for name, cls in TASKS.items() if name.endswith("_heldout"))
PREDICATE_CONSTANTS = (
    "LIFT_M",
    "RADIUS_M",
    "HEIGHT_M",
    "BOWL_MOVE_M",
    "XY_TOL_M",
    "HEIGHT_TOL_M",
    "PAD_MOVE_M",
    "OVERLAP_M",
    "BASE_MOVE_M",
)


@pytest.mark.parametrize("name", VARIANTS)
def test_variants_keep_their_base_task_instruction_summary_and_thresholds(name):
    cls = TASKS[name]
    base = TASKS[cls.summary_task]
    assert name == f"{base.name}_heldout" and summary_task(name) == base.name and task_demos(name) == (base.name,)
    assert (cls.instruction, cls.budget, cls.arms) == (base.instruction, base.budget, base.arms)
    for const in PREDICATE_CONSTANTS:
        assert getattr(cls, const, None) == getattr(base, const, None), const
    assert cls.__doc__ and "Changes:" in cls.__doc__ and "Unchanged:" in cls.__doc__


def test_cube_variant_has_unseen_sizes_and_a_distractor(physics_env):
    halves = set()
    for seed in seeds.eval_seeds("grasp_single_cube_heldout")[:6]:
        physics_env.reset("grasp_single_cube_heldout", seed)
        halves.add(physics_env.task.HALF)
        s = physics_env.privileged()
        assert "distractor" in physics_env.world.bodies
        assert np.hypot(*(s.position("cube") - s.position("distractor"))[:2]) > 0.06
    assert halves == {0.02, 0.03}  # never the base task's 0.025


def test_bowl_variant_mirrors_the_layout(physics_env):
    for seed in seeds.eval_seeds("place_cube_in_bowl_heldout")[:4]:
        physics_env.reset("place_cube_in_bowl_heldout", seed)
        s = physics_env.privileged()
        assert s.position("bowl")[0] > s.position("cube")[0] + 0.04  # the base task has the bowl on the left
