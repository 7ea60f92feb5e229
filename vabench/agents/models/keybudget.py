"""One rate budget per provider key: every run of the same (model, endpoint, key) on this machine
draws its ``model.rpm`` / ``model.tpm`` slots from one schedule, so the jobs of a joblib sweep and
separate launchers together stay under the key's limit instead of each using all of it.

Why a file and not an actor: a launcher with ``ray.address=local`` starts a private Ray and a
joblib sweep's jobs run in separate processes, so no actor is visible to all of them, while a file
under the cache is (``$VABENCH_CACHE/limits/<id>.gcra``). On a shared cluster each run's limiter
actor lives on the head node (``vabench.run.actors.backends``), so every run of the cluster, and
launchers on the head's machine, use the same file there. Nothing outlives a job but the file.

The file holds three wall-clock times, the limiter's GCRA state (vabench.agents.models.ratelimit): the
next request slot, the next token slot, and the end of a provider's pause. A caller books under an
exclusive ``flock`` held for microseconds; the kernel drops the lock of a process that dies, and a
dead process holds nothing else: the slots it booked are times that pass (at most its own waiting
callers' share, which others then wait out once), its unsettled token estimates likewise. A lock
held longer than ``lock_wait_s`` (a stopped process) raises :class:`BudgetBusy`: the run's limiter
then paces by itself for that request. Nothing waits forever.

The key is named, never stored: 16 hex digits of a keyed BLAKE2b of the model id, the endpoint and
the key's *value*, so two variables holding one key share a budget and one variable holding two
keys (two shells) does not. The salt is fixed so that every machine names a key alike.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import math
import os
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from vabench.agents.chat.model import ModelConfig
from vabench.agents.models.ratelimit import pace
from vabench.core.errors import VabenchError

log = logging.getLogger(__name__)

SALT = b"vabench rate budget v1"  # public: it only keeps the names apart from other uses of the key
LOCK_WAIT_S = 5.0  # the longest a caller waits for the file's lock (held for microseconds by a live process)
AHEAD_S = 86_400.0  # a slot booked further ahead is from a clock that went back: forgotten
STALE_S = 7 * 86_400.0  # a budget file untouched this long is removed (its slots are long past)
SUFFIX = ".gcra"
_STATE = struct.Struct("<3d")  # next request slot, next token slot, paused until (time.time())
_swept: set[str] = set()  # folders this process has cleaned


class BudgetBusy(VabenchError, TimeoutError):
    """The budget file's lock was held longer than ``lock_wait_s`` (its holder is stopped, not dead)."""


def key_var(cfg: ModelConfig) -> str:
    """The variable the key comes from: ``model.api_key_env``, else the provider's own (LiteLLM's
    ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ...)."""
    provider = cfg.id.split("/", 1)[0] if "/" in cfg.id else "openai"
    return cfg.api_key_env or f"{provider.upper()}_API_KEY"


def key_id(cfg: ModelConfig) -> str:
    """The budget's name for the key ``cfg`` calls with. Where the key is not in this process's
    environment, its variable's name stands for it (then only runs naming that variable share)."""
    var = key_var(cfg)
    value = os.environ.get(var)
    who = f"value\0{value}" if value else f"variable\0{var}"
    text = "\0".join((cfg.id, (cfg.api_base or "").rstrip("/"), who))
    return hashlib.blake2b(text.encode(), digest_size=8, key=SALT).hexdigest()


def budget_for(cfg: ModelConfig) -> KeyBudget | None:
    """The shared budget of ``cfg``'s key; None where the model sets no limit or ``model.share_limits=false``."""
    return KeyBudget(key_id(cfg)) if cfg.share_limits and (cfg.rpm or cfg.tpm) else None


def book_once(cfg: ModelConfig, tokens: int) -> float:
    """Book one request outside a run (the endpoint probe): the seconds to wait before sending it;
    0 where the key has no shared budget or its file cannot be used."""
    budget = budget_for(cfg)
    if budget is None:
        return 0.0
    try:
        return budget.book(tokens, *pace(cfg.rpm, cfg.tpm))
    except (OSError, BudgetBusy) as exc:
        log.warning("the shared rate budget is unavailable (%s: %s); not waiting", type(exc).__name__, exc)
        return 0.0


class KeyBudget:
    """The shared GCRA schedule of one key. Each caller passes its own pace (seconds per request,
    tokens per second), so runs that set different limits each keep theirs; give every job of a key
    the same ``model.rpm``/``model.tpm``. ``root``: the folder (default ``$VABENCH_CACHE/limits``,
    read where the budget is used: on a cluster, the head node's); ``clock``: wall-clock seconds."""

    def __init__(
        self,
        key: str,
        root: str | None = None,
        clock: Callable[[], float] = time.time,
        lock_wait_s: float = LOCK_WAIT_S,
    ):
        self.key, self.root, self.clock, self.lock_wait_s = key, root, clock, lock_wait_s
        self._fd: int | None = None
        self._pid = 0  # the process that opened _fd: a forked child shares the lock and opens its own
        self._mutex = threading.Lock()

    def __reduce__(self):
        """Pickling (to a Ray actor) carries the name, never an open file."""
        return type(self), (self.key, self.root, self.clock, self.lock_wait_s)

    @property
    def path(self) -> Path:
        if self.root is not None:
            return Path(self.root) / f"{self.key}{SUFFIX}"
        from vabench.envs.sim.assets import cache_dir

        return cache_dir() / "limits" / f"{self.key}{SUFFIX}"

    def book(self, tokens: int, interval: float, tok_rate: float) -> float:
        """Book one request of ``tokens`` at ``interval`` s per request and ``tok_rate`` tokens/s
        (0: no such limit); returns the seconds until its slot."""
        with self._state() as state:
            now = self.clock()
            slot = max(now, *state)
            if interval:
                state[0] = slot + interval
            if tok_rate:
                state[1] = slot + max(0, tokens) / tok_rate
            return slot - now

    def settle(self, delta: int, tok_rate: float) -> None:
        """A reply used ``delta`` tokens more (or fewer) than booked: later slots move back (or forward)."""
        if tok_rate and delta:
            with self._state() as state:
                state[1] += delta / tok_rate

    def pause(self, seconds: float) -> None:
        """The provider said Retry-After: no caller of the key gets a slot before now + ``seconds``."""
        with self._state() as state:
            state[2] = max(state[2], self.clock() + max(0.0, float(seconds)))

    def read(self) -> tuple[float, float, float]:
        """The schedule as stored: (next request slot, next token slot, paused until)."""
        with self._state() as state:
            return tuple(state)

    @contextmanager
    def _state(self) -> Iterator[list[float]]:
        with self._mutex:
            fd = self._lock()
            try:
                raw = os.pread(fd, _STATE.size, 0)
                state = list(_STATE.unpack(raw)) if len(raw) == _STATE.size else [0.0, 0.0, 0.0]
                if not all(map(math.isfinite, state)) or max(state) > self.clock() + AHEAD_S:
                    state = [0.0, 0.0, 0.0]  # garbage, or written before the clock went back
                before = list(state)
                yield state
                if state != before:
                    os.pwrite(fd, _STATE.pack(*state), 0)  # one small write: whole or not at all
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _lock(self) -> int:
        """The file's descriptor, locked; waits at most ``lock_wait_s``."""
        deadline, nap = time.monotonic() + self.lock_wait_s, 0.0005
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise BudgetBusy(f"{self.path} stayed locked for {self.lock_wait_s:g} s") from None
                time.sleep(nap)
                nap = min(2 * nap, 0.02)
                continue
            if _same_file(fd, self.path):
                return fd
            fcntl.flock(fd, fcntl.LOCK_UN)  # removed as stale while this process kept it open: open the new one
            os.close(fd)
            self._fd = None

    def _open(self) -> int:
        if self._fd is None or self._pid != os.getpid():
            folder = self.path.parent
            folder.mkdir(parents=True, exist_ok=True)
            if str(folder) not in _swept:
                _swept.add(str(folder))
                sweep(folder, self.clock)
            self._fd, self._pid = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600), os.getpid()
        return self._fd


def _same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def sweep(folder: Path, clock: Callable[[], float] = time.time) -> list[str]:
    """Remove budget files untouched for :data:`STALE_S` (under their lock: a user reopens the new
    file); returns the names removed."""
    gone = []
    for path in folder.glob(f"*{SUFFIX}"):
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if clock() - os.fstat(fd).st_mtime > STALE_S and _same_file(fd, path):
                path.unlink()
                gone.append(path.name)
        except OSError:  # in use, or removed meanwhile
            pass
        finally:
            os.close(fd)
    return gone
