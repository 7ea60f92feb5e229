"""Demonstration recorder: an RGB-only video of the expert on the task's demo seed.

The demo seed comes from a pool disjoint from the evaluation seeds (see seeds.py). Frames are
rendered from the initial active view, which stays fixed for the whole demo, every
``FRAME_EVERY`` physics steps (RoboTwin's save_freq, ~16.7 frames per simulated second). What
is stored is what a model may inspect: PNG frames plus a manifest with the frame count, rate
and resolution. No poses, actions, joint states or phase labels are stored.

    python -m vabench.envs.cli.demos              # every task, into the cache
    python -m vabench.envs.cli.demos --task place_cube_in_bowl --force
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path

from PIL import Image

from vabench.media import demo_video

from .env import EnvConfig, VABenchEnv
from .seeds import demo_seed
from .sim.assets import cache_dir
from .sim.camera import CAMERA_PRESETS, CameraConfig
from .sim.scene import TIMESTEP
from .tasks import demo_tasks

FRAME_EVERY = 15  # physics steps per frame
DEMO_FORMAT = "vabench.demo.v1"


def demo_dir(task: str, root: Path | None = None) -> Path:
    return (root or cache_dir() / "demos") / task


def record(task: str, root: Path | None = None, camera: CameraConfig | None = None, force: bool = False) -> Path:
    """Record (or reuse) the demo of ``task``; returns its directory."""
    if task not in demo_tasks():
        raise ValueError(f"{task} has no demonstration of its own; demo tasks: {', '.join(demo_tasks())}")
    out = demo_dir(task, root)
    if (out / "demo.json").exists() and not force:
        return out
    seed = demo_seed(task)
    env = VABenchEnv(EnvConfig(camera=camera or CAMERA_PRESETS["default"]))
    env.reset(task, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{task}-", dir=out.parent))
    frames: list[str] = []

    def grab(step: int) -> None:
        if step % FRAME_EVERY == 0:
            name = f"frame_{len(frames):05d}.png"
            Image.fromarray(env.camera.render()).save(tmp / name)
            frames.append(name)

    try:
        grab(0)
        env.world.step_hooks.append(grab)
        for _ in env.expert_steps():
            pass
        env.world.step(FRAME_EVERY * 10)  # hold the final state for a moment
        if not env.success:
            raise RuntimeError(f"the expert failed on demo seed {seed} of {task}; re-screen the seeds")
        cfg = env.config.camera
        meta = {
            "format": DEMO_FORMAT,
            "task": task,
            "instruction": env.task.instruction,
            "frames": frames,
            "fps": round(1.0 / (TIMESTEP * FRAME_EVERY), 3),
            "width": cfg.width,
            "height": cfg.height,
        }
        (tmp / "demo.json").write_text(json.dumps(meta, indent=2) + "\n")
        try:  # for people only: a failed video never costs the demonstration
            demo_video(tmp)
        except Exception:
            logging.getLogger(__name__).warning("no demo.mp4 for %s", task, exc_info=True)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        env.close()
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out
