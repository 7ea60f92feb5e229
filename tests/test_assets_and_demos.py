"""Generated assets and demonstrations: built from the installed packages into the cache, light
enough for CPU rendering, and the demo holds RGB frames only."""

import json
import re

import numpy as np
import pytest
import trimesh
from PIL import Image

from vabench.envs import demo_recorder as demos
from vabench.envs import seeds
from vabench.envs.sim import assets
from vabench.results.media import DEMO_VIDEO, video_info


def test_robot_description_is_loadable_by_mplib_and_light():
    files = assets.panda_files()
    urdf = files.urdf.read_text()
    assert "package://" not in urdf
    meshes = re.findall(r'filename="([^"]+)"', urdf)
    assert meshes and all(not m.startswith("/") for m in meshes)  # relative, as mplib needs
    for rel in meshes:
        assert (files.urdf.parent / rel).exists(), rel
        if "collision" in rel:
            hull = trimesh.load(files.urdf.parent / (rel + ".convex.stl"), force="mesh")
            assert hull.is_convex
    visual = sum(
        len(g.faces)
        for rel in meshes
        if "visual" in rel
        for g in trimesh.load(files.urdf.parent / rel, force="scene").geometry.values()
    )
    assert visual < 20_000  # the stock meshes have ~134k triangles
    assert files.srdf.exists() and files.srdf.stem == files.urdf.stem  # SAPIEN loads <stem>.srdf


def test_rebuild_into_a_new_cache(tmp_path):
    files = assets.build_panda(tmp_path, quiet=True)
    again = assets.build_panda(tmp_path, quiet=True)
    assert files == again and files.urdf.exists()


@pytest.mark.parametrize("task", ["grasp_single_cube", "lift_pot"])  # one arm, two arms
def test_demo_is_rgb_only_and_regenerable(tmp_path, task):
    out = demos.record(task, root=tmp_path, preset="small")
    meta = json.loads((out / "demo.json").read_text())
    assert out == tmp_path / "small" / task  # a preset's demos never serve another preset
    assert set(meta) == {"format", "task", "instruction", "frames", "fps", "width", "height", "view", "render"}
    assert (meta["fps"], meta["view"], meta["render"]) == (3.0, "center_high", "small")  # the reference keeps 3 fps
    assert len(meta["frames"]) > 20 and meta["width"] == 320 and meta["height"] == 240
    first = np.asarray(Image.open(out / meta["frames"][0]))
    last = np.asarray(Image.open(out / meta["frames"][-1]))
    assert first.shape == (240, 320, 3) and first.dtype == np.uint8
    assert not np.array_equal(first, last)  # the robot moved
    assert sorted(p.name for p in out.iterdir()) == sorted(meta["frames"] + ["demo.json", DEMO_VIDEO])
    assert video_info(out / DEMO_VIDEO)["frames"] == len(meta["frames"])  # for people; models get the frames
    assert seeds.demo_seed(task) not in seeds.eval_seeds(task)
    mtime = (out / "demo.json").stat().st_mtime_ns
    assert demos.record(task, root=tmp_path, preset="small") == out  # reused
    assert (out / "demo.json").stat().st_mtime_ns == mtime
    frames = {name: (out / name).read_bytes() for name in meta["frames"]}
    again = demos.record(task, root=tmp_path, preset="small", force=True)  # regenerated: identical
    assert {name: (again / name).read_bytes() for name in meta["frames"]} == frames


def test_only_base_tasks_have_demos_and_the_basket_track_is_taught_by_four_atomic_skills(tmp_path):
    from vabench.agents.summaries.demo_tools import task_demos

    own = demos.demo_tasks()
    assert "put_everything_in_basket" not in own and not any(t.endswith("_heldout") for t in own)
    assert {"place_shoe", "handover_horizontal_block", "lift_pot"} <= set(own) and len(own) == 14
    skills = task_demos("put_everything_in_basket")
    assert skills == ("place_single_cube", "grasp_single_bottle", "grasp_single_bottle_upright", "grasp_single_pen")
    assert set(skills) <= set(own)
    with pytest.raises(ValueError, match="no demonstration of its own"):
        demos.record("put_everything_in_basket", root=tmp_path)
    assert not any(tmp_path.iterdir())


def test_lean_shader_matches_the_default_look(render_env):
    """The lean shader only simplifies shadow filtering and storage: same picture up to shadow edges."""
    import dataclasses

    from vabench.envs.sim.camera import CameraRig
    from vabench.envs.sim.shaders import lean_shader_dir

    lean = lean_shader_dir()
    assert (lean / "gbuffer.frag").exists() and not (lean / "gbuffer1.frag").exists()
    assert not (lean / "composite0.frag").exists() and "outPositionRaw" not in (lean / "gbuffer.frag").read_text()
    assert "PCF_SampleCount = 4;" in (lean.parent / "common" / "shadow.glsl").read_text()
    env = render_env
    env.reset("place_cube_in_bowl", 1001)
    stock = CameraRig(env.world.scene, dataclasses.replace(env.config.preset.active, shader="default"))
    for view in ("view_topdown", "view_oblique_45"):
        env.step({"action": f"camera.{view}"})
        a = env.camera.render().astype(int)
        b = stock.render(env.camera.pose).astype(int)
        assert np.abs(a - b).mean() < 0.5 and np.percentile(np.abs(a - b), 99) < 30


def test_camera_config_errors_name_the_key():
    from vabench.envs.sim.camera import CameraConfig

    with pytest.raises(ValueError, match="shader must be one of lean, default"):
        CameraConfig(shader="rt")
    with pytest.raises(ValueError, match="fovy_deg must be in"):
        CameraConfig(fovy_deg=0)
