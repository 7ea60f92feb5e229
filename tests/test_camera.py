"""The camera rig: the paper's camera actions, view geometry, the passive bundle, and the rule
that camera actions never change the physical state."""

import numpy as np
import pytest

from vabench.envs.actions import camera_action_names
from vabench.envs.sim.camera import (
    CAMERA_BOX_HI,
    CAMERA_BOX_LO,
    PASSIVE_ORDER,
    VIEW_OFFSETS,
    semantic_target,
    view_pose,
)

from .conftest import scene_digest
from .probes import DualProbe


def cam(env):
    return env.camera.pose.copy()


@pytest.fixture
def env(render_env):
    render_env.reset("grasp_single_cube", 1000)
    return render_env


def test_camera_actions_leave_every_pose_unchanged(env):
    before = scene_digest(env)
    steps = 0
    for name in camera_action_names(("right",)):
        r = env.step({"action": f"camera.{name}"})
        steps += 1
        assert r.action_valid and r.planner_success and r.kind == "camera"
        assert r.observation.images["active"].shape == (480, 640, 3)
    after = scene_digest(env)
    assert steps == 15 and env.steps == 15
    for key in before:
        assert np.array_equal(before[key], after[key]), key


@pytest.mark.parametrize("view", sorted(VIEW_OFFSETS))
def test_semantic_views_sit_at_the_paper_offsets_and_look_at_gc(env, view):
    env.step({"action": f"camera.view_{view}"})
    gc = env.world.arms["right"].gc()
    pose = cam(env)
    expected = np.clip(gc + np.array(VIEW_OFFSETS[view]), CAMERA_BOX_LO, CAMERA_BOX_HI)
    assert np.allclose(pose[:3, 3], expected, atol=1e-9)
    to_gc = (gc - pose[:3, 3]) / np.linalg.norm(gc - pose[:3, 3])
    assert to_gc @ pose[:3, 0] > 0.9999  # forward axis points at GC


def test_incremental_camera_actions(env):
    env.step({"action": "camera.view_oblique_45"})
    p0 = cam(env)
    env.step({"action": "camera.move_left"})
    assert np.allclose(cam(env)[:3, 3] - p0[:3, 3], 0.05 * p0[:3, 1])
    env.step({"action": "camera.zoom_in"})
    p1 = cam(env)
    assert np.allclose(p1[:3, 3] - p0[:3, 3], 0.05 * p0[:3, 1] + 0.08 * p0[:3, 0])
    env.step({"action": "camera.yaw_left"})
    f = cam(env)[:3, 0]
    ang = np.degrees(np.arctan2(f[1], f[0]) - np.arctan2(p1[1, 0], p1[0, 0]))
    assert abs(ang - 10.0) < 1e-6 and abs(f[2] - p1[2, 0]) < 1e-9  # about world z
    before = cam(env)
    env.step({"action": "camera.pitch_up"})
    after = cam(env)
    assert after[2, 0] > before[2, 0]  # looks higher
    assert np.degrees(np.arccos(np.clip(after[:3, 0] @ before[:3, 0], -1, 1))) == pytest.approx(10.0)
    assert np.allclose(after[:3, 1], before[:3, 1])  # about the camera's own left axis
    assert np.allclose(after[:3, 3], before[:3, 3])


def test_camera_position_is_clamped_to_its_box(env):
    env.step({"action": "camera.view_topdown"})
    notes = [env.step({"action": "camera.move_up"}).feedback for _ in range(12)]  # up = +y in topdown
    pose = cam(env)
    assert np.all(pose[:3, 3] <= CAMERA_BOX_HI + 1e-12) and np.all(pose[:3, 3] >= CAMERA_BOX_LO - 1e-12)
    assert any("clamped" in n for n in notes)


def test_left_arm_views_are_mirrored(render_env):
    env = render_env
    env.reset(DualProbe(), 0)
    gcs = {a: env.world.arms[a].gc() for a in ("left", "right")}

    def at(p):
        return np.clip(p, CAMERA_BOX_LO, CAMERA_BOX_HI)

    env.step({"action": "camera.view_left_oblique_45"})
    assert np.allclose(cam(env)[:3, 3], at(gcs["left"] + [-0.42, -0.42, 0.42]))
    env.step({"action": "camera.view_right_oblique_45"})
    assert np.allclose(cam(env)[:3, 3], at(gcs["right"] + [0.42, -0.42, 0.42]))
    env.step({"action": "camera.view_side"})  # generic: the midpoint, unmirrored
    assert np.allclose(cam(env)[:3, 3], at((gcs["left"] + gcs["right"]) / 2 + [0.58, -0.02, 0.06]))
    env.step({"action": "camera.view_both_topdown"})
    assert np.allclose(cam(env)[:3, 3], at((gcs["left"] + gcs["right"]) / 2 + [0, 0, 0.68]))


def test_passive_protocol_gives_five_ordered_views_and_no_camera_control(render_env):
    env = render_env
    obs = env.reset("grasp_single_cube", 1000, protocol="passive")
    assert tuple(obs.images) == PASSIVE_ORDER
    assert all(img.shape == (480, 640, 3) and img.dtype == np.uint8 for img in obs.images.values())
    assert len({img.tobytes() for img in obs.images.values()}) == 5  # five different views
    # the observer's geometry differs from the active semantic views (test_observer.py pins it down)
    gcs = {a: env.world.arms[a].gc() for a in ("left", "right")}
    for view in PASSIVE_ORDER:
        pose, _ = view_pose(*semantic_target(view, gcs, ("right",)))
        assert not np.array_equal(env.camera.render(pose), obs.images[view]), view
    r = env.step({"action": "camera.view_topdown"})
    assert not r.action_valid and "disabled in the passive" in r.feedback and r.step == 1
