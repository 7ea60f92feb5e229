"""The driver's backstop: it kills a worker that is stuck, never one that is only slow.

An episode over its time limit ends itself at its next model call; one inside a simulator call, or
a worker whose process stopped running Python (a native call holding the GIL, SIGSTOP), cannot.
On an oversubscribed node a busy worker may take minutes to answer a check (a render holds the
GIL), so the backstop never waits for an answer and never judges by one's speed. It judges by
evidence of progress, any of:

- the worker's progress counter advancing: its episodes bump it at every simulator call (physics
  steps, renders), model call and stage of building a scene, and push it, at most every
  :data:`PUSH_S`, to a small board actor on the driver's node (:class:`ProgressBoard`), which the
  driver reads without waiting;
- an answer to a check (one outstanding per worker, collected whenever it comes);
- an episode of the worker finishing, or the worker taking a new one after idling.

A worker with episodes in flight and no such evidence for ``ray.hang_s`` x load is killed; so is
one whose check names an episode inside one simulator call for over ``ray.stuck_s`` x load. Load
is the driver node's one-minute load average per CPU, at least 1: limits grow with the crowding
that slows honest workers. Every kill says why, with the key to raise.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

PUSH_S = 2.0  # a worker pushes its progress counter at most this often


def load_factor() -> float:
    """The driver node's one-minute load average per CPU, at least 1."""
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:
        return 1.0


class ProgressBoard:
    """Progress counters by worker id: bumped by workers (fire and forget), read by the driver;
    with each, the usage so far of the episodes running on that worker (the progress bar's
    in-flight figures: (calls, tokens, dollars) by the attempt's record place)."""

    def __init__(self):
        self.counts: dict[str, int] = {}
        self.usage: dict[str, dict[str, tuple]] = {}

    def bump(self, worker_id: str, count: int, live: dict[str, tuple] | None = None) -> None:
        self.counts[worker_id] = count
        if live is not None:
            self.usage[worker_id] = live

    def read(self) -> dict[str, int]:
        return dict(self.counts)

    def live(self) -> dict[str, tuple]:
        return {place: u for by_place in self.usage.values() for place, u in by_place.items()}


class Progress:
    """A worker's progress counter and its running episodes' usage so far, pushed to the run's
    board (Ray) at most every :data:`PUSH_S`."""

    def __init__(self, board=None, worker_id: str = "", clock=time.monotonic):
        self.board, self.worker_id, self.clock = board, worker_id, clock
        self.count, self._pushed = 0, float("-inf")
        self.live: dict[str, tuple[int, int, float]] = {}  # by record place: calls, tokens, dollars

    def bump(self, push: bool = False) -> None:
        self.count += 1
        if self.board is not None and (push or self.clock() - self._pushed >= PUSH_S):
            self._pushed = self.clock()
            self.board.bump.remote(self.worker_id, self.count, dict(self.live))

    def counted(self, place: str, usage) -> None:
        """An episode's usage so far (a :class:`~vabench.agents.chat.model.Usage`), after a model call:
        pushed at once (a call takes seconds; the next may take minutes, and the bar must not lag)."""
        self.live[place] = (usage.model_calls, usage.prompt_tokens + usage.completion_tokens, usage.cost_usd or 0.0)
        self.bump(push=True)

    def ended(self, place: str) -> None:
        """The episode came back to the driver with its row: the row counts from now on."""
        self.live.pop(place, None)


@dataclass(frozen=True)
class Limits:
    check_every_s: float  # ray.check_every_s
    hang_s: float  # ray.hang_s: no evidence of progress this long (x load): hung
    stuck_s: float  # ray.stuck_s: one simulator call this long (x load): stuck


class Backstop:
    """``backend``: ask(worker, limit_s) -> ref, read_board() -> ref | None, worker_id(worker),
    wait(refs, 0, every=True), get(ref)."""

    def __init__(self, backend, limits: Limits, clock=time.monotonic, load=load_factor):
        self.backend, self.limits, self.clock, self.load = backend, limits, clock, load
        self.life: dict[int, float] = {}  # id(worker) -> last evidence of progress
        self.checks: dict[int, object] = {}  # id(worker) -> its outstanding check
        self.counts: dict[str, int] = {}  # worker id -> last progress count read
        self._board = None  # the outstanding board read
        self._last = clock()

    def alive(self, worker) -> None:
        """Evidence of progress seen by the driver itself (placed, finished an episode, took one)."""
        self.life[id(worker)] = self.clock()

    def due(self) -> bool:
        if self.clock() - self._last < self.limits.check_every_s:
            return False
        self._last = self.clock()
        return True

    def verdicts(self, busy: list) -> list[tuple[object, str]]:
        """The busy workers to kill, each with why."""
        now, load = self.clock(), self.load()
        self._read_board(busy, now)
        out = []
        for worker in busy:
            why = self._judge(worker, now, load)
            if why:
                out.append((worker, why))
                self.checks.pop(id(worker), None)
                self.life.pop(id(worker), None)
        return out

    def _judge(self, worker, now: float, load: float) -> str | None:
        key = id(worker)
        self.life.setdefault(key, now)
        check = self.checks.get(key)
        if check is not None and self._ready(check):
            self.checks.pop(key)
            try:
                stuck = self.backend.get(check)
            except Exception:  # the worker died: its episodes come back as a crash anyway
                return None
            self.life[key] = now
            if stuck:
                limit = self.limits.stuck_s * load
                return (
                    f"an episode was inside one simulator call for over {limit:.0f} s "
                    f"(ray.stuck_s={self.limits.stuck_s:g} x load {load:.1f})"
                )
        if key not in self.checks:
            self.checks[key] = self.backend.ask(worker, self.limits.stuck_s * load)
        silent, limit = now - self.life[key], self.limits.hang_s * load
        if silent > limit:
            return (
                f"no sign of progress for {silent:.0f} s: no simulator step, render or model call, no answer to "
                f"a check, no episode finished (over ray.hang_s={self.limits.hang_s:g} x load {load:.1f})"
            )
        return None

    def _read_board(self, busy: list, now: float) -> None:
        if self._board is None:
            self._board = self.backend.read_board()
            return
        if not self._ready(self._board):
            return
        try:
            counts = self.backend.get(self._board)
        except Exception:  # the board is the driver's own actor; a failed read only delays evidence
            counts = {}
        self._board = None
        for worker in busy:
            wid = self.backend.worker_id(worker)
            if wid in counts and counts[wid] != self.counts.get(wid):
                self.counts[wid] = counts[wid]
                self.life[id(worker)] = now

    def _ready(self, ref) -> bool:
        return bool(self.backend.wait([ref], 0, every=True))
