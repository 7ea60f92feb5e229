"""One driver per run folder: a lock file naming the driver (host, boot, pid namespace, pid, start
time, a token), kept fresh by a heartbeat, and the watch a worker keeps on it.

Two drivers on one run folder would run the same episodes side by side (a rerun started while the
killed driver's workers still finish, a second terminal). The lock is created atomically (a
complete file is hard-linked into place, so no reader ever sees half of one). A lock whose driver
is gone is stale and is taken over with a message. Where the pid can be checked (same host, same
boot, same pid namespace) it is, with its start time against pid reuse: a dead driver is seen at
once. Elsewhere (another node of a cluster sharing the run folder, a container) only the heartbeat
tells, judged on the observer's own monotonic clock (clocks of two hosts need not agree): a lock
whose file has not changed for :data:`STALE_S` belongs to a dead driver. Workers check
:meth:`DriverWatch.gone` every half second and again before writing an outcome, and stop when their
driver is gone or another driver took the folder over.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from vabench.core.errors import RunLocked
from vabench.results.layout import DRIVER_LOCK as LOCK_NAME

HEARTBEAT_S = 2.0
STALE_S = 30.0  # a heartbeat unchanged for this long (observer's clock) belongs to a dead driver


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _place() -> dict:
    """What makes a pid comparable: the same host, boot and pid namespace."""
    try:
        pidns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        pidns = None
    return {"host": socket.gethostname(), "boot_id": _read("/proc/sys/kernel/random/boot_id"), "pidns": pidns}


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux), -1 for a zombie (it has
    finished), None where it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        fields = stat[stat.rindex(b")") + 2 :].split()  # the name may hold spaces and parentheses
        return -1 if fields[0] == b"Z" else int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def _pid_alive(pid: int, ticks: int | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process (or /proc is hidden): it exists
    now = _start_ticks(pid)
    if now == -1:
        return False
    return ticks is None or now is None or now == ticks  # another process reusing the pid: gone


def _pid_checkable(info: dict) -> bool:
    here = _place()
    return all(info.get(k) == here[k] and here[k] is not None for k in ("host", "boot_id", "pidns"))


def _snapshot(path: Path) -> tuple[dict | None, float] | None:
    """(info, mtime) from one open file, or None when there is no lock. info None: unreadable."""
    try:
        with open(path, "rb") as f:
            mtime = os.fstat(f.fileno()).st_mtime
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError:
        return (None, 0.0)
    try:
        info = json.loads(raw)
    except ValueError:
        info = None
    return (info if isinstance(info, dict) else None, mtime)


class DriverWatch:
    """A worker's view of its driver's lock: :meth:`gone` says why to stop, or None. ``clock``: the
    observer's monotonic clock, on which a heartbeat's age is judged."""

    def __init__(self, path: Path | str, token: str, clock: Callable[[], float] = time.monotonic):
        self.path, self.token, self.clock = Path(path), token, clock
        self._seen: tuple[float, float] | None = None  # (lock mtime, clock() when it was first seen)

    def gone(self) -> str | None:
        snap = _snapshot(self.path)
        if snap is None:
            return "the run folder's driver lock is gone"
        info, mtime = snap
        if info is None:
            return None  # a transient read error: decide on the next look
        if info.get("token") != self.token:
            return "another driver took this run folder over"
        if _pid_checkable(info):
            alive = _pid_alive(int(info.get("pid", -1)), info.get("start_ticks"))
            return None if alive else f"the driver (pid {info.get('pid')}) has ended"
        now = self.clock()
        if self._seen is None or self._seen[0] != mtime:
            self._seen = (mtime, now)
        elif now - self._seen[1] > STALE_S:
            return f"the driver on {info.get('host')} has not refreshed its lock for {STALE_S:g} s"
        return None


class RunLock:
    """Held by the driver for the whole run: ``with RunLock(run_dir, log): ...``."""

    def __init__(self, run_dir: Path, log=print):
        self.path = Path(run_dir) / LOCK_NAME
        self.log = log
        pid = os.getpid()
        self.info = {
            **_place(),
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
        for _ in range(3):
            if self._create():
                break
            self._take_over_if_stale()
        else:
            raise RunLocked(f"{self.path}: another driver took the run folder while this one started")
        self._thread = threading.Thread(target=self._beat, name="run-lock-heartbeat", daemon=True)
        self._thread.start()

    def _create(self) -> bool:
        """Put a complete lock file in place unless one exists; False when one does."""
        tmp = self.path.with_name(f".{LOCK_NAME}.{self.token}")
        data = json.dumps(self.info) + "\n"
        tmp.write_text(data)
        try:
            os.link(tmp, self.path)  # atomic, and fails if a lock exists
            return True
        except FileExistsError:
            return False
        except OSError:  # a filesystem without hard links (SMB, some FUSE): exclusive create instead
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "w") as f:
                f.write(data)
            return True
        finally:
            tmp.unlink(missing_ok=True)

    def _refuse(self, info: dict) -> None:
        who = f"host {info.get('host')}, pid {info.get('pid')}, started {info.get('started')}"
        raise RunLocked(
            f"run folder {self.path.parent} is in use by another driver ({who}); wait for it to finish or "
            f"stop it, or pick another run_id. The lock of a driver that has ended is taken over by itself "
            f"(from another host once its heartbeat has stopped for {STALE_S:g} s)."
        )

    def _take_over_if_stale(self) -> None:
        snap = _snapshot(self.path)
        if snap is None:
            return  # released meanwhile: try again
        info, mtime = snap
        if info is None:  # unreadable: a crashed writer on a filesystem without links, or a stranger
            if time.time() - mtime < STALE_S:
                self._refuse({"host": "?", "pid": "?", "started": "just now"})
        elif _pid_checkable(info):
            if _pid_alive(int(info.get("pid", -1)), info.get("start_ticks")):
                self._refuse(info)
        else:
            self.log(f"run folder {self.path.parent}: a driver on {info.get('host')} holds it; watching its heartbeat")
            watch = DriverWatch(self.path, info.get("token", ""))
            deadline = time.monotonic() + STALE_S + 2 * HEARTBEAT_S
            while time.monotonic() < deadline:
                if watch.gone() is not None:
                    break
                time.sleep(HEARTBEAT_S / 2)
            else:
                self._refuse(info)
        stale = self.path.with_name(f".{LOCK_NAME}.stale-{uuid.uuid4().hex}")
        try:
            os.rename(self.path, stale)
        except FileNotFoundError:
            return
        moved = _snapshot(stale)
        if info is not None and (moved is None or moved[0] is None or moved[0].get("token") != info.get("token")):
            try:  # another driver took over first and we moved its fresh lock: put it back
                os.link(stale, self.path)
            except OSError:
                pass
            stale.unlink(missing_ok=True)
            raise RunLocked(f"{self.path}: another driver took over the run folder first")
        stale.unlink(missing_ok=True)
        who = "an unreadable lock" if info is None else f"host {info.get('host')}, pid {info.get('pid')}"
        self.log(f"run folder {self.path.parent}: taking over the lock of a driver that has ended ({who})")

    def held(self) -> bool:
        """False once another driver holds the folder (or the lock was removed); a transient read
        error counts as held. A driver that lost its lock must stop."""
        snap = _snapshot(self.path)
        if snap is None:
            return False
        info, _ = snap
        return info is None or info.get("token") == self.token

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            if not self.held():
                return  # never refresh another driver's lock
            try:
                os.utime(self.path)
            except OSError as e:
                self.log(f"run folder lock: heartbeat failed ({e}); retrying")

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        snap = _snapshot(self.path)
        if snap is not None and snap[0] is not None and snap[0].get("token") == self.token:
            self.path.unlink(missing_ok=True)
