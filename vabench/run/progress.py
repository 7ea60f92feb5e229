"""The driver's progress bar: the stage the run is in (a run can spend minutes starting Ray,
learning summaries or placing workers before its first episode ends), the tally of judged
episodes, episodes in flight, model calls made, and the rate limiter's figures.

The tally is redrawn at once on every change and last at the end, so the final line is exact;
figures that cost a round trip to another process are asked for at most every :data:`ASK_S`.
"""

from __future__ import annotations

import time
from enum import StrEnum

from tqdm import tqdm

from vabench.run.spend import spend_shown

ASK_S = 2.0  # the limiter's and the workers' figures are asked for at most this often
TALLY = ("ok", "failed", "infra", "retried")  # the driver's counts the bar shows


class Stage(StrEnum):
    """What a run is doing, shown before the bar's count."""

    RAY = "starting Ray"
    SUMMARIES = "learning summaries"
    WORKERS = "starting workers"
    EPISODES = "episodes"


class ProgressBar:
    """``counts``: the driver's live tally (read, never written); ``name``: the run folder's name
    when several bars share a terminal (a parallel sweep), shown before the stage."""

    def __init__(
        self, total: int, counts: dict, enabled: bool, line: int | None = None, name: str | None = None, cap=None
    ):
        """``cap``: model.max_cost_usd, shown with the run's spend (None: no limit)."""
        self.counts, self.enabled, self.name, self.cap = counts, enabled, name, cap
        self.bar = tqdm(total=total, disable=not enabled, unit="ep", dynamic_ncols=True, position=line)
        self.inflight = 0
        self._asked, self._figures, self._postfix = float("-inf"), {}, None

    def stage(self, stage: Stage) -> None:
        self.bar.set_description_str(f"{self.name}: {stage}" if self.name else str(stage))

    def judged(self, n: int) -> None:
        """``n`` episodes reached their final row (draws the new count with its tally)."""
        self.bar.update(n)

    def show(self, backend, force: bool = False, draw: bool = True) -> None:
        """The tally (``infra``: episodes whose final attempt was an infra error; ``retried``:
        attempts re-queued after one), in flight, model calls and the limiter's rate and waits."""
        if not self.enabled:
            return
        if time.monotonic() - self._asked >= ASK_S:
            self._asked = time.monotonic()
            self._figures = _figures(backend, self.cap)
        elif not force:
            return
        shown = {k: self.counts[k] for k in TALLY} | {"in_flight": self.inflight} | self._figures
        if shown != self._postfix:  # redrawn on a change only: logs stay short
            self._postfix = shown
            self.bar.set_postfix(**shown, refresh=draw)

    def close(self) -> None:
        self.bar.close()


def _figures(backend, cap: float | None) -> dict:
    """Model calls made by this run's workers, and the limiter's rate, total wait and spend against
    ``cap``, where known."""
    out = {}
    calls = backend.calls()
    if calls is not None:
        out["calls"] = calls
    stats = backend.limit_stats()
    if stats:
        out |= {"rpm": f"{stats.get('rpm', 0):.0f}", "limit_wait": f"{stats.get('wait_s', 0.0) / 60:.1f}m"}
        out |= spend_shown(stats, cap)
    return out
