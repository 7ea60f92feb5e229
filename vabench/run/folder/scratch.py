"""Node-local scratch for a worker's files, and the bundles that carry them to the driver.

A worker that cannot see its driver's run folder (a cluster node without a shared filesystem)
writes an episode's record (events and frames), or a learning episode's record and summary, into
scratch on its own node; when the episode ends it packs that folder into a bundle (relative path ->
bytes, returned through Ray like any result) and deletes it, and the driver lands the bundle in the
run folder. Each worker has its own folder, ``<scratch root>/<worker id>/``, with an owner file; a
worker starting on a node removes the folders of workers whose process has ended there (a kill -9
leaves one behind).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from vabench.results.records import set_aside
from vabench.run.folder.lock import _pid_alive, _pid_checkable, _place, _start_ticks

SCRATCH_ENV = "VABENCH_SCRATCH"  # where workers keep files until their episode ends (default: <tmp>/vabench-scratch)
OWNER = ".owner.json"


def scratch_root() -> Path:
    return Path(os.environ.get(SCRATCH_ENV) or Path(tempfile.gettempdir()) / "vabench-scratch")


class Scratch:
    """One worker's scratch folder on its node, removed by :meth:`close`."""

    def __init__(self, worker_id: str):
        if not worker_id or "/" in worker_id or worker_id.startswith("."):
            raise ValueError(f"a worker id names one folder; got {worker_id!r}")
        clear_dead(scratch_root())
        self.root = scratch_root() / worker_id
        self.root.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        (self.root / OWNER).write_text(json.dumps({**_place(), "pid": pid, "start_ticks": _start_ticks(pid)}))

    def folder(self, rel: str | Path) -> Path:
        """A folder for one episode's files (``rel``: its place in the run folder); emptied first."""
        path = self.root / rel
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def clear_dead(root: Path) -> list[Path]:
    """Remove the scratch folders of workers on this machine whose process has ended; returns them."""
    gone = []
    for folder in root.glob("*") if root.is_dir() else ():
        try:
            info = json.loads((folder / OWNER).read_text())
        except (OSError, ValueError):
            continue  # being created, or not ours: never guess
        if not isinstance(info, dict) or not _pid_checkable(info):
            continue  # another machine's (a shared scratch root): its own workers clear it
        if not _pid_alive(int(info["pid"]), info.get("start_ticks")):
            shutil.rmtree(folder, ignore_errors=True)
            gone.append(folder)
    return gone


def read(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by its relative POSIX path."""
    folder = Path(folder)
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def pack(folder: Path) -> dict[str, bytes]:
    """:func:`read`, then the folder is removed."""
    files = read(folder)
    shutil.rmtree(folder, ignore_errors=True)
    return files


def land(files: dict[str, bytes], dest: Path) -> Path:
    """Write a bundle into ``dest``. A folder already there (a driver interrupted while landing) is
    set aside first, like a stale record. Paths must stay inside ``dest``."""
    dest = Path(dest)
    for rel in files:
        parts = PurePosixPath(rel).parts
        if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
            raise ValueError(f"a bundle path must be relative and inside its folder; got {rel!r}")
    set_aside(dest)
    dest.mkdir(parents=True)
    for rel, data in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return dest
