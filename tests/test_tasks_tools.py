"""The functional-contact and tool-use families (paper Table 24): click_bell_right and
beat_block_hammer_right. Paper numbers, near misses on each tolerance through privileged state,
the expert on the first manifest seeds, and the physics details the tasks rely on."""

import numpy as np
import pytest

from tests.staging import RecordingWorld, teleport
from vabench.envs import seeds
from vabench.envs.objects.tools import BELL_MODELS, HAMMER_FACE, HAMMER_HALF_THICKNESS, centre_of_mass, hammer
from vabench.envs.sim.geometry import axis_angle
from vabench.envs.sim.scene import TABLE_TOP_Z
from vabench.envs.tasks import expert, make_task
from vabench.envs.tasks.beat_block_hammer_right import BeatBlockHammerRight
from vabench.envs.tasks.click_bell_right import FINGERTIP_BELOW_GC, ClickBellRight

FAMILIES = ("click_bell_right", "beat_block_hammer_right")


def _layout(task, seed):
    world = RecordingWorld()
    task.build(world, np.random.default_rng(seed))
    return world.added


def _run(env, actions):
    r = None
    for a in actions:
        r = env.step(a)
        assert r.action_valid and r.planner_success, (a, r.feedback)
    return r


def _expert(env):
    r = None
    for r in env.expert_steps():
        assert r.action_valid and r.planner_success, (r.step, r.feedback)
    return r


# -- (a) the paper's numbers ---------------------------------------------------------------


def test_paper_parameters():
    bell, ham = make_task("click_bell_right"), make_task("beat_block_hammer_right")
    assert (bell.budget, ham.budget) == (50, 100) and bell.arms == ham.arms == ("right",)
    assert bell.X == (0.12, 0.26) and bell.Y == (-0.18, -0.04) and len(bell.MODEL_IDS) == 2
    assert bell.XY_TOL_M == 0.025 and bell.Z_TOL_M == 0.030
    assert ham.HAMMER_X == (0.02, 0.06) and ham.HAMMER_Y == (-0.10, -0.04)
    assert ham.BLOCK_X == (0.14, 0.22) and ham.BLOCK_Y == (0.06, 0.13) and ham.BLOCK_YAW_RAD == 0.5
    assert ham.LIFT_M == 0.040 and ham.XY_TOL_M == 0.020


def test_layouts_stay_inside_the_paper_ranges_and_use_both_bells():
    ids = set()
    for seed in range(300):
        task = ClickBellRight()
        (spec, p, _) = _layout(task, seed)["bell"]
        assert task.X[0] <= p[0] <= task.X[1] and task.Y[0] <= p[1] <= task.Y[1]
        ids.add(task.model_id)
        added = _layout(BeatBlockHammerRight(), seed)
        h, b = added["hammer"][1], added["block"][1]
        q = added["block"][2]
        assert 0.02 <= h[0] <= 0.06 and -0.10 <= h[1] <= -0.04
        assert 0.14 <= b[0] <= 0.22 and 0.06 <= b[1] <= 0.13 and abs(2 * np.arctan2(q[3], q[0])) <= 0.5
    assert ids == {0, 1}


# -- (b) near misses -----------------------------------------------------------------------


def test_bell_press_tolerances_per_axis():
    task, fp = ClickBellRight(), np.array([0.2, -0.1, 0.81])
    for axis, tol in ((0, task.XY_TOL_M), (1, task.XY_TOL_M), (2, task.Z_TOL_M)):
        for sign in (1, -1):
            inside, outside = fp.copy(), fp.copy()
            inside[axis] += sign * (tol - 0.0005)
            outside[axis] += sign * (tol + 0.0005)
            assert task.near_functional_point([inside], fp)
            assert not task.near_functional_point([outside], fp)
            assert task.near_functional_point([outside, inside], fp)  # "some contact point"
    assert not task.near_functional_point([], fp)


def test_bell_press_needs_the_closed_gripper_and_the_top(physics_env):
    """Same physical contact on the knob, open vs closed gripper; a closed press on the dome's
    flank is a touch, not a press."""
    env = physics_env
    env.reset("click_bell_right", seeds.eval_seeds("click_bell_right")[0])
    s, task = env.privileged(), env.task
    fp = task.functional_point(s)
    # open gripper, offset along the closing axis so one fingertip lands on the knob
    _run(env, expert.to_topdown(s, "right"))
    ry = s.gripper_rotation("right")[:, 1]
    off = 0.052 * np.sign(ry[0]) * np.array([1.0, 0.0, 0.0])
    _run(env, expert.move_gc(s, "right", (fp[0] - off[0], fp[1], fp[2] + 0.05), axes="zxy"))
    _run(env, expert.move_gc(s, "right", (fp[0] - off[0], fp[1], fp[2] + FINGERTIP_BELOW_GC - 0.003), axes="z"))
    points = s.contact_points("bell", "right")
    assert points and task.near_functional_point(points, task.functional_point(s))
    assert not s.closed("right") and not env.success and env.checkpoints()["touched"]
    env.world.arms["right"].closed = True  # the commanded state is all the predicate reads
    task.update(s)
    assert task.success(s)

    env.reset("click_bell_right", seeds.eval_seeds("click_bell_right")[0])
    s, task = env.privileged(), env.task
    fp = task.functional_point(s)
    _run(env, [*expert.to_topdown(s, "right"), {"action": "gripper.close"}])
    _run(env, expert.move_gc(s, "right", (fp[0], fp[1] - 0.045, fp[2] + 0.02), axes="zxy"))
    for _ in range(16):  # down in 5 mm steps until a finger meets the dome
        if s.touching("bell", "right"):
            break
        _run(env, [{"action": "gripper.move_world", "axis": "z", "sign": "-", "distance_mm": 5}])
    assert env.checkpoints()["touched"] and not env.success
    assert not task.near_functional_point(s.contact_points("bell", "right"), task.functional_point(s))


def test_bell_press_latches(physics_env):
    env = physics_env
    env.reset("click_bell_right", seeds.eval_seeds("click_bell_right")[1])
    r = _expert(env)
    assert r.success and r.done
    s = env.privileged()
    env.world.arms["right"].closed = False  # as if the gripper opened again afterwards
    env.task.update(s)
    assert env.task.success(s)


def _pose_hammer_on_block(env, dx=0.0, dy=0.0, gap=0.0005):
    """Hammer face-down with its face centre at the block's top centre + (dx, dy, gap), then one
    physics step so contacts are current (the hammer has no time to fall)."""
    s, task = env.privileged(), env.task
    target = task.block_point(s) + np.array([dx, dy, gap])
    rot = axis_angle([1, 0, 0], np.pi / 2)  # local -y (out of the face) -> world -z
    teleport(env, "hammer", target - rot @ HAMMER_FACE, rot)
    env.world.step()
    return s, task


def test_hammer_strike_tolerances_through_privileged_state(physics_env):
    env = physics_env
    env.reset("beat_block_hammer_right", seeds.eval_seeds("beat_block_hammer_right")[0])
    s, task = env.privileged(), env.task
    s.flags["lifted"] = True
    env.world.arms["right"].closed = True
    tol = task.XY_TOL_M
    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        s, _ = _pose_hammer_on_block(env, dx * (tol - 0.001), dy * (tol - 0.001))
        assert s.touching("hammer", "block") and task.success(s), (dx, dy)
        s, _ = _pose_hammer_on_block(env, dx * (tol + 0.001), dy * (tol + 0.001))
        assert s.touching("hammer", "block") and not task.success(s), (dx, dy)
    s, _ = _pose_hammer_on_block(env)
    assert task.success(s)
    s, _ = _pose_hammer_on_block(env, gap=0.006)  # right place, no contact
    assert not s.touching("hammer", "block") and not task.success(s)
    s, _ = _pose_hammer_on_block(env)
    env.world.arms["right"].closed = False
    assert not task.success(s)
    env.world.arms["right"].closed = True
    s.flags["lifted"] = False
    assert not task.success(s)


def test_hammer_lift_latch_needs_the_grasp_and_40_mm(physics_env):
    env = physics_env
    env.reset("beat_block_hammer_right", seeds.eval_seeds("beat_block_hammer_right")[0])
    s, task = env.privileged(), env.task
    # raised 50 mm by hand, untouched: no latch
    teleport(env, "hammer", s.position("hammer") + [0.0, 0.0, 0.05], steps=1)
    task.update(s)
    assert s.lift("hammer") > task.LIFT_M and not s.flags.get("lifted", False)

    env.reset("beat_block_hammer_right", seeds.eval_seeds("beat_block_hammer_right")[0])
    s, task = env.privileged(), env.task
    actions = env.expert()
    for a in actions:
        _run(env, [a])
        if a["action"] == "gripper.close":
            break
    assert env.checkpoints()["grasped"]
    _run(env, [{"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 36}])
    assert s.lift("hammer") < task.LIFT_M and not env.checkpoints()["lifted"]
    _run(env, [{"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 8}])
    assert s.lift("hammer") > task.LIFT_M and env.checkpoints()["lifted"]


# -- (c) the expert on the manifest seeds --------------------------------------------------


@pytest.mark.parametrize("task", FAMILIES)
def test_expert_succeeds_on_the_first_manifest_seeds(physics_env, task):
    env = physics_env
    for seed in seeds.eval_seeds(task)[:2]:
        env.reset(task, seed)
        r = _expert(env)
        assert r.success and r.done and r.step <= env.task.budget // 2, (task, seed, r.step)
        assert all(env.checkpoints().values()), (task, seed, env.checkpoints())
        s = env.privileged()
        if task == "click_bell_right":  # pressed on the knob; the heavy bell stays put
            fp = env.task.functional_point(s)
            pts = np.array(s.contact_points("bell", "right"))
            knob_r = BELL_MODELS[env.task.model_id].scale * BELL_MODELS[0].KNOB_R
            assert len(pts) and np.all(np.hypot(*(pts[:, :2] - fp[:2]).T) < knob_r + 0.001)
            assert s.displacement("bell") < 0.002
        else:  # struck face-down, still held
            assert s.held("hammer", "right") and s.peak_lift("hammer") > 0.1


# -- (d) physics the tasks rely on ---------------------------------------------------------


def test_bodies_rest_flat_and_still(physics_env):
    env = physics_env
    env.reset("click_bell_right", seeds.eval_seeds("click_bell_right")[0])
    s = env.privileged()
    # a dome sunk into the table would push the bell up: it rests on its base
    assert abs(s.position("bell")[2] - TABLE_TOP_Z) < 0.0015 and env.stability.max_drift_deg < 0.5
    assert s.matrix("bell")[2, 2] > 0.9999
    env.reset("beat_block_hammer_right", seeds.eval_seeds("beat_block_hammer_right")[0])
    s = env.privileged()
    assert abs(s.position("hammer")[2] - TABLE_TOP_Z - HAMMER_HALF_THICKNESS) < 0.0015
    assert s.matrix("hammer")[2, 2] > 0.9995 and env.stability.max_drift_deg < 0.5  # lies flat, no roll
    assert not env.world.bodies["hammer"].static and env.world.bodies["block"].static


def test_bell_is_dynamic_so_it_can_be_pressed():
    """A static body is a planner obstacle (the executor refuses moves into it)."""
    from vabench.envs.objects.tools import bell

    for i, m in enumerate(BELL_MODELS):
        spec = bell("bell", i)
        assert not spec.static and spec.mass >= 0.2
        assert m.height == pytest.approx(0.068 * m.scale, abs=0.002)  # RoboTwin's 0.0676 / 0.053


def test_hammer_grasp_is_near_its_centre_of_mass():
    com = centre_of_mass(hammer())
    assert abs(BeatBlockHammerRight.GRASP_X - com[0]) < 0.05 and abs(com[1]) < 0.005
