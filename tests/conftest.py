"""Shared fixtures: one env per test module kind, because building an env is cheap but the
first rendered frame of a process compiles shaders (~4 s)."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from PIL import Image

from vabench.envs import EnvConfig, VABenchEnv
from vabench.envs.render import RENDER_PRESETS

logging.getLogger("toppra").setLevel(logging.ERROR)


@pytest.fixture(scope="session")
def physics_env():
    """An env without rendering (fast): for executor, task and seed tests."""
    env = VABenchEnv(EnvConfig(render=False))
    yield env
    env.close()


@pytest.fixture(scope="session")
def render_env():
    """An env rendering at render=fast (640x480): the tests' images, cheaper than the paper's."""
    env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["fast"]))
    yield env
    env.close()


def scene_digest(env) -> dict[str, np.ndarray]:
    """Every object pose and joint state of the current episode (privileged; tests only)."""
    out = {name: body.matrix().copy() for name, body in env.world.bodies.items()}
    for arm, a in env.world.arms.items():
        out[f"{arm}_qpos"] = a.qpos.copy()
        out[f"{arm}_qvel"] = np.asarray(a.robot.get_qvel(), dtype=float).copy()
    return out


@pytest.fixture
def demo_root(tmp_path):
    """A small demonstration in the real on-disk format (no simulator needed), in every render
    preset's folder (``<root>/<preset>/<task>``), so runs of any preset find it."""
    from vabench.envs.render import RENDER_PRESETS

    root = tmp_path / "demos"
    for preset in RENDER_PRESETS:
        d = root / preset / "grasp_single_cube"
        d.mkdir(parents=True)
        frames = []
        for i in range(6):
            name = f"frame_{i:05d}.jpg"
            Image.new("RGB", (64, 48), (40 * i, 20, 20)).save(d / name, quality=95)
            frames.append(name)
        meta = {
            "format": "vabench.demo.v1",
            "task": "grasp_single_cube",
            "instruction": "Use the right arm to grasp the red cube and lift it off the table.",
            "frames": frames,
            "fps": 3.0,
            "width": 64,
            "height": 48,
            "view": "center_high",
            "render": preset,
        }
        (d / "demo.json").write_text(json.dumps(meta))
    return root


# -- the interop checks (marker ``interop``): listed at the end of every run, and never skipped ----------

INTEROP: dict[str, tuple[str, float]] = {}  # node id -> (outcome, seconds of its setup, call and teardown)


def pytest_runtest_logreport(report):
    """Each interop check's outcome (its call's, or its setup's or teardown's when that did not
    pass) and its time, the fixtures it was first to need included."""
    if "interop" not in report.keywords:
        return
    outcome, seconds = INTEROP.get(report.nodeid, ("passed", 0.0))
    if outcome == "passed" and (report.when == "call" or report.outcome != "passed"):
        outcome = "error" if report.failed and report.when != "call" else report.outcome
    INTEROP[report.nodeid] = (outcome, seconds + report.duration)


def pytest_sessionfinish(session, exitstatus):
    """A skipped interop check fails the run: CI must have run every way in and out."""
    if exitstatus == 0 and any(outcome == "skipped" for outcome, _ in INTEROP.values()):
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    if not INTEROP:
        return
    tr = terminalreporter
    tr.section("interop checks (pytest -m interop)")
    for nodeid, (outcome, seconds) in sorted(INTEROP.items()):
        tr.line(f"{outcome.upper():8} {seconds:6.1f} s  {nodeid}")
    counts = {}
    for outcome, _ in INTEROP.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    tr.line(", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))
