"""``python -m vabench.export lerobot``: a LeRobot dataset v3.0 of a run's episodes or of the
demonstrations (issue 42). The default suite checks the layout, info.json, the tables, the values
against the records and the videos with the project's own tools, on one small oracle run (two
active episodes) and one passive episode, and opens the exports with LeRobot's own loader in a
separate venv (tests/lerobot_venv.py, built when missing) and runs lerobot-doctor on them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from PIL import Image

from tests.test_verify import run_folder
from vabench.core.vocab import EndReason, StepKind
from vabench.envs.sim.camera import PASSIVE_ORDER
from vabench.export.__main__ import export, main
from vabench.export.clips import Clip, ExportError, columns
from vabench.export.features import ACTION_KINDS, ARMS, CAMERA_ACTIONS, Layout, action_names, state_names
from vabench.export.lerobot import layout_of
from vabench.results.media import read_video, video_info
from vabench.results.recordfile import read_events

TASKS = ("grasp_single_cube", "click_bell_right")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="module")
def run(results) -> Path:
    """The oracle on two tasks x 1 seed, active, small images."""
    return run_folder(results, "a", f"[{','.join(TASKS)}]")


@pytest.fixture(scope="module")
def dataset(run, results) -> Path:
    export(run, results / "ds", "vabench/test", progress=False)
    return results / "ds"


def info_of(ds: Path) -> dict:
    return json.loads((ds / "meta" / "info.json").read_text())


def frames_of(ds: Path) -> pd.DataFrame:
    return pd.concat(pd.read_parquet(p) for p in sorted((ds / "data").rglob("*.parquet")))


def episodes_of(ds: Path) -> pd.DataFrame:
    return pd.read_parquet(ds / "meta" / "episodes" / "chunk-000" / "file-000.parquet")


def records_of(run: Path, ds: Path) -> list[list[dict]]:
    return [read_events(run / r) for r in episodes_of(ds)["record"]]


def test_the_layout_and_info_json_are_lerobot_v3(dataset):
    for rel in ("meta/info.json", "meta/stats.json", "meta/tasks.parquet", "meta/episodes/chunk-000/file-000.parquet"):
        assert (dataset / rel).is_file(), rel
    assert (dataset / "data/chunk-000/file-000.parquet").is_file()
    assert (dataset / "videos/observation.images.active/chunk-000/file-000.mp4").is_file()
    info = info_of(dataset)
    assert info["codebase_version"] == "v3.0" and info["fps"] == 2 and info["robot_type"] == "panda"
    assert (info["total_episodes"], info["total_tasks"]) == (2, 2)
    assert info["total_frames"] == len(frames_of(dataset))
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    for key, f in info["features"].items():
        counted = len(f["shape"]) if f["dtype"] == "video" else f["shape"][0]
        assert f["names"] is None or len(f["names"]) == counted, key
    video = info["features"]["observation.images.active"]
    assert video["dtype"] == "video" and video["shape"] == [240, 320, 3]
    assert video["info"]["video.codec"] == "h264" and video["info"]["video.fps"] == 2
    assert info["features"]["observation.state"]["names"] == list(state_names(7))
    assert info["features"]["action"]["names"] == list(action_names())
    assert info["vabench"]["complementary_info.action_kind"] == [str(k) for k in ACTION_KINDS]
    tasks = pd.read_parquet(dataset / "meta" / "tasks.parquet")
    assert list(tasks["task_index"]) == [0, 1]
    assert list(tasks.index) == [t[0] for t in episodes_of(dataset)["tasks"]]  # each task string once, in order


def test_the_frame_table_has_the_layouts_schema_and_lerobots_indices(dataset):
    info = info_of(dataset)
    schema = pq.read_schema(next((dataset / "data").rglob("*.parquet")))
    views = (("active", (240, 320)),)
    assert schema.remove_metadata() == Layout(views, 7, 2, "panda").data_schema()
    df = frames_of(dataset)
    assert list(df["index"]) == list(range(info["total_frames"]))
    for _, ep in df.groupby("episode_index"):
        assert list(ep["frame_index"]) == list(range(len(ep)))
        assert np.allclose(ep["timestamp"], ep["frame_index"] / 2)
        assert ep["next.done"].tolist() == [False] * (len(ep) - 1) + [True]


def test_every_frame_holds_what_its_record_holds(run, dataset):
    df, episodes = frames_of(dataset), episodes_of(dataset)
    names = {n: i for i, n in enumerate(action_names())}
    states = {n: i for i, n in enumerate(state_names(7))}
    for (_, ep), events in zip(episodes.iterrows(), records_of(run, dataset), strict=True):
        frames = df[df["episode_index"] == ep["episode_index"]]
        state_events = [e for e in events if e["type"] == "state"]
        actions = {e["step"]: e for e in events if e["type"] == "action"}
        assert len(frames) == ep["steps"] == len(actions)  # one frame per decision; the model never saw the last state
        for t, (_, f) in enumerate(frames.iterrows()):
            arm = state_events[t]["arms"]["right"]
            assert f["observation.state"][states["right.gc_x"] : states["right.gc_z"] + 1] == pytest.approx(arm["gc"])
            assert f["observation.state"][states["right.gripper_closed"]] == float(arm["closed"])
            payload = actions[t + 1]["payload"]
            if payload["action"] == "gripper.move_world":
                sign = 1 if payload["sign"] == "+" else -1
                component = f["action"][names[f"right.move_{payload['axis']}_mm"]]
                assert component == pytest.approx(sign * payload["distance_mm"])
                assert np.count_nonzero(f["action"][:-1]) == 1  # one axis moved (the gripper command aside)
            closed_after = state_events[t + 1]["arms"]["right"]["closed"]
            assert f["action"][names["right.gripper_closed"]] == float(closed_after)
            assert ACTION_KINDS[f["complementary_info.action_kind"]] == actions[t + 1]["kind"]
        assert frames["next.success"].tolist() == [False] * (len(frames) - 1) + [bool(ep["success"])]


def test_each_episode_joins_back_to_its_outcome_row(run, dataset):
    for _, ep in episodes_of(dataset).iterrows():
        row = pd.read_parquet(run / "outcomes" / f"{ep['outcome_key']}.parquet").iloc[0]
        assert row["record"] == ep["record"]
        for column in ("success", "condition", "model", "seed", "task", "attempt", "run_id"):
            assert row[column] == ep[column], column


def test_the_videos_hold_every_frame_the_model_saw(run, dataset):
    info, episodes = info_of(dataset), episodes_of(dataset)
    path = dataset / "videos/observation.images.active/chunk-000/file-000.mp4"
    assert video_info(path)["frames"] == info["total_frames"]
    assert list(episodes["videos/observation.images.active/from_timestamp"]) == [0.0, episodes["length"][0] / 2]
    decoded = read_video(path)
    sources = [p for r in episodes["record"] for p in sorted((run / r).parent.glob("frames/step_*_active.jpg"))]
    assert len(sources) == len(decoded)
    for i in (0, len(sources) // 2, len(sources) - 1):
        source = np.asarray(Image.open(sources[i]).convert("RGB"), dtype=float)
        assert np.abs(decoded[i].astype(float) - source).mean() < 6  # H.264 of the same picture


def test_the_statistics_cover_every_feature_as_lerobot_keeps_them(dataset):
    info, stats = info_of(dataset), json.loads((dataset / "meta" / "stats.json").read_text())
    assert set(stats) == set(info["features"])
    for key, s in stats.items():
        assert set(s) == {"min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99"}, key
    image = stats["observation.images.active"]
    assert np.asarray(image["mean"]).shape == (3, 1, 1) and 0 <= np.min(image["min"]) <= np.max(image["max"]) <= 1
    assert stats["action"]["count"] == [info["total_frames"]] and len(stats["action"]["mean"]) == len(action_names())
    episodes = episodes_of(dataset)
    assert list(episodes["stats/action/count"].map(list)) == [[n] for n in episodes["length"]]


def test_a_passive_episode_has_one_video_per_view(results):
    run = run_folder(results, "passive", "[grasp_single_cube]", "protocol=passive")
    export(run, results / "ds_passive", progress=False)
    info = info_of(results / "ds_passive")
    cameras = [k for k, f in info["features"].items() if f["dtype"] == "video"]
    assert sorted(cameras) == sorted(f"observation.images.{v}" for v in PASSIVE_ORDER)
    for key in cameras:
        video = results / "ds_passive" / "videos" / key / "chunk-000" / "file-000.mp4"
        assert video_info(video)["frames"] == info["total_frames"]


def test_a_demonstration_exports_as_the_experts_episode_on_its_seed(demo_root, tmp_path):
    """The stored demo is frames only: the exporter runs the expert again on the demo seed, one
    frame per expert action from the demo's fixed view, at the demo's preset."""
    done = export(demo_root / "small", tmp_path / "ds", tasks=("grasp_single_cube",), progress=False)
    assert done["episodes"] == 1 and done["cameras"] == ["center_high"]
    ep = episodes_of(tmp_path / "ds").iloc[0]
    assert (ep["model"], ep["condition"], ep["task"], bool(ep["success"])) == (
        "scripted_expert",
        "demonstration",
        "grasp_single_cube",
        True,
    )
    assert ep["length"] == ep["steps"] and pd.isna(ep["outcome_key"])
    frames = frames_of(tmp_path / "ds")
    assert frames["next.success"].tolist()[-1] and frames["complementary_info.action_valid"].all()
    assert video_info(tmp_path / "ds/videos/observation.images.center_high/chunk-000/file-000.mp4")["size"] == (
        320,
        240,
    )


def synthetic(kinds_payloads: list[tuple[str, dict | None]], arms=ARMS) -> dict[str, np.ndarray]:
    """The columns of made-up events: a state per step, the given actions (step t + 1)."""
    robot = {
        a: {"qpos": [0.0] * 9, "ee_p": [0.0] * 3, "ee_q": [1.0, 0, 0, 0], "gc": [0.0] * 3, "closed": False}
        for a in ARMS
    }
    states = {t: {"robot": robot} for t in range(len(kinds_payloads) + 1)}
    actions = {
        t + 1: {
            "kind": kind,
            "payload": payload,
            "valid": kind != StepKind.INVALID,
            "planner_success": True,
            "success": False,
        }
        for t, (kind, payload) in enumerate(kinds_payloads)
        if payload is not None
    }
    table, dof = columns(states, actions, len(kinds_payloads), EndReason.STOP, arms, "test")
    assert dof == 7
    return table


def test_each_action_kind_has_its_encoding():
    names = {n: i for i, n in enumerate(action_names())}
    dual = {
        "action": "dual_gripper.move_world",
        "left": {"axis": "z", "sign": "-", "distance_mm": 20},
        "right": {"axis": "x", "sign": "+", "distance_mm": 30},
    }
    table = synthetic(
        [
            (StepKind.ROBOT, dual),
            (
                StepKind.ROBOT,
                {"action": "gripper.rotate_local", "arm": "left", "axis": "ry", "sign": "-", "angle_deg": 15},
            ),
            (StepKind.CAMERA, {"action": "camera.view_right_topdown"}),
            (StepKind.INVALID, {"action": "gripper.fly"}),
            (EndReason.STOP, None),  # the model stopped here: no action event
        ]
    )
    action, kinds = table["action"], [ACTION_KINDS[k] for k in table["complementary_info.action_kind"]]
    assert kinds == [StepKind.ROBOT, StepKind.ROBOT, StepKind.CAMERA, StepKind.INVALID, EndReason.STOP]
    assert action[0][names["left.move_z_mm"]] == -20 and action[0][names["right.move_x_mm"]] == 30
    assert np.count_nonzero(action[0]) == 2
    assert action[1][names["left.rotate_ry_deg"]] == -15 and np.count_nonzero(action[1]) == 1
    camera = table["complementary_info.camera_action"]
    assert list(camera) == [0, 0, 1 + CAMERA_ACTIONS.index("view_right_topdown"), 0, 0]
    assert not action[2:].any()  # a camera action, a refused one and the stop move nothing
    assert table["complementary_info.action_valid"].tolist() == [True, True, True, False, False]


def test_a_record_without_robot_state_names_the_rescore(run, tmp_path):
    old = Path(shutil.copytree(run, tmp_path / "old"))
    for path in (old / "_records").rglob("events.jsonl"):
        events = [{k: v for k, v in e.items() if k != "robot"} for e in read_events(path)]
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
    with pytest.raises(ExportError, match="--rescore"):
        export(old, tmp_path / "ds", progress=False)
    assert not (tmp_path / "ds").exists()


def test_episodes_with_other_cameras_are_refused_with_the_filter_to_use(run, tmp_path):
    image = tmp_path / "a.jpg"
    Image.new("RGB", (64, 48)).save(image)
    clip = lambda view: Clip("t", {view: [image, image]}, {}, {"record": view}, 7, "panda")  # noqa: E731
    with pytest.raises(ExportError, match="--where protocol=active"):
        layout_of([clip("active"), clip("topdown")], 2)


def test_the_command_line_says_what_to_fix_in_one_line(run, dataset, demo_root, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["lerobot", str(tmp_path / "empty"), "--out", str(tmp_path / "x")]) == 2
    assert main(["lerobot", str(run), "--out", str(dataset)]) == 2
    assert main(["lerobot", str(run), "--out", str(tmp_path / "y"), "--where", "task"]) == 2
    assert main(["lerobot", str(run), "--out", str(tmp_path / "z"), "--where", "task=none"]) == 2
    assert main(["lerobot", str(demo_root), "--out", str(tmp_path / "d"), "--where", "task=grasp_single_cube"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 5 and all(line.startswith("vabench.export: ") for line in lines)
    assert "neither a run folder" in lines[0] and "--force" in lines[1] and "COLUMN=VALUE" in lines[2]
    assert "nothing to export" in lines[3] and "--tasks" in lines[4]


def test_the_command_line_selects_episodes_and_prints_how_to_open_them(run, tmp_path, capsys):
    assert main(["lerobot", str(run), "--out", str(tmp_path / "one"), "--where", "task=click_bell_right"]) == 0
    out = capsys.readouterr().out
    assert "wrote 1 episodes" in out and "LeRobotDataset('vabench/a'" in out
    assert list(episodes_of(tmp_path / "one")["task"]) == ["click_bell_right"]
    assert main(["lerobot", str(run), "--out", str(tmp_path / "two"), "--tasks", "grasp_single_cube"]) == 0
    assert list(episodes_of(tmp_path / "two")["task"]) == ["grasp_single_cube"]


def lerobot(results: Path) -> Path:
    """The LeRobot venv, built when missing (tests/lerobot_venv.py); a build that fails is one line."""
    from tests.lerobot_venv import FIX, lerobot_venv

    log = results / "lerobot-venv.log"
    try:
        with open(log, "w") as out:
            return lerobot_venv(log=out)
    except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
        pytest.fail(f"the LeRobot venv could not be built ({e}; log {log}): build it with {FIX}", pytrace=False)


@pytest.mark.interop
def test_lerobot_opens_the_exports_and_lerobot_doctor_finds_no_failure(run, dataset, results, demo_root):
    """As a user meets it: LeRobot 0.4's own loader (pyav) reads every frame and video back with the
    record's values, and ``lerobot-doctor check`` fails nothing, for a run and a demonstration."""
    venv = lerobot(results)
    export(demo_root / "small", results / "ds_demo", "vabench/demo", progress=False)
    for ds, repo in ((dataset, "vabench/test"), (results / "ds_demo", "vabench/demo")):
        lerobot_reads(venv, ds, repo, results)


def lerobot_reads(venv: Path, ds: Path, repo: str, results: Path) -> None:
    """LeRobot's loader reads ``ds`` back as written (:func:`_check_read`) and its doctor fails nothing."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_LEROBOT_HOME": str(results / "hf")}
    out = results / f"read_{ds.name}"
    script = Path(__file__).with_name("lerobot_open.py")
    subprocess.run([str(venv / "bin/python"), str(script), str(ds), repo, str(out)], env=env, check=True)
    _check_read(ds, json.loads((out / "read.json").read_text()), out)
    doctor = subprocess.run(
        [str(venv / "bin/lerobot-doctor"), "check", str(ds), "--json"], env=env, capture_output=True, text=True
    )
    report = json.loads(doctor.stdout)
    failed = [m["message"] for c in report["checks"] for m in c["messages"] if m["severity"] == "FAIL"]
    assert report["total_frames"] == info_of(ds)["total_frames"] and failed == []


def _check_read(ds: Path, read: dict, out: Path) -> None:
    """What LeRobot read equals what was written, and its decoded images are the frames' pictures."""
    frames, episodes, info = frames_of(ds), episodes_of(ds), info_of(ds)
    assert (read["num_frames"], read["num_episodes"], read["fps"]) == (len(frames), len(episodes), info["fps"])
    assert "Number of selected samples" in read["repr"]
    for key in ("observation.state", "action"):
        assert np.allclose([f[key] for f in read["frames"]], np.stack(frames[key].to_numpy()))
    assert [f["task"] for f in read["frames"]] == [episodes["tasks"][e][0] for e in frames["episode_index"]]
    assert [e["success"] for e in read["episodes"]] == list(episodes["success"])
    camera = read["cameras"][0]
    video = read_video(ds / "videos" / camera / "chunk-000" / "file-000.mp4")
    for i in (0, len(frames) - 1):
        decoded = np.asarray(Image.open(out / f"{i:05d}_{camera}.png"), dtype=float)
        assert np.abs(decoded - video[i]).mean() < 3  # LeRobot's pyav decode = imageio's of the same frame
