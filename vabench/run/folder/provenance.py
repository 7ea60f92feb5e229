"""What produced a run (its provenance manifest, ``RunInfo.provenance``): the code (package version, git
commit and dirty flag, a digest of the source tree), the inputs (seed manifests, prompts, task
files, the asset cache, the demonstrations), the machine (renderer device and driver, Python,
key libraries, platform). Every outcome row carries the manifest's digest (``provenance_digest``),
so ``python -m vabench.verify`` can say what differs between the run's machine and its own.

Digests are sha256 hex prefixes of file contents (``digest_files``); the manifest's own digest
covers everything in it, so a rerun under other code or on another machine gets another digest,
and ``_provenance/<digest>.json`` keeps each one a run folder's rows name."""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import platform
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import vabench
from vabench.agents.chat import prompts
from vabench.core.vocab import Robot, Split

PACKAGES = (
    "vabench",
    "sapien",
    "mplib",
    "numpy",
    "scipy",
    "pillow",
    "pyarrow",
    "pandas",
    "litellm",
    "ray",
    "hydra-core",
)
SOURCE = Path(vabench.__file__).parent
DIGEST_CHARS = 16


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:DIGEST_CHARS]


def digest_files(files: Iterable[Path], root: Path) -> str | None:
    """One digest of files' names (relative to ``root``) and contents; None when there are none."""
    h, any_file = hashlib.sha256(), False
    for path in sorted(Path(p) for p in files):
        if path.is_file():
            any_file = True
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:DIGEST_CHARS] if any_file else None


def digest(manifest: dict) -> str:
    """The manifest's digest (canonical JSON, keys sorted)."""
    return sha(json.dumps(manifest, sort_keys=True, default=str).encode())


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(SOURCE), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def code() -> dict:
    """The code that ran: git commit and dirty flag (tracked files changed), or none without git;
    always a digest of the package's source files (Python, manifests, templates)."""
    commit = _git("rev-parse", "HEAD")
    dirty = None if commit is None else bool(_git("status", "--porcelain", "--untracked-files=no", "--", "."))
    files = [p for p in SOURCE.rglob("*") if p.suffix in (".py", ".json", ".yaml", ".html", ".js", ".css")]
    files = [p for p in files if "__pycache__" not in p.parts]
    return {"git_commit": commit, "git_dirty": dirty, "source_digest": digest_files(files, SOURCE)}


def inputs(
    tasks: Iterable[str],
    render: str,
    demo_root: Path | None,
    demos: bool,
    robot: str = Robot.PANDA,
    split: str = Split.EVAL,
) -> dict:
    """Digests of what the run's episodes read: per task its file and the run robot's seed manifest
    of the run's split (another robot's seeds are its own: vabench.envs.seeds.manifest_path), the prompts,
    the asset cache (robots; compiled shaders excluded: a cache, not an input) and, when the run
    learns summaries, the demonstrations at its render preset."""
    from vabench.envs.demo_recorder import demo_dir
    from vabench.envs.seeds import MANIFEST_DIR, manifest_path
    from vabench.envs.sim.assets import cache_dir
    from vabench.envs.tasks import task_class

    tasks = sorted(set(tasks))
    seeds = {t: digest_files([manifest_path(t, robot, split)], MANIFEST_DIR) for t in tasks}
    files = {t: digest_files([Path(inspect.getsourcefile(task_class(t)))], SOURCE) for t in tasks}
    robots = cache_dir() / "robots"
    out = {
        "prompt_version": prompts.PROMPT_VERSION,
        "prompt_digest": prompts.prompt_digest(),
        "seed_manifests": seeds,
        "task_files": files,
        "asset_cache": digest_files(robots.rglob("*"), robots),
    }
    if demos:
        bases = sorted({task_class(t).summary_task for t in tasks})
        out["demos"] = {
            b: digest_files(demo_dir(b, demo_root, render).rglob("*"), demo_dir(b, demo_root, render)) for b in bases
        }
    return out


def machine() -> dict:
    """Python, key library versions, the platform and the renderer's device (SAPIEN / Vulkan)."""
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return {
        "python": sys.version.split()[0],
        "versions": versions,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "renderer": renderer(),
    }


_PROBE = "import sapien.render as r; print(r.get_device_summary())"


@functools.cache
def renderer() -> dict:
    """The devices SAPIEN's renderer sees (Vulkan device and driver, from its device summary), probed in
    a child process: starting Vulkan in a driver that may never render costs memory and can hang."""
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"{type(e).__name__}: {e}"}
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["the probe failed"])[-1][:300]}
    return {"device_summary": out.stdout.strip()}


def manifest(
    tasks: Iterable[str],
    render: str,
    demo_root: Path | None,
    demos: bool,
    robot: str = Robot.PANDA,
    split: str = Split.EVAL,
) -> dict:
    """The whole provenance manifest of a run (code, inputs, machine)."""
    return {"code": code(), "inputs": inputs(tasks, render, demo_root, demos, robot, split), "machine": machine()}


def differences(a: dict, b: dict, where: str = "") -> list[str]:
    """Every leaf where two manifests differ, as ``key.path: a -> b``."""
    out = []
    for key in sorted(set(a) | set(b)):
        x, y, name = a.get(key), b.get(key), f"{where}{key}"
        if isinstance(x, dict) and isinstance(y, dict):
            out += differences(x, y, name + ".")
        elif x != y:
            out.append(f"{name}: {x} -> {y}")
    return out
