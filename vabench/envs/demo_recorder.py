"""Demonstration recorder: an RGB-only video of the expert on the task's demo seed.

The demo seed comes from a pool disjoint from the evaluation seeds (see seeds.py). As in the
reference harness (reference notes 6.1), frames are rendered from the first active view
(``center_high``), which stays fixed for the whole demo, at the render preset's active size and
``demo_fps`` frames per simulated second (the ``paper`` preset: 1280x960 at 3 fps), and stored
as the JPEG the demo tools send (quality 95, as the reference sends its frames). What is stored
is what a model may inspect: the frames plus a manifest with the frame count, rate, resolution,
view and preset. No poses, actions, joint states or phase labels are stored: :func:`trace` replays
the same demonstration without a camera and returns what it does (gripper commands, finger
contacts, lifts) to the checks that hold the expert summaries to it, never to a model. A preset's demos
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
from dataclasses import dataclass, field
from pathlib import Path

from vabench.core.errors import BadFile, ConfigError
from vabench.core.vocab import Render
from vabench.results.media import demo_video

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
        raise ConfigError(f"{task} has no demonstration of its own; demo tasks: {', '.join(demo_tasks())}")
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
            raise BadFile(f"the expert failed on demo seed {seed} of {task}; re-screen the seeds")
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


@dataclass
class DemoStep:
    """The state after one expert action of a demonstration (evaluator side)."""

    action: dict
    closed: dict[str, bool]  # each controlled arm's gripper command
    holds: dict[str, tuple[str, ...]]  # the bodies each arm's fingers touch
    at: dict[str, tuple[float, ...]]  # each movable body's centre, metres
    lift: dict[str, float]  # each movable body's height above its settled start, metres
    gc: dict[str, tuple[float, ...]]  # each controlled arm's grasp centre, metres


@dataclass
class DemoTrace:
    """What the demonstration of a task does, read from the simulator as it replays (the stored demo
    keeps frames only, so a summary is checked against this): the state after every expert action
    (``steps``, after ``start``, before the final hold's ``end``) of its ``bodies``, every body a finger of each arm
    touched at any sampled instant (``touched``), each movable body's peak lift (metres), and
    ``success``."""

    arms: tuple[str, ...]
    bodies: tuple[str, ...]  # every task body, static ones included
    start: DemoStep
    steps: list[DemoStep] = field(default_factory=list)
    end: DemoStep | None = None
    touched: dict[str, set[str]] = field(default_factory=dict)
    peak_lift: dict[str, float] = field(default_factory=dict)
    success: bool = False

    def grips(self) -> list[tuple[int, str, str, tuple[str, ...]]]:
        """Every change of a gripper command, in order: (step index, arm, ``close`` | ``open``, the
        bodies its fingers touch once it has acted)."""
        out, before = [], self.start.closed
        for i, step in enumerate(self.steps):
            for arm in self.arms:
                if step.closed[arm] != before[arm]:
                    out.append((i, arm, "close" if step.closed[arm] else "open", step.holds[arm]))
            before = step.closed
        return out


TRACE_EVERY = 10  # physics steps between samples of finger contacts


def trace(task: str) -> DemoTrace:
    """Replay the demonstration of ``task`` (the expert on its demo seed, as :func:`record` films it,
    without a camera: the same physics) and trace what it does, action by action."""
    if task not in demo_tasks():
        raise ConfigError(f"{task} has no demonstration of its own; demo tasks: {', '.join(demo_tasks())}")
    env = VABenchEnv(EnvConfig(render=False))
    try:
        env.reset(task, demo_seed(task))
        s, arms = env.privileged(), env.controlled
        movable = [name for name, body in s.world.bodies.items() if not body.static]

        def now(action: dict) -> DemoStep:
            holds = {a: tuple(sorted({b for _, b in s.world.finger_contacts(a) if b is not None})) for a in arms}
            return DemoStep(
                action,
                {a: s.closed(a) for a in arms},
                holds,
                {name: tuple(float(v) for v in s.position(name)) for name in movable},
                {name: s.lift(name) for name in movable},
                {a: tuple(float(v) for v in s.gc(a)) for a in arms},
            )

        out = DemoTrace(arms, tuple(s.world.bodies), now({}), touched={a: set() for a in arms})

        def sample(step: int) -> None:
            if step % TRACE_EVERY == 0:
                for a in arms:
                    out.touched[a].update(b for _, b in s.world.finger_contacts(a) if b is not None)

        env.on_physics_step(sample)
        for action in env.expert():
            result = env.step(action)
            out.steps.append(now(action))
            if result.done:
                break
        env.hold(round(HOLD_S / TIMESTEP))
        out.end = now({})
        out.peak_lift = {name: s.peak_lift(name) for name in movable}
        out.success = bool(env.success)
        return out
    finally:
        env.close()
