"""place_shoe (paper Table 25, row 1): the paper's numbers, RoboTwin's spawn rule (radius rejection
and the y redraw), ten jaw-compatible shoe models, arm selection by side, near misses on each
part of the predicate through privileged state, and the expert leaving the idle arm untouched."""

import numpy as np
import pytest
import sapien
from scipy.spatial.transform import Rotation

from tests.staging import RecordingWorld
from vabench.envs import seeds
from vabench.envs.objects.shoe import MAT_HALF, SHOE_MODELS, SOLE_HALF_THICKNESS, grasp_point, shoe
from vabench.envs.sim.bodies import Part
from vabench.envs.sim.geometry import angle_between_deg, axis_angle, matrix_to_quat
from vabench.envs.sim.robot import FINGER_OPEN
from vabench.envs.sim.scene import TABLE_TOP_Z, World
from vabench.envs.tasks import make_task
from vabench.envs.tasks.place_shoe import TARGET_QUAT, PlaceShoe

TARGET_ROT = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # columns: local x, y, z in world
JAW = 2 * FINGER_OPEN


def _rot(q):
    w, x, y, z = q
    return Rotation.from_quat([x, y, z, w]).as_matrix()


def _extent(parts: tuple[Part, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Axis-aligned bounds of the parts in the body frame (exact for the shoe's upright parts)."""
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for p in parts:
        half = np.array(p.size) if p.kind == "box" else np.array([p.size[0], p.size[0], p.size[1]])
        corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * half
        pts = corners @ _rot(p.q).T + np.array(p.p)
        lo, hi = np.minimum(lo, pts.min(0)), np.maximum(hi, pts.max(0))
    return lo, hi


# -- (a) the paper's numbers ---------------------------------------------------------------------
def test_paper_parameters():
    t = make_task("place_shoe")
    assert t.arms == ("left", "right") and t.budget == 100
    assert t.X == (-0.25, 0.25) and t.Y == (-0.10, 0.05) and t.MIN_RADIUS == 0.15
    assert t.NEAR_CENTRE_X == 0.15 and t.Y_NEAR_CENTRE == (-0.10, 0.0) and t.YAW_RAD == np.pi
    assert t.MAT_XY == (0.0, -0.08) and MAT_HALF == (0.13, 0.05, 0.0005)
    assert t.X_TOL_M == 0.05 and t.Y_TOL_M == 0.02 and t.QUAT_TOL == 0.07
    assert np.allclose(TARGET_QUAT, (0.5, 0.5, -0.5, -0.5)) and len(SHOE_MODELS) == 10
    assert t.labels == {"mat": "the blue mat"}


def test_target_quaternion_is_the_shoe_flat_with_the_toe_toward_minus_x():
    rot = _rot(TARGET_QUAT)
    assert np.allclose(rot, TARGET_ROT, atol=1e-9)
    assert np.allclose(rot[:, 1], (0, 0, 1)) and np.allclose(rot[:, 2], (-1, 0, 0))  # up; toe to -x
    assert np.allclose(matrix_to_quat(TARGET_ROT), TARGET_QUAT)  # w = 0.5: no sign flip near it


# -- (b) the layout ------------------------------------------------------------------------------
def test_layouts_follow_robotwins_spawn_rule_and_pick_the_arm_by_side():
    xs, ys, yaws, ids = [], [], [], set()
    for seed in range(600):
        task = PlaceShoe()
        added = RecordingWorld()
        task.build(added, np.random.default_rng(seed))
        (_, p, q), (mat_spec, mp, mq) = added.added["shoe"], added.added["mat"]
        x, y = p[:2]
        assert -0.25 <= x <= 0.25 and -0.10 <= y <= 0.05
        assert x * x + y * y >= 0.15**2  # radius rejection
        assert not (abs(x) < 0.15 and y > 0)  # the y redraw near the centre line
        assert task.arm == ("left" if x < 0 else "right")
        rot = _rot(q)
        assert np.allclose(rot[:, 1], (0, 0, 1), atol=1e-9)  # lying flat: local y up
        assert p[2] == pytest.approx(TABLE_TOP_Z + 0.001 + SOLE_HALF_THICKNESS)
        assert mat_spec.static and np.allclose(mp, (0.0, -0.08, TABLE_TOP_Z + 0.0005)) and np.allclose(mq, (1, 0, 0, 0))
        xs.append(x)
        ys.append(y)
        yaws.append(np.arctan2(rot[1, 2], rot[0, 2]))
        ids.add(task.model_id)
    xs, ys = np.array(xs), np.array(ys)
    assert ids == set(range(10))
    assert (xs < 0).any() and (xs > 0).any() and (ys > 0).any() and (ys < -0.09).any()
    assert np.min(np.abs(xs)) < 0.13  # near the centre line only with y far enough back
    assert np.ptp(yaws) > 6.0  # yaw over the whole +-pi


class _ScriptedRng:
    def __init__(self, values):
        self.values = list(values)

    def uniform(self, lo, hi):
        v = self.values.pop(0)
        assert lo <= v <= hi
        return v


def test_spawn_draw_redraws_y_near_the_centre_and_rejects_the_inner_disc():
    t = PlaceShoe()
    rng = _ScriptedRng([0.05, 0.03, -0.02, 0.20, 0.04])  # y redrawn to -0.02, then r < 0.15: redraw both
    assert t.spawn_xy(rng) == (0.20, 0.04) and not rng.values  # |x| >= 0.15 keeps y > 0
    rng = _ScriptedRng([-0.12, 0.01, -0.095])  # redrawn y, and r = 0.153 >= 0.15: kept
    assert t.spawn_xy(rng) == (-0.12, -0.095)
    rng = _ScriptedRng([0.14, -0.05, 0.16, -0.05])  # r = 0.149: redraw
    assert t.spawn_xy(rng) == (0.16, -0.05)


# -- (c) the ten shoes -----------------------------------------------------------------------------
def test_ten_distinct_shoes_fit_the_jaw_and_share_the_frame():
    assert len(set(SHOE_MODELS)) == 10
    assert len({(m.length, m.upper_width, m.upper_height) for m in SHOE_MODELS}) == 10
    for i, m in enumerate(SHOE_MODELS):
        spec = shoe("shoe", i)
        lo, hi = _extent(spec.parts)
        assert 0.20 <= m.length <= 0.26 and hi[2] - lo[2] == pytest.approx(m.length, abs=0.005)
        assert lo[1] == pytest.approx(-SOLE_HALF_THICKNESS)  # nothing below the sole; origin 1 cm above it
        assert hi[0] - lo[0] <= m.sole_width + 1e-9 < JAW  # the widest part, the sole, still fits
        assert m.upper_width <= JAW - 0.016  # >= 8 mm each side where the jaw closes
        assert abs(lo[2] + hi[2]) < 0.005  # the origin is the sole's centre
        assert hi[2] > 0.095 and max(p.p[2] for p in spec.parts) > 0.05  # toe toward +z
        g = grasp_point(spec, i)
        front = -m.length / 2 + m.upper_fraction * m.length
        assert -m.length / 2 + 0.03 < g[2] < front - 0.02  # on the upper, a finger's width from its front
        assert g[1] == pytest.approx(SOLE_HALF_THICKNESS + m.upper_height / 2)  # mid-height
        assert hi[1] - g[1] <= 0.04  # the palm (45 mm above the grasp centre) clears the upper


def test_every_shoe_rests_flat_and_still():
    world = World(render=False)
    try:
        rot = axis_angle([1, 0, 0], np.pi / 2)
        bodies = []
        for i in range(len(SHOE_MODELS)):
            x, y = -0.5 + 0.11 * i, 0.1 * (i % 2) - 0.05
            bodies.append(
                world.add(shoe(f"shoe{i}", i), (x, y, TABLE_TOP_Z + 0.001 + SOLE_HALF_THICKNESS), matrix_to_quat(rot))
            )
        world.step(1500)
        for b in bodies:
            m = b.matrix()
            assert angle_between_deg(m[:3, :3], rot) < 0.5 and abs(m[2, 3] - TABLE_TOP_Z - SOLE_HALF_THICKNESS) < 0.0015
    finally:
        world.close()


# -- (d) near misses through privileged state ----------------------------------------------------
@pytest.fixture
def on_mat(physics_env):
    """An episode with a helper that puts the shoe on the mat at an offset and a rotation."""
    env = physics_env
    env.reset("place_shoe", seeds.eval_seeds("place_shoe")[0])
    s, t = env.privileged(), env.task

    def verdict(dx=0.0, dy=0.0, rot=TARGET_ROT):
        body = env.world.bodies["shoe"]
        mat = s.position("mat")
        p = (mat[0] + dx, mat[1] + dy, mat[2] + MAT_HALF[2] + SOLE_HALF_THICKNESS)
        body.entity.set_pose(sapien.Pose(list(p), list(matrix_to_quat(rot))))
        return t.success(s)

    return env, s, t, verdict


def test_predicate_flips_at_50_mm_in_x_and_20_mm_in_y(on_mat):
    env, s, t, verdict = on_mat
    assert verdict()
    for sign in (1, -1):
        assert verdict(dx=sign * 0.049) and not verdict(dx=sign * 0.051)
        assert verdict(dy=sign * 0.019) and not verdict(dy=sign * 0.021)


def _rotation_at_deviation(axis, dev):
    """The target turned about a world ``axis`` until its largest quaternion component is off by ``dev``."""

    def off(a):
        return np.abs(matrix_to_quat(axis_angle(axis, a) @ TARGET_ROT) - TARGET_QUAT).max()

    lo, hi = 0.0, 0.5
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if off(mid) < dev else (lo, mid)
    return axis_angle(axis, lo) @ TARGET_ROT


@pytest.mark.parametrize("axis", [(0, 0, 1), (0, 0, -1), (1, 0, 0), (0, 1, 0)])
def test_predicate_flips_at_007_on_a_quaternion_component(on_mat, axis):
    env, s, t, verdict = on_mat
    assert verdict(rot=_rotation_at_deviation(axis, t.QUAT_TOL - 0.002))
    assert not verdict(rot=_rotation_at_deviation(axis, t.QUAT_TOL + 0.002))


def test_predicate_rejects_the_toe_toward_plus_x(on_mat):
    env, s, t, verdict = on_mat
    assert not verdict(rot=axis_angle([0, 0, 1], np.pi) @ TARGET_ROT)


def test_predicate_needs_both_grippers_open(on_mat):
    env, s, t, verdict = on_mat
    for arm in ("left", "right"):
        assert verdict()
        env.world.arms[arm].closed = True  # the commanded state is what the predicate reads
        assert not verdict() and not t.conditions(s)["open"]
        env.world.arms[arm].closed = False
    assert verdict()


# -- (e) the expert: the selected arm only -------------------------------------------------------
def _first_seed_per_arm():
    out = {}
    for seed in seeds.eval_seeds("place_shoe"):
        task = PlaceShoe()
        task.build(RecordingWorld(), np.random.default_rng(seed))
        out.setdefault(task.arm, seed)
    return out


@pytest.mark.parametrize("arm", ["left", "right"])
def test_expert_uses_the_arm_on_the_shoes_side_and_never_moves_the_other(physics_env, arm):
    env = physics_env
    env.reset("place_shoe", _first_seed_per_arm()[arm])
    s, t = env.privileged(), env.task
    assert t.arm == arm and (s.position("shoe")[0] < 0) == (arm == "left")
    idle = "right" if arm == "left" else "left"
    q_idle = env.world.arms[idle].qpos.copy()
    results, used, progress = [], set(), []
    for action in env.expert():
        used.add(action.get("arm"))
        results.append(env.step(action))
        progress.append(env.checkpoints())
        if results[-1].done:
            break
    first = [min(i for i, p in enumerate(progress) if p[k]) for k in ("grasped", "lifted", "aligned", "placed")]
    assert first == sorted(first) and first[0] < first[1]  # in a grader's order
    assert all(p["grasped"] and p["lifted"] for p in progress[first[1] :])  # latched
    assert all(r.action_valid and r.planner_success for r in results)
    assert results[-1].success and results[-1].step <= t.budget // 2
    assert all(env.checkpoints().values()), env.checkpoints()
    assert used == {arm}
    assert np.abs(env.world.arms[idle].qpos - q_idle).max() < 1e-6  # the idle arm, fingers included, untouched
    assert not s.closed(idle) and s.jaw_width(idle) > JAW - 0.001
    d = s.position("shoe")[:2] - s.position("mat")[:2]
    assert abs(d[0]) < 0.01 and abs(d[1]) < 0.01 and s.touching("shoe", "mat")
    assert np.abs(matrix_to_quat(s.matrix("shoe")[:3, :3]) - TARGET_QUAT).max() < 0.04
