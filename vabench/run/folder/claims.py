"""Exclusive claims on single episodes of a run folder, for seats (:mod:`vabench.run.seat`): an
episode an outside party is playing is claimed, so no other seat, in this process or another,
takes it.

A claim is an exclusive ``flock`` on ``<run>/_claims/<episode key>.lock``, taken without waiting.
Each claim opens its own file description, so two claims in one process conflict as two in
different processes do; the kernel drops the lock when its holder's process ends (a crash, kill
-9), so an abandoned claim never needs cleaning up: the next seat finds the episode free and plays
it again. The file itself stays (empty); only the lock on it counts. A driver (``python -m
vabench.launch``) takes the whole folder instead (:mod:`vabench.run.folder.lock`): seats refuse a
folder a live driver holds.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from vabench.results.layout import CLAIMS


class Claim:
    """One episode held: :meth:`release` (or the process's end) lets it go."""

    def __init__(self, path: Path, fd: int):
        self.path, self._fd = path, fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def claim(run_dir: Path, key: str) -> Claim | None:
    """The claim on the episode ``key`` (its folder key, :attr:`EpisodeSpec.key`), or None when
    another seat holds it."""
    path = Path(run_dir) / CLAIMS / f"{key}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return Claim(path, fd)
