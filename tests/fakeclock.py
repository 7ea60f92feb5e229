"""A clock the test owns, for code that reads the time and waits through an injected pair
(``clock``, ``sleep``): nothing really waits, and every wait asked for is recorded, so a test
asserts on the waits and on times read from this clock, never on the wall clock."""

from __future__ import annotations

import threading
from collections.abc import Callable


class FakeClock:
    """``clock()`` reads the time; ``clock.sleep(s)`` records ``s`` and moves the time on to the
    sleeper's wake-up (sleeps of several threads overlap, as they would on the wall clock).

    ``step``: seconds each reading adds, so that a duration measured between two readings counts
    the readings between them. ``gate``: called inside every sleep, between its start and its
    wake-up; a test holds a sleeper there until another thread has done what it must first."""

    def __init__(self, t: float = 100.0, step: float = 0.0, gate: Callable[[], object] = lambda: None):
        self.t, self.step, self.gate = t, step, gate
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            now = self.t
            self.t += self.step
            return now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            wake = self.t + seconds
        self.gate()
        with self._lock:
            self.t = max(self.t, wake)
