"""Demonstration recorder: an RGB-only video of the expert on the task's demo seed.

The demo seed comes from a pool disjoint from the evaluation seeds (see seeds.py). As in the
reference harness (reference notes 6.1), frames are rendered from the first active view
(``center_high``), which stays fixed for the whole demo, at the render preset's active size and
``demo_fps`` frames per simulated second (the ``paper`` preset: 1280x960 at 3 fps), and stored
as the JPEG the demo tools send (quality 95, as the reference sends its frames). What is stored
is what a model may inspect: the frames plus a manifest with the frame count, rate, resolution,
view and preset. No poses, actions, joint states or phase labels are stored. A preset's demos
live in their own folder (``<root>/<preset>/<task>``), so a run never learns from another
preset's frames.

    python -m vabench.envs.cli.demos                   # every task at the paper preset, into the cache
    python -m vabench.envs.cli.demos --task place_cube_in_bowl --render fast --force
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path

from vabench.media import demo_video
from vabench.vocab import Render

from .env import EnvConfig, VABenchEnv
from .render import RenderPreset, render_preset
from .seeds import demo_seed
from .sim.assets import cache_dir
from .sim.camera import INITIAL_VIEW
from .sim.scene import TIMESTEP
from .tasks import demo_tasks

HOLD_S = 1.0  # the final state is held this long after the expert ends
DEMO_FORMAT = "vabench.demo.v1"


def demo_dir(task: str, root: Path | None = None, preset: str = Render.PAPER) -> Path:
    """Where the demo of ``task`` recorded at ``preset`` lives (root: ``$VABENCH_CACHE/demos``)."""
    return (root or cache_dir() / "demos") / preset / task


def record(task: str, root: Path | None = None, preset: str | RenderPreset = Render.PAPER, force: bool = False) -> Path:
    """Record (or reuse) the demo of ``task`` at ``preset``; returns its directory."""
    if task not in demo_tasks():
        raise ValueError(f"{task} has no demonstration of its own; demo tasks: {', '.join(demo_tasks())}")
    preset = render_preset(preset)
    out = demo_dir(task, root, preset.name)
    if (out / "demo.json").exists() and not force:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{task}-", dir=out.parent))
    try:
        _film(task, preset, tmp)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def _film(task: str, preset: RenderPreset, folder: Path) -> None:
    """Run the expert on the demo seed, keeping a frame every 1/``demo_fps`` simulated seconds."""
    seed = demo_seed(task)
    env = VABenchEnv(EnvConfig(preset=preset))
    frames: list[str] = []
    per_frame = 1.0 / (preset.demo_fps * TIMESTEP)  # physics steps per frame (not an integer at 3 fps)

    def grab(step: int) -> None:  # ``step``: physics steps since the demo began
        if step >= round(len(frames) * per_frame):
            name = f"frame_{len(frames):05d}{preset.demo_encoding.suffix}"
            (folder / name).write_bytes(preset.demo_encoding.encode(env.render()))
            frames.append(name)

    try:
        env.reset(task, seed)
        grab(0)
        env.on_physics_step(grab)
        for _ in env.expert_steps():
            pass
        env.hold(round(HOLD_S / TIMESTEP))
        if not env.success:
            raise RuntimeError(f"the expert failed on demo seed {seed} of {task}; re-screen the seeds")
        cam = preset.active
        meta = {
            "format": DEMO_FORMAT,
            "task": task,
            "instruction": env.task.instruction,
            "frames": frames,
            "fps": preset.demo_fps,
            "width": cam.width,
            "height": cam.height,
            "view": INITIAL_VIEW,
            "render": preset.name,
        }
    finally:
        env.close()
    (folder / "demo.json").write_text(json.dumps(meta, indent=2) + "\n")
    try:  # for people only: a failed video never costs the demonstration
        demo_video(folder)
    except Exception:
        logging.getLogger(__name__).warning("no demo.mp4 for %s", task, exc_info=True)
