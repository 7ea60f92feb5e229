"""One driver per run folder: a lock file naming the driver (host, pid, start time, a token), kept
fresh by a heartbeat, and the check a worker makes before it writes anything for that driver.

Two drivers on one run folder would run the same episodes side by side (a rerun started while the
killed driver's workers still finish, a second terminal). The lock is created atomically (a
complete file is hard-linked into place, so no reader ever sees half of one). A lock whose driver
is gone is stale and is taken over with a message: on the same host the pid is checked (and its
start time, against pid reuse); from another host (a cluster sharing the run folder) a heartbeat
older than :data:`STALE_S` means gone. Workers check :func:`owner_gone` every second and before
writing an outcome, and stop when their driver is gone or another driver took the folder over.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path

LOCK_NAME = "_driver.lock"
HEARTBEAT_S = 2.0
STALE_S = 30.0  # a lock not refreshed for this long belongs to a dead driver (seen from another host)


class RunLocked(RuntimeError):
    """Another live driver works on this run folder."""


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux), or None where /proc is absent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return None if fields[0] == "Z" else int(fields[19])  # a zombie has finished: it counts as gone


def _alive(pid: int, ticks: int | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: it exists
    now = _start_ticks(pid)
    if Path("/proc").is_dir() and now is None:
        return False  # a zombie, or it ended just now
    return ticks is None or now is None or now == ticks  # another process reusing the pid: gone


def read_lock(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def holder_gone(info: dict, mtime: float) -> bool:
    """True when the driver that wrote ``info`` has ended (or stopped refreshing its lock)."""
    if info.get("host") == socket.gethostname():
        return not _alive(int(info["pid"]), info.get("start_ticks"))
    return time.time() - mtime > STALE_S


def owner_gone(path: Path | str, token: str) -> str | None:
    """Why a worker of the driver holding ``token`` must stop now, or None while it may go on."""
    path = Path(path)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return "the run folder's driver lock is gone"
    info = read_lock(path)
    if info is None or info.get("token") != token:
        return "another driver took this run folder over"
    if holder_gone(info, mtime):
        return f"the driver (host {info.get('host')}, pid {info.get('pid')}) is gone"
    return None


class RunLock:
    """Held by the driver for the whole run: ``with RunLock(run_dir, log): ...``."""

    def __init__(self, run_dir: Path, log=print):
        self.path = Path(run_dir) / LOCK_NAME
        self.log = log
        pid = os.getpid()
        self.info = {
            "host": socket.gethostname(),
            "pid": pid,
            "start_ticks": _start_ticks(pid),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "token": uuid.uuid4().hex,
        }
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def token(self) -> str:
        return self.info["token"]

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{LOCK_NAME}.{self.token}")
        tmp.write_text(json.dumps(self.info) + "\n")
        try:
            for _ in range(2):
                try:
                    os.link(tmp, self.path)  # atomic, and fails if a lock exists
                    break
                except FileExistsError:
                    self._take_over_if_stale()
            else:
                raise RunLocked(f"{self.path}: another driver took the run folder while this one started")
        finally:
            tmp.unlink(missing_ok=True)
        self._thread = threading.Thread(target=self._beat, name="run-lock-heartbeat", daemon=True)
        self._thread.start()

    def _take_over_if_stale(self) -> None:
        try:
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            return  # released meanwhile: try again
        info = read_lock(self.path) or {}
        who = f"host {info.get('host')}, pid {info.get('pid')}, started {info.get('started')}"
        if info and not holder_gone(info, mtime):
            raise RunLocked(
                f"run folder {self.path.parent} is in use by another driver ({who}); wait for it to finish or "
                f"stop it, or pick another run_id. A lock whose driver has ended is taken over by itself "
                f"(from another host after {STALE_S:g} s without its heartbeat)."
            )
        stale = self.path.with_name(f".{LOCK_NAME}.stale-{uuid.uuid4().hex}")
        try:
            os.rename(self.path, stale)  # only one of two racing drivers wins the rename
        except FileNotFoundError:
            return
        stale.unlink(missing_ok=True)
        self.log(f"run folder {self.path.parent}: taking over the lock of a driver that has ended ({who})")

    def held(self) -> bool:
        """Still ours (a driver that lost its lock to another, after a long stall, must stop)."""
        info = read_lock(self.path)
        return info is not None and info.get("token") == self.token

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            if not self.held():
                return  # never refresh another driver's lock
            try:
                os.utime(self.path)
            except OSError:
                pass

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        info = read_lock(self.path)
        if info is not None and info.get("token") == self.token:
            self.path.unlink(missing_ok=True)
