"""Recording views, evaluator state and episode videos (issue 14; paper D.4): rendered after reset
and after every action, stored apart from the model's frames, never in a model request."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from PIL import Image

from vabench.agents.chat.model import ModelConfig
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.kinds import make_model
from vabench.envs import EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.sim import overlay
from vabench.results.media import VIDEO_NAME, demo_video, video_info, write_video
from vabench.results.records import read_events
from vabench.run.config.sections import ConfigError, build


@pytest.fixture(scope="module")
def episode(render_env, tmp_path_factory):
    """One oracle episode with recording views on (the default)."""
    out = tmp_path_factory.mktemp("rec")
    row = run_episode(
        render_env, make_model(ModelConfig(id="oracle")), Episode.of("grasp_single_cube", 1000, env=render_env), out
    )
    return row, out, read_events(out / "events.jsonl")


def test_a_recording_view_follows_every_step_and_never_reaches_the_model(episode):
    row, out, events = episode
    assert row.success
    states = [e for e in events if e["type"] == "state"]
    assert [s["step"] for s in states] == list(range(row.steps + 1))  # reset, then one per action
    for s in states:
        path = out / s["recording"]
        assert path.parent.name == "recording" and path.is_file()
        with Image.open(path) as im:
            assert im.size == (320, 240)  # the small default size
    sent = {img for e in events if e["type"] in ("request", "turn") for img in e.get("images", [])}
    assert sent and all(p.startswith("frames/") for p in sent)  # model images only, never recording/
    requests = " ".join(json.dumps(e) for e in events if e["type"] == "request")
    assert "recording" not in requests


def test_the_evaluator_state_holds_what_proxies_need(episode):
    row, _, events = episode
    states = [e for e in events if e["type"] == "state"]
    first, last = states[0], states[-1]
    assert first["objects"]["cube"]["lift"] == 0.0 and not first["objects"]["cube"]["static"]
    assert first["arms"]["right"]["closed"] is False and first["arms"]["right"]["touching"] == []
    assert last["objects"]["cube"]["lift"] >= 0.05  # the oracle lifted it (the task's 50 mm)
    assert last["arms"]["right"]["closed"] is True and last["arms"]["right"]["touching"] == ["cube"]
    gc = np.array(last["arms"]["right"]["gc"])
    assert np.linalg.norm(gc - np.array(last["objects"]["cube"]["p"])) < 0.03  # held between the fingers


def test_the_state_holds_every_arms_joints_and_the_pose_the_model_is_told(episode):
    """Both arms' joint positions, end-effector pose, GC and gripper command, which datasets
    exported from records need (vabench.export; the model is told the pose, never the joints)."""
    _, _, events = episode
    states = [e for e in events if e["type"] == "state"]
    first, last = states[0]["robot"], states[-1]["robot"]
    assert set(first) == {"left", "right"} and len(first["right"]["qpos"]) == 9  # 7 joints, then 2 fingers
    assert first["left"] == last["left"]  # the parked arm holds still
    assert last["right"]["closed"] and last["right"]["gc"] == states[-1]["arms"]["right"]["gc"]
    told = next(e["text"] for e in events if e["type"] == "turn" and e["kind"] == "observation")
    ee = re.search(r"end-effector \[([^\]]+)\]", told).group(1)
    assert [float(v) for v in ee.split(",")] == pytest.approx(first["right"]["ee_p"], abs=1e-4)


def test_the_episode_video_has_one_frame_per_recording_view(episode):
    row, out, _ = episode
    info = video_info(out / VIDEO_NAME)
    assert info["frames"] == row.steps + 1
    assert info["size"] == (320, 240) and info["codec"] == "h264"
    assert info["fps"] == pytest.approx(RecordingConfig().fps)


def test_the_overlay_marks_the_gripper_where_the_camera_sees_it():
    eye = np.eye(4)  # at the origin looking along +x (SAPIEN: forward, left, up)
    w, h, fovy = 320, 240, np.deg2rad(55)
    centre, left, up, behind = project = overlay.project(
        np.array([[1, 0, 0], [1, 0.2, 0], [1, 0, 0.2], [-1, 0, 0]]), eye, fovy, w, h
    )
    assert centre == pytest.approx([160, 120])
    assert left[0] < 160 and left[1] == pytest.approx(120)  # world left is image left
    assert up[1] < 120  # up is towards the top row
    assert np.isnan(behind).all() and len(project) == 4
    f = 120 / np.tan(fovy / 2)
    assert left[0] == pytest.approx(160 - f * 0.2)
    image = overlay.draw(np.zeros((h, w, 3), np.uint8), eye, fovy, {"right": {"gc": [1, 0, 0], "ee": [1, 0, 0.1],
                                                                           "rotation": np.eye(3)}})  # fmt: skip
    assert tuple(image[120, 160]) == overlay.GC_COLOUR
    assert not image[:14].any()  # no caption asked for, no caption drawn


def test_recording_off_means_no_views_and_no_video(tmp_path):
    env = VABenchEnv(EnvConfig(recording=RecordingConfig(enabled=False)))
    try:
        row = run_episode(
            env, make_model(ModelConfig(id="oracle")), Episode.of("grasp_single_cube", 1000, env=env), tmp_path
        )
    finally:
        env.close()
    states = [e for e in read_events(tmp_path / "events.jsonl") if e["type"] == "state"]
    assert len(states) == row.steps + 1 and all(s["recording"] is None for s in states)
    assert "objects" in states[-1]  # the evaluator state is kept either way
    assert not (tmp_path / "recording").exists() and not (tmp_path / VIDEO_NAME).exists()


@pytest.mark.parametrize(
    "raw, named",
    [
        ({"width": 321}, "even"),
        ({"fps": 0}, "recording.fps"),
        ({"fps": "fast"}, "recording.fps"),
        ({"enabled": "yes"}, "recording.enabled"),
        ({"size": 3}, "recording.size"),
    ],
)
def test_recording_config_errors_name_the_key(raw, named):
    with pytest.raises(ConfigError, match=named):
        build(RecordingConfig, raw, "recording")


def test_a_demo_video_has_every_demo_frame_at_the_demo_rate(demo_root, tmp_path):
    folder = demo_root / "paper" / "grasp_single_cube"
    info = video_info(demo_video(folder))
    assert info["frames"] == 6 and info["fps"] == pytest.approx(3.0, abs=0.01) and info["size"] == (64, 48)
    with pytest.raises(ValueError, match="no frames"):
        write_video([], tmp_path / "empty.mp4", 2.0)
    assert not list(tmp_path.glob("*.mp4"))  # a failed write leaves nothing half-made
