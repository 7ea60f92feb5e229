"""The settled start of a scene, kept on disk (the warm reset, ``EnvConfig.warm_reset``).

A reset builds the scene and then settles it: 2,000 physics steps, then the 500 watched by the
stability check (``VABenchEnv._settle``). On a one-arm task the parked arm rests against the table
and never sleeps, so the settle is most of a reset. What settling proves depends only on the
scene's construction, so it is kept: per (task, seed, robot, settle and watch lengths, the physics
code, the robot's description, the simulator's version) the state it ends in (each arm's joint
positions, velocities and forces; joint accelerations are an output of a step, not state; each
dynamic body's pose, velocities and whether it sleeps) and the stability verdict, under
``$VABENCH_CACHE/settled/`` (default ``~/.cache/vabench``). The look (render preset, perturbation)
is not in the key: it is applied after the settle and never touches the physics.

A warm reset builds the scene and restores that state instead of stepping. PhysX keeps contact and
friction data between steps that no API writes back, and setting joint positions (even to the
values they hold) discards it, so a restored start is not the cold reset's start continued: its
episode differs from the cold reset's. It is the same on a hit and on a miss, because a miss
settles a scratch scene of the same construction and then restores into a new one, as a hit does
(restoring into the scene that settled keeps contact data a new scene lacks, and differs);
tests/test_warm_reset.py checks whole expert episodes, hit against miss, and the settled state
against the cold reset's. A changed physics file, robot description or simulator gives a new key:
the old entries are never read again (delete the folder to reclaim the space).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import sapien

from .sim.assets import cache_dir

FORMAT = 1  # bump when what is kept changes
PHYSICS = Path(__file__).parent  # the files whose code decides a settled state (see physics_files)


@dataclass(frozen=True)
class Settled:
    """The state a settle ends in, and its stability verdict (``drift_deg``, ``worst_body``)."""

    arms: dict[str, dict[str, np.ndarray]]  # arm -> qpos, qvel, qf
    bodies: dict[str, dict[str, np.ndarray]]  # dynamic body -> p, q (float32, as SAPIEN holds them), v, w, sleeping
    step_count: int
    drift_deg: float
    worst_body: str | None


def capture(world, drift_deg: float, worst_body: str | None) -> Settled:
    """The world's state now (after its settle)."""
    arms = {}
    for name, arm in world.arms.items():
        r = arm.robot
        arms[name] = {"qpos": r.get_qpos(), "qvel": r.get_qvel(), "qf": r.get_qf()}
    bodies = {}
    for name, body in world.bodies.items():
        if not body.static:
            c, pose = body.component, body.entity.pose
            bodies[name] = {
                "p": np.asarray(pose.p, dtype=np.float32),
                "q": np.asarray(pose.q, dtype=np.float32),
                "v": np.asarray(c.linear_velocity, dtype=np.float32),
                "w": np.asarray(c.angular_velocity, dtype=np.float32),
                "sleeping": np.asarray(c.is_sleeping),
            }
    copied = {a: {k: np.array(v, copy=True) for k, v in parts.items()} for a, parts in arms.items()}
    return Settled(copied, bodies, int(world.step_count), float(drift_deg), worst_body)


def restore(world, start: Settled) -> None:
    """Put ``world`` (built for the same task and seed) in the settled state ``start``."""
    for name, parts in start.arms.items():
        r = world.arms[name].robot
        r.set_qpos(parts["qpos"])
        r.set_qvel(parts["qvel"])
        r.set_qf(parts["qf"])
    for name, parts in start.bodies.items():
        body = world.bodies[name]
        body.entity.set_pose(sapien.Pose(parts["p"], parts["q"]))
        body.component.set_linear_velocity(parts["v"])
        body.component.set_angular_velocity(parts["w"])
        if bool(parts["sleeping"]):
            body.component.put_to_sleep()
    world.step_count = start.step_count


def physics_files() -> list[Path]:
    """The source files a settled state depends on: the scene, robots, objects and tasks, the env's
    build and settle, its settings, and this module."""
    folders = [PHYSICS / "sim", PHYSICS / "tasks", PHYSICS / "objects"]
    files = [p for d in folders for p in d.rglob("*.py")]
    return sorted([*files, PHYSICS / "env.py", PHYSICS / "config.py", Path(__file__)])


@functools.cache
def code_digest() -> str:
    """One digest of the physics files and the simulator's version (per process: source edits
    during a process are not seen, as imported code is not)."""
    h = hashlib.sha256()
    for path in physics_files():
        h.update(path.relative_to(PHYSICS).as_posix().encode() + b"\0" + path.read_bytes())
    for pkg in ("sapien", "numpy"):
        h.update(f"{pkg}={metadata.version(pkg)}".encode())
    return h.hexdigest()[:16]


@functools.cache
def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def key(task, seed: int, config) -> str:
    """The cache key of ``task`` (a Task) at ``seed`` under ``config`` (an EnvConfig)."""
    from .sim.embodiments import embodiment, robot_files

    files = robot_files(embodiment(config.robot))
    parts = {
        "format": FORMAT,
        "task": f"{type(task).__module__}.{type(task).__qualname__}:{task.name}",
        "seed": int(seed),
        "robot": str(config.robot),
        "control": str(config.control),  # ee_delta: the arms feel no gravity, so they settle otherwise
        "robot_description": _file_digest(str(files.urdf)),
        "settle_steps": int(config.settle_steps),
        "stability_window": int(config.stability_window),
        "code": code_digest(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


class SettleCache:
    """Settled states by key, one ``.npz`` file each under ``root`` (default ``$VABENCH_CACHE/settled``)."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else cache_dir() / "settled"
        self.hits = self.misses = 0

    def get(self, name: str) -> Settled | None:
        path = self.root / f"{name}.npz"
        try:
            with np.load(path, allow_pickle=False) as data:
                start = _unflat(dict(data))
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # absent or damaged: settle again
            self.misses += 1
            return None
        self.hits += 1
        return start

    def put(self, name: str, start: Settled) -> None:
        """Write atomically (a reader sees the whole file or none; two processes may race harmlessly)."""
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".{name}.{os.getpid()}.{threading.get_ident()}.npz"  # two threads may miss alike
        np.savez(tmp, **_flat(start))
        os.replace(tmp, self.root / f"{name}.npz")


def _flat(start: Settled) -> dict[str, np.ndarray]:
    out = {"step_count": np.asarray(start.step_count), "drift_deg": np.asarray(start.drift_deg)}
    out["worst_body"] = np.asarray("" if start.worst_body is None else start.worst_body)
    for kind, group in (("arm", start.arms), ("body", start.bodies)):
        for name, parts in group.items():
            out.update({f"{kind}/{name}/{k}": v for k, v in parts.items()})
    return out


def _unflat(data: dict[str, np.ndarray]) -> Settled:
    groups: dict[str, dict[str, dict[str, np.ndarray]]] = {"arm": {}, "body": {}}
    for k, v in data.items():
        if k.count("/") == 2:
            kind, name, part = k.split("/")
            groups[kind].setdefault(name, {})[part] = v
    worst = str(data["worst_body"]) or None
    return Settled(groups["arm"], groups["body"], int(data["step_count"]), float(data["drift_deg"]), worst)
