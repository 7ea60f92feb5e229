"""The passive protocol's observer camera (Appendix C.7, reference notes 4.4): its own lens, poses
anchored on the control EE (not GC) and never clamped, and an absolute whole-table topdown. The
expected poses are restated here from the spec, not read from the code's constants."""

import numpy as np
import pytest

from vabench.envs.sim.camera import CAMERA_BOX_HI, CAMERA_BOX_LO, PASSIVE_ORDER, observer_pose

from .probes import DualProbe

SPEC_OFFSETS = {
    "side": (0.58, -0.02, 0.06),
    "front_side_45": (0.44, -0.44, 0.18),
    "side_top_45": (0.48, -0.02, 0.48),
    "oblique_45": (0.42, -0.42, 0.42),
}


class LeftProbe(DualProbe):
    name, arms = "left_probe", ("left",)


def spec_pose(view: str, ee: np.ndarray, s: float) -> np.ndarray:
    """The spec's camera pose, in SAPIEN's convention (columns forward, left, up)."""
    if view == "topdown":
        eye, target, up = np.array([0.0, -0.12, 1.72]), np.array([0.0, -0.08, 0.80]), np.array([0.0, -1.0, 0.0])
    else:
        eye, target, up = ee + np.array(SPEC_OFFSETS[view]) * [s, 1, 1], ee - [0, 0, 0.02], np.array([0.0, 0.0, 1.0])
    fwd = (target - eye) / np.linalg.norm(target - eye)
    left = np.cross(up, fwd) / np.linalg.norm(np.cross(up, fwd))
    m = np.eye(4)
    m[:3, :3] = np.stack([fwd, left, np.cross(fwd, left)], axis=1)
    m[:3, 3] = eye
    return m


def proprio_ees(obs) -> dict[str, np.ndarray]:
    return {arm: np.array(p.ee_position) for arm, p in obs.proprio.items()}


def test_observer_lens_is_the_papers_and_the_active_camera_keeps_its_own(render_env):
    env = render_env
    env.reset("grasp_single_cube", 1000, protocol="passive")
    with env.camera.lens("observer") as obs_cam, env.camera.lens("active") as active:
        assert obs_cam is not active
        lenses = [(c.fovy, c.near, c.far, c.width, c.height) for c in (obs_cam, active)]
    (fovy, near, far, w, h), (afovy, anear, afar, aw, ah) = lenses
    assert np.degrees(fovy) == pytest.approx(55.0, abs=1e-4)
    assert near == pytest.approx(0.05) and far == pytest.approx(100.0)
    assert (w, h) == (aw, ah) == (640, 480)
    assert np.degrees(afovy) == pytest.approx(37.0, abs=1e-4)
    assert anear == pytest.approx(0.01) and afar == pytest.approx(10.0)


@pytest.mark.parametrize(
    ("task", "side"),
    [("grasp_single_cube", 1.0), (LeftProbe(), -1.0), (DualProbe(), 1.0)],
    ids=["right", "left", "both"],
)
def test_views_sit_at_the_spec_poses_from_the_control_ee(render_env, task, side):
    env = render_env
    obs = env.reset(task, 1000 if isinstance(task, str) else 0, protocol="passive")
    assert tuple(obs.images) == PASSIVE_ORDER
    ees = proprio_ees(obs)  # the model-visible control EE, not GC
    ee = np.mean([ees[a] for a in env.controlled], axis=0)
    for view in PASSIVE_ORDER:
        pose = observer_pose(view, ees, env.controlled)
        assert np.allclose(pose, spec_pose(view, ee, side), atol=1e-9), view
        # the bundle is that pose, through the observer camera
        assert np.array_equal(obs.images[view], env.camera.render(pose, "observer")), view
    gcs = {a: env.world.arms[a].gc() for a in env.controlled}
    gc_pose = observer_pose("side", gcs, env.controlled)
    assert not np.array_equal(obs.images["side"], env.camera.render(gc_pose, "observer"))


def test_topdown_is_absolute_and_the_others_follow_the_gripper(render_env):
    env = render_env
    obs = env.reset("grasp_single_cube", 1000, protocol="passive")
    ees = proprio_ees(obs)
    elsewhere = {a: p + [0.10, 0.05, -0.12] for a, p in ees.items()}
    a = env.camera.passive_bundle(ees, env.controlled)
    b = env.camera.passive_bundle(elsewhere, env.controlled)  # same scene, another anchor
    assert np.array_equal(a["topdown"], b["topdown"]) and np.array_equal(a["topdown"], obs.images["topdown"])
    assert all(not np.array_equal(a[v], b[v]) for v in SPEC_OFFSETS)
    # a real robot action moves every view but topdown by exactly the EE's displacement
    r = env.step({"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 50.0})
    assert r.planner_success
    moved = proprio_ees(r.observation)
    delta = moved["right"] - ees["right"]
    assert delta[2] > 0.04
    top = observer_pose("topdown", moved, env.controlled)
    assert np.array_equal(top, observer_pose("topdown", ees, env.controlled))
    for view in SPEC_OFFSETS:
        before, after = observer_pose(view, ees, env.controlled), observer_pose(view, moved, env.controlled)
        assert np.allclose(after[:3, 3] - before[:3, 3], delta, atol=1e-12)


def test_observer_views_are_never_clamped(render_env):
    env = render_env
    obs = env.reset("grasp_single_cube", 1000, protocol="passive")
    ee = proprio_ees(obs)["right"]
    eye = ee + SPEC_OFFSETS["side"]
    clamped = np.clip(eye, CAMERA_BOX_LO, CAMERA_BOX_HI)
    assert not np.allclose(eye, clamped)  # the right arm's home puts the side view outside the active box
    pose = observer_pose("side", proprio_ees(obs), env.controlled)
    assert np.allclose(pose[:3, 3], eye, atol=1e-12)
    at_box = pose.copy()
    at_box[:3, 3] = clamped
    assert not np.array_equal(obs.images["side"], env.camera.render(at_box, "observer"))
