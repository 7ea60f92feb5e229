"""Held-out bottle variants: grasp_single_bottle_heldout and grasp_single_bottle_upright_heldout
(unseen bottles: a squat juice bottle or a tall slim sports bottle) and
place_single_bottle_upright_heldout (the squat bottle, a blue decoy pad beside the green target).
Each documented change is real over several verified seeds, and the predicates keep their
meaning and thresholds for the new geometry."""

from __future__ import annotations

import numpy as np
import pytest

from tests.staging import teleport
from vabench.envs import seeds
from vabench.envs.objects.common import BLUE, BOTTLE_MODELS, GREEN, PAD_HALF_HEIGHT
from vabench.envs.sim.scene import TABLE_TOP_Z
from vabench.envs.tasks import TASKS
from vabench.envs.tasks.heldout import SLIM_BOTTLE, SQUAT_BOTTLE

LYING, UPRIGHT, PLACE = (
    "grasp_single_bottle_heldout",
    "grasp_single_bottle_upright_heldout",
    "place_single_bottle_upright_heldout",
)
CONSTANTS = {
    LYING: ("LIFT_M", "MASS", "X", "Y", "YAW_DEG", "TARGET"),
    UPRIGHT: ("LIFT_M", "MASS", "X", "Y", "TARGET"),
    PLACE: (
        "LIFT_M",
        "XY_TOL_M",
        "HEIGHT_TOL_M",
        "PAD_MOVE_M",
        "PAD_HALF",
        "PAD_X",
        "PAD_Y",
        "BOTTLE_X",
        "BOTTLE_Y",
        "CARRY_ABOVE_M",
        "RELEASE_ABOVE_M",
    ),
}
N_SEEDS = 6


@pytest.mark.parametrize("name", sorted(CONSTANTS))
def test_the_predicate_thresholds_ranges_and_instruction_are_the_base_tasks(name):
    cls = TASKS[name]
    base = TASKS[cls.summary_task]
    for const in CONSTANTS[name]:
        assert getattr(cls, const) == getattr(base, const), const
    assert cls.instruction == base.instruction and "bottle" in cls.instruction
    assert cls.labels.get("target_pad") == base.labels.get("target_pad")


def test_the_heldout_bottles_are_unseen_in_size_proportion_and_cap_colour():
    for m in (SQUAT_BOTTLE, SLIM_BOTTLE):
        for b in BOTTLE_MODELS:
            assert abs(2 * m.radius - 2 * b.radius) >= 0.005  # >= 5 mm wider or narrower
            assert abs(m.height - b.height) >= 0.025  # >= 2.5 cm shorter or taller
            assert m.cap_color != b.cap_color and m.color != b.color
    assert SQUAT_BOTTLE.radius > max(b.radius for b in BOTTLE_MODELS)
    assert SQUAT_BOTTLE.height < min(b.height for b in BOTTLE_MODELS)
    assert SLIM_BOTTLE.radius < min(b.radius for b in BOTTLE_MODELS)
    assert SLIM_BOTTLE.height > max(b.height for b in BOTTLE_MODELS)
    assert 2 * SQUAT_BOTTLE.radius < 0.08  # still fits the 8 cm jaw, lying, with 5 mm either side


def _built_model(env):
    """The model the scene's bottle was built from, read from its parts (body apothem, cap)."""
    parts = env.world.bodies["bottle"].spec.parts
    return parts[0].size[0], parts[-1].size[0], parts[-1].color


def _check_model(env, models):
    m = env.task.model
    assert m in models and m not in BOTTLE_MODELS
    assert _built_model(env) == (m.radius, m.cap_radius, m.cap_color)
    return m


def test_lying_variant_draws_both_unseen_bottles_lying_on_a_flat_face(physics_env):
    drawn = set()
    for seed in seeds.eval_seeds(LYING)[:N_SEEDS]:
        physics_env.reset(LYING, seed)
        m = _check_model(physics_env, (SQUAT_BOTTLE, SLIM_BOTTLE))
        drawn.add(m)
        s = physics_env.privileged()
        assert s.position("bottle")[2] - TABLE_TOP_Z == pytest.approx(m.radius, abs=0.003)  # settled on a face
        axis = s.matrix("bottle")[:3, 2]
        assert abs(axis[2]) < 0.02 and axis[1] > 0.9  # horizontal, cap away from the robot
    assert drawn == {SQUAT_BOTTLE, SLIM_BOTTLE}


def test_upright_variant_draws_both_unseen_bottles_with_caps_at_unseen_heights(physics_env):
    base_caps = [b.body / 2 + b.cap_z for b in BOTTLE_MODELS]  # cap centre above the table
    drawn = set()
    for seed in seeds.eval_seeds(UPRIGHT)[:N_SEEDS]:
        physics_env.reset(UPRIGHT, seed)
        m = _check_model(physics_env, (SQUAT_BOTTLE, SLIM_BOTTLE))
        drawn.add(m)
        s = physics_env.privileged()
        assert s.position("bottle")[2] - TABLE_TOP_Z == pytest.approx(m.body / 2, abs=0.003)  # standing
        assert s.matrix("bottle")[2, 2] > 0.999
        cap = s.position("bottle")[2] - TABLE_TOP_Z + m.cap_z
        assert min(abs(cap - c) for c in base_caps) > 0.025, (seed, cap)
    assert drawn == {SQUAT_BOTTLE, SLIM_BOTTLE}


def test_place_variant_has_the_squat_bottle_and_a_blue_decoy_beside_the_green_pad(physics_env):
    task_cls = TASKS[PLACE]
    sides = set()
    for seed in seeds.eval_seeds(PLACE)[:N_SEEDS]:
        physics_env.reset(PLACE, seed)
        _check_model(physics_env, (SQUAT_BOTTLE,))
        bodies, s = physics_env.world.bodies, physics_env.privileged()
        (pad,), (decoy,) = bodies["target_pad"].spec.parts, bodies["decoy_pad"].spec.parts
        assert pad.color == GREEN and pad.size[:2] == (task_cls.PAD_HALF,) * 2
        assert decoy.color == BLUE and decoy.size == pad.size and bodies["decoy_pad"].static
        green, blue, bottle = s.position("target_pad"), s.position("decoy_pad"), s.position("bottle")
        assert abs(blue[0] - green[0]) == pytest.approx(task_cls.DECOY_DX, abs=1e-6) and blue[1] == pytest.approx(
            green[1]
        )
        assert abs(blue[0] - green[0]) > 2 * pad.size[0] + 0.025  # two separate pads
        assert blue[2] == pytest.approx(TABLE_TOP_Z + PAD_HALF_HEIGHT, abs=1e-4)
        for p in (green, blue):  # neither pad lies under the bottle
            assert max(abs(bottle[0] - p[0]), abs(bottle[1] - p[1])) > pad.size[0] + SQUAT_BOTTLE.radius
        sides.add(int(np.sign(blue[0] - green[0])))
    assert sides == {-1, 1}


def test_a_bottle_stood_on_the_decoy_fails_and_on_the_green_pad_succeeds(physics_env):
    physics_env.reset(PLACE, seeds.eval_seeds(PLACE)[0])
    task, s = physics_env.task, physics_env.privileged()
    s.flags["lifted"] = True  # as if carried there
    for pad, ok in (("decoy_pad", False), ("target_pad", True)):
        teleport(physics_env, "bottle", (*s.position(pad)[:2], task.rest_z(s) + 0.002), np.eye(3))
        physics_env.world.step(150)
        assert task.conditions(s)["height"] and s.touching("bottle", pad)
        assert task.success(s) == ok, pad


def test_place_expert_stands_the_squat_bottle_on_green_not_blue(physics_env):
    physics_env.reset(PLACE, seeds.eval_seeds(PLACE)[-1])
    result = None
    for result in physics_env.expert_steps():
        assert result.action_valid and result.planner_success, result.feedback
    s = physics_env.privileged()
    assert result.success and s.touching("bottle", "target_pad") and not s.touching("bottle", "decoy_pad")
    assert s.matrix("bottle")[2, 2] > 0.99  # standing
