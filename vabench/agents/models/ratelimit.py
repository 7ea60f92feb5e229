"""A run's rate limits for one model: requests per minute (``model.rpm``) and tokens per minute
(``model.tpm``), shared by every caller (threads here; a Ray actor wraps it across workers).

GCRA (virtual scheduling) without burst: each request is booked a slot at least ``60 / rpm`` s
after the previous one and at least ``tokens / (tpm / 60)`` s after the previous request's
tokens, never earlier than now. Requests are spread evenly instead of leaving in bursts, so a
provider that counts a sliding 60 s window never sees more than the limit, whichever window it
looks at; a token bucket with burst would be fine against a fixed-minute counter and fail
against a sliding one. An idle period earns no credit for the same reason.

Headroom: the effective rates are ``rpm * (1 - headroom)`` and ``tpm * (1 - headroom)``. Even
spacing at exactly ``rpm`` puts rpm + 1 requests into a closed 60 s window, and network jitter
can move two requests closer than their slots; at rpm=120 the default 2 % (about 117.6/min)
leaves 1.2 s of slack per window. Tokens are paced the same way, so any 60 s window carries at
most ``tpm * (1 - headroom)`` tokens plus one request's, as long as the estimates booked are not
below the real usage (the client books ``max_tokens`` for the reply and settles it on arrival).

The caller sleeps, not the limiter: :meth:`RateLimiter.acquire` books the slot at once (so
concurrent callers get increasing slots) and returns how long to wait, which also works through
a remote actor. Standard library only; every method takes one lock.

Shared: with ``shared`` (a :class:`vabench.agents.models.keybudget.KeyBudget`) the schedule is the key's,
common to every run of the key on the machine or cluster; the spend and the figures stay the run's.
Where the budget cannot be reached the run paces by itself, and says so once.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable

WINDOW_S = 60.0
HEADROOM = 0.02

log = logging.getLogger(__name__)


def pace(rpm: float | None, tpm: float | None, headroom: float = HEADROOM) -> tuple[float, float]:
    """(seconds between requests, tokens per second) at the limits less headroom; 0: no such limit."""
    interval = WINDOW_S / (rpm * (1 - headroom)) if rpm else 0.0
    return interval, tpm * (1 - headroom) / WINDOW_S if tpm else 0.0


class RateLimiter:
    """``rpm`` / ``tpm``: requests / tokens per minute, None = unlimited. With neither it only counts
    and honours :meth:`pause` (a provider's Retry-After still holds every caller back). ``shared``:
    the key's budget the slots come from (book/settle/pause), or None: this limiter's own."""

    def __init__(
        self,
        rpm: float | None,
        tpm: float | None,
        headroom: float = HEADROOM,
        clock: Callable[[], float] = time.monotonic,
        spent: float = 0.0,
        shared=None,
    ):
        for key, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and (isinstance(value, bool) or not value > 0):
                raise ValueError(f"{key} must be None or a number > 0, got {value!r}")
        if not 0 <= headroom < 1:
            raise ValueError(f"headroom must be in [0, 1), got {headroom!r}")
        self.rpm, self.tpm, self.headroom, self._clock, self.shared = rpm, tpm, headroom, clock, shared
        self._interval, self._tok_rate = pace(rpm, tpm, headroom)  # seconds between requests, tokens per second
        self._unshared = False  # the shared budget's last call failed (said when it starts failing)
        self._lock = threading.Lock()
        self._next_req = self._next_tok = self._paused_until = float("-inf")  # earliest next slot of each
        self._recent: list[float] = []  # sorted slots granted within the last window or booked ahead
        self._requests = self._pauses = self._tokens = 0
        self._wait_s, self._spent = 0.0, float(spent)  # spent: US dollars charged before (a resumed run)

    def __reduce__(self):
        """Pickling gives a fresh limiter with the same limits: slots are times on this process's
        clock and mean nothing in another one (the spend and the shared budget's name carry over)."""
        return type(self), (self.rpm, self.tpm, self.headroom, self._clock, self._spent, self.shared)

    def acquire(self, tokens: int) -> float:
        """Book one request of ``tokens`` estimated tokens; returns the seconds to sleep before sending it."""
        tokens = max(0, int(tokens))
        with self._lock:
            now = self._clock()
            wait = self._shared("book", tokens, self._interval, self._tok_rate)
            if wait is None:  # this limiter's own schedule
                slot = max(now, self._next_req, self._next_tok, self._paused_until)
                if self.rpm:
                    self._next_req = slot + self._interval
                if self.tpm:
                    self._next_tok = slot + tokens / self._tok_rate
                wait = slot - now
            slot = now + wait
            self._requests += 1
            self._tokens += tokens
            self._wait_s += wait
            bisect.insort(self._recent, slot)  # a refund by settle() can book a slot before earlier ones
            self._prune(now)
            return wait

    def settle(self, reserved: int, used: int) -> None:
        """Correct the token schedule with what a reply really used (prompt + completion tokens)
        against the estimate booked by :meth:`acquire`: more pushes later callers back, less frees time."""
        delta = int(used) - int(reserved)
        with self._lock:
            self._tokens += delta
            if self.tpm and self._shared("settle", delta, self._tok_rate) is None:
                self._next_tok += delta / self._tok_rate

    def pause(self, seconds: float) -> None:
        """The provider said Retry-After: no slot is granted before now + ``seconds`` (to any caller).
        Slots booked earlier stand: their callers are already asleep."""
        with self._lock:
            self._paused_until = max(self._paused_until, self._clock() + max(0.0, float(seconds)))
            self._shared("pause", seconds)
            self._pauses += 1

    def charge(self, cost_usd: float) -> None:
        """Add what a reply cost (US dollars): the run's spend, which model.max_cost_usd caps."""
        with self._lock:
            self._spent += max(0.0, float(cost_usd))

    def spent(self) -> float:
        """US dollars charged so far (the run's spend before this launch included, see charge())."""
        with self._lock:
            return self._spent

    def stats(self) -> dict:
        """``requests``: acquired in all; ``rpm``: granted within the last 60 s; ``wait_s``: all waits
        returned; ``paused``: pause() calls; ``tokens``: booked tokens after settling; ``spent_usd``: charged."""
        with self._lock:
            now = self._clock()
            self._prune(now)
            return {
                "requests": self._requests,
                "rpm": bisect.bisect_right(self._recent, now),  # not the slots booked ahead
                "wait_s": self._wait_s,
                "paused": self._pauses,
                "tokens": self._tokens,
                "spent_usd": self._spent,
                "rpm_limit": self.rpm,
                "tpm_limit": self.tpm,
                "shared": self.shared is not None and not self._unshared,
            }

    def _shared(self, method: str, *args) -> float | None:
        """Call the shared budget (under this limiter's lock); None: there is none, or it failed."""
        if self.shared is None:
            return None
        try:
            answer = float(getattr(self.shared, method)(*args) or 0.0)
        except Exception as exc:  # a busy or unwritable budget file: pace by this limiter alone
            if not self._unshared:
                log.warning("shared rate budget %s failed (%s: %s); pacing alone", method, type(exc).__name__, exc)
            self._unshared = True
            return None
        self._unshared = False
        return answer

    def _prune(self, now: float) -> None:
        del self._recent[: bisect.bisect_right(self._recent, now - WINDOW_S)]
