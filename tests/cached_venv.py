"""A venv of its own for a peer whose dependencies do not fit the project's (LeRobot needs numpy 2,
inspect_ai moves boto3 and fsspec, ManiSkill3 pins its own): built once under ``$VABENCH_CACHE``,
reused, and made again when a build did not finish (no ``.complete`` marker). One build at a time:
a second caller waits on the lock, then finds it done."""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

DONE = ".complete"


def cache_dir() -> Path:
    return Path(os.environ.get("VABENCH_CACHE", Path.home() / ".cache" / "vabench"))


def python_of(version: str, who: str) -> str:
    """A Python ``version`` interpreter (this one when it is that version); ``who`` needs it."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    found = shutil.which("python" + version)
    if not found:
        raise RuntimeError(f"{who} needs a python{version} on PATH")
    return found


def built(root: Path) -> bool:
    return (root / DONE).is_file()


def cached_venv(root: Path, build: Callable[[Path], str]) -> Path:
    """``root``, built when missing: ``build(root)`` makes the venv and returns the marker's text."""
    if built(root):
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if built(root):
            return root
        shutil.rmtree(root, ignore_errors=True)
        stamp = build(root)
        (root / DONE).write_text(stamp)
    return root
