"""Held-out cube placement variants: place_single_cube_heldout (a smaller green pad, mirrored,
beside a blue decoy pad) and place_cube_on_cube_heldout (a 6 cm base cube, a turned red cube).
Each documented change is real over several verified seeds, and the predicates keep their
meaning and thresholds for the new geometry."""

from __future__ import annotations

import numpy as np
import pytest

from tests.staging import teleport
from vabench.envs import seeds
from vabench.envs.objects.common import BLUE, GREEN, PAD_HALF_HEIGHT
from vabench.envs.sim.scene import TABLE_TOP_Z
from vabench.envs.tasks import TASKS

PAD, STACK = "place_single_cube_heldout", "place_cube_on_cube_heldout"
CONSTANTS = {
    PAD: ("LIFT_M", "XY_TOL_M", "HEIGHT_TOL_M", "PAD_MOVE_M", "HALF", "YAW_DEG"),
    STACK: ("LIFT_M", "OVERLAP_M", "HEIGHT_TOL_M", "BASE_MOVE_M", "HALF", "YAW_DEG", "RED_X", "RED_Y", "BASE_X"),
}


@pytest.mark.parametrize("name", sorted(CONSTANTS))
def test_the_predicate_thresholds_and_the_named_objects_are_the_base_tasks(name):
    cls = TASKS[name]
    base = TASKS[cls.summary_task]
    for const in CONSTANTS[name]:
        assert getattr(cls, const) == getattr(base, const), const
    assert cls.instruction == base.instruction and "green" in cls.instruction and "red cube" in cls.instruction


def _yaw_deg(m: np.ndarray) -> float:
    """A cube's turn about z, folded into [-45, 45) (a cube has 90 deg symmetry)."""
    yaw = np.degrees(np.arctan2(m[1, 0], m[0, 0]))
    return float((yaw + 45.0) % 90.0 - 45.0)


# -- place_single_cube_heldout -------------------------------------------------------------------


def test_pad_variant_has_a_smaller_green_pad_on_the_right_and_a_blue_decoy(physics_env):
    base_half = TASKS["place_single_cube"].PAD_HALF
    for seed in seeds.eval_seeds(PAD)[:6]:
        physics_env.reset(PAD, seed)
        bodies, s = physics_env.world.bodies, physics_env.privileged()
        (pad,), (decoy,) = bodies["target_pad"].spec.parts, bodies["decoy_pad"].spec.parts
        assert pad.color == GREEN and pad.size[:2] == (0.04, 0.04) and pad.size[0] < base_half
        assert decoy.color == BLUE and decoy.size == pad.size and bodies["decoy_pad"].static
        cube, green, blue = s.position("cube"), s.position("target_pad"), s.position("decoy_pad")
        assert green[0] > cube[0] + 0.04  # mirrored: the base task has the pad left of the cube
        assert blue[0] < cube[0] and green[0] - blue[0] > 2 * pad.size[0] + 0.03  # two separate pads
        for p in (green, blue):  # neither pad lies under the cube
            assert max(abs(cube[0] - p[0]), abs(cube[1] - p[1])) > pad.size[0] + 0.035
            assert p[2] == pytest.approx(TABLE_TOP_Z + PAD_HALF_HEIGHT, abs=1e-4)


def test_a_cube_on_the_decoy_pad_fails_and_on_the_green_pad_succeeds(physics_env):
    physics_env.reset(PAD, seeds.eval_seeds(PAD)[0])
    task, s = physics_env.task, physics_env.privileged()
    s.flags["lifted"] = True  # as if carried there
    top = TABLE_TOP_Z + 2 * PAD_HALF_HEIGHT + task.HALF + 0.002
    for pad, ok in (("decoy_pad", False), ("target_pad", True)):
        teleport(physics_env, "cube", (*s.position(pad)[:2], top), np.eye(3))
        physics_env.world.step(150)
        c = task.conditions(s)
        assert (c["xy"], c["contact"], c["height"], task.success(s)) == (ok, ok, True, ok), (pad, c)


# -- place_cube_on_cube_heldout ------------------------------------------------------------------


def test_stack_variant_has_a_bigger_green_base_and_a_turned_red_cube(physics_env):
    base = TASKS["place_cube_on_cube"]
    yaws = []
    for seed in seeds.eval_seeds(STACK)[:10]:
        physics_env.reset(STACK, seed)
        bodies, s = physics_env.world.bodies, physics_env.privileged()
        (green,), (red,) = bodies["base_cube"].spec.parts, bodies["cube"].spec.parts
        assert green.color == GREEN and green.size == (0.03, 0.03, 0.03) and green.size[0] != base.HALF
        assert red.size == (base.HALF,) * 3
        assert s.position("base_cube")[2] == pytest.approx(TABLE_TOP_Z + 0.03, abs=1e-3)  # settled, 6 cm tall
        yaw = _yaw_deg(s.matrix("cube"))
        assert 14.0 <= abs(yaw) <= 41.0, (seed, yaw)  # the base task's red cube starts axis-aligned
        assert physics_env.task.red_yaw == pytest.approx(np.radians(yaw), abs=np.radians(1.0))
        yaws.append(yaw)
    assert min(yaws) < 0 < max(yaws)  # turned both ways


class _Stub:
    """Just enough state for the stacking predicate: two positions, everything else satisfied."""

    def __init__(self, red, base):
        self.pos = {"cube": np.asarray(red, float), "base_cube": np.asarray(base, float)}
        self.flags = {"lifted": True}

    def position(self, name):
        return self.pos[name]

    def displacement(self, name):
        return 0.0

    def touching(self, a, b):
        return True

    def closed(self, arm):
        return False


def test_stack_predicate_keeps_its_meaning_for_the_bigger_base():
    task = TASKS[STACK]()
    base_z = TABLE_TOP_Z + 0.03
    on_top = base_z + 0.03 + 0.025  # base top + red half: 55 mm above the base centre (the base task: 50)
    assert task.success(_Stub((0.12, 0.02, on_top), (0.12, 0.02, base_z)))
    # top faces overlap >= 2 mm on both axes: |d| <= 0.025 + 0.03 - 0.002 = 0.053 (the base task: 0.048)
    assert task.conditions(_Stub((0.12 + 0.052, 0.02, on_top), (0.12, 0.02, base_z)))["overlap"]
    assert not task.conditions(_Stub((0.12, 0.02 - 0.054, on_top), (0.12, 0.02, base_z)))["overlap"]
    # height within 12 mm of the new top
    assert task.conditions(_Stub((0.12, 0.02, on_top + 0.011), (0.12, 0.02, base_z)))["height"]
    assert not task.conditions(_Stub((0.12, 0.02, on_top + 0.013), (0.12, 0.02, base_z)))["height"]
    assert not task.conditions(_Stub((0.12, 0.02, on_top - 0.013), (0.12, 0.02, base_z)))["height"]


def test_stack_expert_rests_the_red_cube_on_the_new_top(physics_env):
    physics_env.reset(STACK, seeds.eval_seeds(STACK)[0])
    result = None
    for result in physics_env.expert_steps():
        assert result.action_valid and result.planner_success, result.feedback
    s = physics_env.privileged()
    assert result.success
    assert s.position("cube")[2] - s.position("base_cube")[2] == pytest.approx(0.055, abs=0.004)
