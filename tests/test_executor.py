"""The fixed executor: metric accuracy, clamping, failure reasons, gripper state, dual arms."""

import numpy as np
import pytest

from vabench.envs.sim.executor import WORKSPACE_HI, WORKSPACE_LO
from vabench.envs.sim.geometry import AXES, angle_between_deg, axis_angle

from .conftest import scene_digest
from .probes import DualProbe

SEED = 1000


def move(axis, sign, mm, **kw):
    return {"action": "gripper.move_world", "axis": axis, "sign": sign, "distance_mm": mm, **kw}


def rot(axis, sign, deg, **kw):
    return {"action": "gripper.rotate_local", "axis": axis, "sign": sign, "angle_deg": deg, **kw}


def gc(env, arm="right"):
    return env.world.arms[arm].gc()


def topdown(env):
    r = env.step(rot("ry", "+", 90))
    assert r.planner_success, r.feedback
    return r


@pytest.fixture
def env(physics_env):
    physics_env.reset("grasp_single_cube", SEED)
    return physics_env


def test_home_pose_points_forward_palm_up(env):
    p = env.step({"action": "camera.view_topdown"}).observation.proprio["right"]
    assert np.allclose(p.rx, [0, 1, 0], atol=0.01) and np.allclose(p.rz, [0, 0, 1], atol=0.01)
    assert np.allclose(p.gc, [0.30, -0.20, 1.06], atol=0.01)
    assert not p.gripper_closed


def test_world_moves_land_gc_within_3mm_of_target(env):
    sequence = [("z", "+", 40), ("x", "-", 35)]  # from home, horizontal
    for a in sequence:
        before = gc(env)
        r = env.step(move(*a))
        target = before + (1 if a[1] == "+" else -1) * a[2] / 1000 * AXES[a[0]]
        assert r.planner_success, r.feedback
        assert np.linalg.norm(gc(env) - target) < 0.003
    topdown(env)
    for a in [
        ("z", "-", 100),
        ("z", "-", 100),
        ("x", "-", 60),
        ("y", "+", 100),
        ("z", "-", 37),
        ("x", "+", 12),
        ("y", "-", 1),
    ]:
        before = gc(env)
        r = env.step(move(*a))
        target = before + (1 if a[1] == "+" else -1) * a[2] / 1000 * AXES[a[0]]
        assert r.planner_success and r.feedback.startswith("executed"), r.feedback
        assert np.linalg.norm(gc(env) - target) < 0.003, (a, gc(env), target)


@pytest.mark.parametrize(
    "axis,sign,deg", [("rx", "+", 45), ("rx", "-", 30), ("rz", "+", 20), ("ry", "-", 25), ("rz", "-", 7)]
)
def test_rotations_keep_gc_fixed_and_reach_the_angle(env, axis, sign, deg):
    topdown(env)
    env.step(move("z", "-", 100))
    before_gc = gc(env)
    before = env.world.arms["right"].gripper_rotation()
    i = {"rx": 0, "ry": 1, "rz": 2}[axis]
    expected = axis_angle(before[:, i], np.radians(deg if sign == "+" else -deg)) @ before
    r = env.step(rot(axis, sign, deg))
    assert r.planner_success, r.feedback
    assert np.linalg.norm(gc(env) - before_gc) < 0.003
    assert angle_between_deg(env.world.arms["right"].gripper_rotation(), expected) < 1.0


def test_clamp_is_reported_and_the_move_stops_at_the_limit(env):
    for _ in range(2):
        assert env.step(move("z", "+", 100)).planner_success
    before = gc(env)
    r = env.step(move("z", "+", 100))
    assert "clamped to the workspace (z <= 1.35 m)" in r.feedback, r.feedback
    assert f"{(1.35 - before[2]) * 1000:.1f} of the 100 mm" in r.feedback
    assert abs(gc(env)[2] - WORKSPACE_HI[2]) < 0.003
    r = env.step(move("z", "+", 20))
    assert r.feedback.startswith("not moved") and "already at the workspace limit" in r.feedback


def test_out_of_reach_is_reported_and_nothing_moves(env):
    topdown(env)
    feedback = ""
    for _ in range(9):  # the right arm cannot reach the far left end of the table
        snapshot = scene_digest(env)
        r = env.step(move("x", "-", 100))
        if not r.planner_success:
            feedback = r.feedback
            break
    assert "out of the arm's reach" in feedback or "joint limits" in feedback, feedback
    after = scene_digest(env)
    assert all(np.array_equal(snapshot[k], after[k]) for k in snapshot)


def test_collision_with_the_table_is_reported(env):
    topdown(env)
    for a in [("x", "-", 100), ("y", "+", 100), ("y", "+", 100), ("z", "-", 100), ("z", "-", 100), ("z", "-", 100)]:
        assert env.step(move(*a)).planner_success
    assert gc(env)[2] < 0.80
    q = env.world.arms["right"].qpos.copy()
    r = env.step(move("z", "-", 100))  # clamped to z = 0.74: the finger pads would sink into the table
    assert not r.planner_success
    assert "the table" in r.feedback and "clamped" in r.feedback, r.feedback
    assert np.array_equal(q, env.world.arms["right"].qpos)


def test_rejected_rotation_leaves_state_bitwise_unchanged(env):
    topdown(env)
    for a in [("x", "+", 100), ("x", "+", 100), ("z", "-", 100)]:
        env.step(move(*a))
    arm = env.world.arms["right"]
    grip = arm.gripper_rotation()
    hand = arm.hand_matrix()[:3, 3]
    # choose the sign whose first 10-degree waypoint swings the hand towards +x
    sign = "+" if (axis_angle(grip[:, 2], np.radians(10)) @ (hand - gc(env)))[0] > 0 else "-"
    snapshot = scene_digest(env)
    r = env.step(rot("rz", sign, 90))
    assert "outside the workspace" in r.feedback and not r.planner_success
    after = scene_digest(env)
    assert all(np.array_equal(snapshot[k], after[k]) for k in snapshot)


def test_gripper_reports_commanded_state_even_when_blocked(env):
    s = env.privileged()
    for a in env.task.expert(s):
        r = env.step(a)
        if a["action"] == "gripper.close":
            break
    assert r.observation.proprio["right"].gripper_closed
    assert 0.045 < s.jaw_width("right") < 0.052  # the 5 cm cube holds the fingers apart
    assert s.held("cube", "right")


def test_invalid_action_counts_as_a_step_and_changes_nothing(env):
    snapshot = scene_digest(env)
    r = env.step(move("x", "+", 500))
    assert not r.action_valid and not r.planner_success and r.step == 1 and r.budget_left == 49
    assert "outside the allowed range" in r.feedback
    after = scene_digest(env)
    assert all(np.array_equal(snapshot[k], after[k]) for k in snapshot)


def test_dual_move_is_all_or_nothing(physics_env):
    env = physics_env
    env.reset(DualProbe(), 0)
    for arm in ("left", "right"):
        assert env.step(rot("ry", "+", 90, arm=arm)).planner_success
        for _ in range(2):
            assert env.step(move("z", "-", 100, arm=arm)).planner_success
        assert env.step(move("z", "-", 70, arm=arm)).planner_success
    starts = {a: gc(env, a) for a in ("left", "right")}
    snapshot = scene_digest(env)
    r = env.step(
        {
            "action": "dual_gripper.move_world",
            "left": {"axis": "z", "sign": "-", "distance_mm": 100},
            "right": {"axis": "z", "sign": "+", "distance_mm": 50},
        }
    )
    assert not r.planner_success
    assert (
        "for the left arm the straight path collides with the table" in r.feedback and "neither arm moved" in r.feedback
    )
    after = scene_digest(env)
    assert all(np.array_equal(snapshot[k], after[k]) for k in snapshot)
    r = env.step(
        {
            "action": "dual_gripper.move_world",
            "left": {"axis": "z", "sign": "+", "distance_mm": 50},
            "right": {"axis": "y", "sign": "+", "distance_mm": 40},
        }
    )
    assert r.planner_success, r.feedback
    assert np.linalg.norm(gc(env, "left") - (starts["left"] + [0, 0, 0.05])) < 0.003
    assert np.linalg.norm(gc(env, "right") - (starts["right"] + [0, 0.04, 0])) < 0.003


def test_dual_move_refuses_to_crash_the_arms_together(physics_env):
    env = physics_env
    env.reset(DualProbe(), 0)
    for arm in ("left", "right"):
        env.step(rot("ry", "+", 90, arm=arm))
        env.step(move("y", "+", 100, arm=arm))
    feedback = []
    for _ in range(4):
        r = env.step(
            {
                "action": "dual_gripper.move_world",
                "left": {"axis": "x", "sign": "+", "distance_mm": 100},
                "right": {"axis": "x", "sign": "-", "distance_mm": 100},
            }
        )
        feedback.append(r.feedback)
        if not r.planner_success:
            break
    assert any("the two arms would collide with each other" in f for f in feedback), feedback
    assert gc(env, "right")[0] - gc(env, "left")[0] > 0.05  # they never met


def test_workspace_box_matches_the_paper():
    assert np.allclose(WORKSPACE_LO, [-0.55, -0.45, 0.74]) and np.allclose(WORKSPACE_HI, [0.55, 0.35, 1.35])


def test_contact_at_the_start_may_be_left_but_not_deepened(env):
    """A gripper whose finger pads touch the table can lift off, but no straight move may push
    further in or slide along while touching: every motion must end collision-free."""
    from vabench.envs.sim.geometry import HAND_TO_GRIPPER, frame_from_axes

    planner = env.planners["right"]
    planner.sync(env.world.arms["right"].qpos, env.world.arms["left"].qpos)
    rot = frame_from_axes((0, 0, -1), (0, 1, 0)) @ HAND_TO_GRIPPER.T

    def pose(p):
        m = np.eye(4)
        m[:3, :3], m[:3, 3] = rot, p
        return m

    resting = next(
        c
        for c in planner.ik_candidates(pose((0.0, 0.0, 0.742)), env.world.arms["right"].qpos)
        if planner.collisions(c) == {"table"}
    )
    assert planner.plan_straight([pose((0.0, 0.0, 0.80))], resting).ok  # lift off
    down = planner.plan_straight([pose((0.0, 0.0, 0.735))], resting)
    assert not down.ok and down.blockers == ("table",)
    along = planner.plan_straight([pose((0.05, 0.0, 0.742))], resting)
    assert not along.ok and along.blockers == ("table",)


def test_typed_or_malformed_input_is_validated_like_any_decision(env):
    from vabench.envs.actions import MoveWorld

    for bad in (MoveWorld("left", "x", 1, 50.0), "gripper.open", None):
        r = env.step(bad)
        assert not r.action_valid and "must be a JSON object" in r.feedback
    assert env.steps == 3 and np.allclose(gc(env), [0.30, -0.20, 1.06], atol=0.005)


def test_a_detour_toppra_cannot_time_is_a_planner_failure_not_a_crash(env):
    """A learned policy's small steps found it (issue 43): after a 1 mm move that needed an RRT detour,
    the next 1.3 mm move's detour is a path toppra cannot time ("Fail to parameterize path"), which
    mplib raises. The straight path's timing already counts that as no path; the detour's must too."""
    steps = [move("y", "+", 1.6266328748315573), move("z", "+", 2.608894370496273), rot("ry", "+", 87.794090459185),
             move("z", "-", 35.32818704843521), rot("ry", "+", 2.573720506862705), move("x", "+", 1.0097481863340363),
             move("y", "+", 1.2773369962815195)]  # fmt: skip
    results = [env.step(s) for s in steps]
    assert all(r.action_valid for r in results) and env.steps == len(steps)
