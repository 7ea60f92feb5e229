"""The driver's progress bar: the stage the run is in (a run can spend minutes starting Ray,
learning summaries or placing workers before its first episode ends), the tally of judged
episodes, episodes in flight, the model calls, tokens and dollars spent, and the rate limiter's
figures.

Calls, tokens and spend are counted from what the rows are built from, the same on Ray, a cluster
and in this process: the usage columns of every row this launch wrote (added as the driver writes
it: exact), plus what the episodes in flight report through their workers (asked for at most every
:data:`ASK_S`, and counted only while the driver still has them in flight: never twice). So the last
line, drawn when nothing is in flight, is the rows' sums.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum

from tqdm import tqdm

from vabench.agents.chat.model import Usage
from vabench.agents.models.kinds import is_offline
from vabench.run.config.run import RunConfig
from vabench.run.folder.state import spent_before

ASK_S = 2.0  # the limiter's and the workers' figures are asked for at most this often
TALLY = ("ok", "failed", "infra", "retried")  # the driver's counts the bar shows


class Stage(StrEnum):
    """What a run is doing, shown before the bar's count."""

    RAY = "starting Ray"
    SUMMARIES = "learning summaries"
    WORKERS = "starting workers"
    EPISODES = "episodes"


@dataclass(frozen=True)
class Spending:
    """What the bar says about money: ``paid``: the model bills calls (tokens and spend are shown);
    ``cap``: model.max_cost_usd; ``before``: what the run folder records as spent by earlier
    launches, which the cap counts on from."""

    paid: bool = True
    cap: float | None = None
    before: float = 0.0

    @classmethod
    def of(cls, run: RunConfig) -> Spending:
        return cls(not is_offline(run.model.id), run.model.max_cost_usd, spent_before(run))


class ProgressBar:
    """``counts``: the driver's live tally (read, never written); ``name``: the run folder's name
    when several bars share a terminal (a parallel sweep), shown before the stage."""

    def __init__(
        self,
        total: int,
        counts: dict,
        enabled: bool,
        line: int | None = None,
        name: str | None = None,
        spending: Spending = Spending(),
    ):
        self.counts, self.enabled, self.name, self.spending = counts, enabled, name, spending
        self.bar = tqdm(total=total, disable=not enabled, unit="ep", dynamic_ncols=True, position=line)
        self.inflight: set[str] = set()  # the attempts in flight, by record place (EpisodeSpec.place)
        self.rows = Usage()  # the usage columns of the rows this launch wrote, summed
        self._asked, self._limiter, self._live, self._postfix = float("-inf"), {}, {}, None

    def stage(self, stage: Stage) -> None:
        self.bar.set_description_str(f"{self.name}: {stage}" if self.name else str(stage))

    def judged(self, n: int) -> None:
        """``n`` episodes reached their final row (draws the new count with its tally)."""
        self.bar.update(n)

    def row(self, row: dict) -> None:
        """A row the driver wrote: its calls, tokens and cost count at once."""
        cost = row.get("cost_usd")
        self.rows += Usage(
            model_calls=int(row.get("model_calls") or 0),
            prompt_tokens=int(row.get("prompt_tokens") or 0),
            completion_tokens=int(row.get("completion_tokens") or 0),
            cost_usd=None if cost is None else float(cost),
        )

    def figures(self) -> dict:
        """Model calls, tokens and spend: the rows written plus the episodes still in flight."""
        live = [u for place, u in self._live.items() if place in self.inflight]
        calls = self.rows.model_calls + sum(u[0] for u in live)
        out: dict = {"calls": calls}
        paying = self.spending
        if paying.paid:
            out["tokens"] = self.rows.prompt_tokens + self.rows.completion_tokens + sum(u[1] for u in live)
            if self.rows.cost_usd is not None:  # None: a price is unknown
                spent = money(paying.before + self.rows.cost_usd + sum(u[2] for u in live))
                out["spent"] = spent if paying.cap is None else f"{spent}/{paying.cap:g}"
        return out

    def show(self, backend, force: bool = False, draw: bool = True) -> None:
        """The tally (``infra``: episodes whose final attempt was an infra error; ``retried``:
        attempts re-queued after one), in flight, calls, tokens, spend and the limiter's rate and waits."""
        if not self.enabled:
            return
        if time.monotonic() - self._asked >= ASK_S:
            self._asked = time.monotonic()
            self._limiter, self._live = _limiter(backend), backend.live() or {}
        elif not force:
            return
        shown = {k: self.counts[k] for k in TALLY} | {"in_flight": len(self.inflight)} | self.figures()
        shown |= self._limiter
        if shown != self._postfix:  # redrawn on a change only: logs stay short
            self._postfix = shown
            self.bar.set_postfix(**shown, refresh=draw)

    def close(self) -> None:
        self.bar.close()


def _limiter(backend) -> dict:
    """The run's limiter's rate and total wait, where it has one."""
    stats = backend.limit_stats()
    if not stats:
        return {}
    return {"rpm": f"{stats.get('rpm', 0):.0f}", "limit_wait": f"{stats.get('wait_s', 0.0) / 60:.1f}m"}


def money(usd: float) -> str:
    """Dollars to the cent from $1, below to four places: a run's first calls cost fractions of a cent."""
    return f"${usd:.2f}" if usd >= 1 else f"${usd:.4f}"
