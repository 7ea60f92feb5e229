"""The driver's env workers and their episode slots: a run that never waits forever for a worker.

A Ray cluster may not hold every worker a run asks for (several runs share it, a node went away):
a worker Ray cannot place stays pending, and an episode submitted to it would wait with it. So the
pool hands out only slots of *live* workers (their start-up answered), and a re-queued episode runs
on any live worker with a free slot. A worker pending (or starting) for over
``ray.place_timeout_s`` while the run has a live one is given up (Ray cancels it) with one line
saying what the cluster lacks; a run with no live worker for ``ray.starve_timeout_s`` stops as
interrupted (:class:`ClusterStarved`, resumable). Both bounds are multiplied by the driver node's
load per CPU (at least 1), like the backstop's: a crowded node starts workers slowly. A worker
that dies while starting (a busy node's worker that never registered, a constructor that failed)
is started again after :data:`RETRY_S` (doubled each time), :data:`START_TRIES` times in all,
each failure said in one line; a run none of whose workers could start stops. Once no
episode is left to start, idle workers are released at once, so their CPUs go
to the other runs on the cluster instead of waiting for this run's last episodes.

Runs share a full cluster fairly (Ray places workers first come, first served, and never takes
one back): while another run on the cluster has workers pending and none live, a run holding more
than its share (the workers the cluster holds / the runs wanting some) retires its extra workers
as their episodes end, and a run with none live keeps no more than its share of requests pending.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from vabench.core.errors import ClusterStarved, one_line
from vabench.run.actors.workerconfig import spread

from .backstop import load_factor

SHARE_EVERY_S = 10.0  # how often a run looks for runs starved of workers
START_TRIES = 3  # starts of one worker before it is given up: a start that failed on a busy node often works later
RETRY_S = 5.0  # the wait before a failed start is tried again, doubled for each further try


@dataclass
class Member:
    """One worker of the pool: its slots, when it was asked for, and its start-up answer (None once live)."""

    worker: object
    slots: int
    made: float
    placing: object | None
    busy: int = 0
    retired: bool = False  # making room for a starved run: no new episode, released once idle
    tries: int = 1  # this worker is the tries-th start of its place in the pool


class WorkerPool:
    """``backend``: the run's backend (new_worker, placing, wait, get, kill, release, lacks);
    ``place_s``/``starve_s``: ``ray.place_timeout_s`` and ``ray.starve_timeout_s``."""

    def __init__(self, backend, place_s: float, starve_s: float, log=print, clock=time.monotonic, load=None):
        self.backend, self.place_s, self.starve_s, self.log, self.clock = backend, place_s, starve_s, log, clock
        self.load = load or load_factor  # the bounds grow with the node's load: a crowded node starts workers slowly
        self.members: dict[int, Member] = {}
        self.crashes = 0  # workers lost (died, or killed by the backstop) and replaced
        self.given_up = 0  # workers never placed within place_s
        self._live_at = clock()  # when the pool last had a live worker (or was started)
        self._failed: list[str] = []  # why workers died while starting, each given up after START_TRIES
        self._later: list[tuple[float, int, int]] = []  # (when, slots, tries): starts to try again
        self._new: list = []  # workers placed since newly_live() was last asked
        self._shared = float("-inf")  # when the fair share was last looked at

    # -- membership -----------------------------------------------------------------------------
    def start(self, slots: int, actors: int) -> None:
        """Ask for workers for ``slots`` episodes at once, spread over up to ``actors`` workers."""
        for k in spread(slots, actors):
            self._add(k)

    def _add(self, slots: int, tries: int = 1) -> None:
        worker = self.backend.new_worker(slots)
        self.members[id(worker)] = Member(worker, slots, self.clock(), self.backend.placing(worker), tries=tries)

    def lost(self, worker) -> bool:
        """The worker died or was judged hung: kill it (never left beside its replacement) and ask
        for one replacement with as many slots. False if it was already lost or given up."""
        m = self.members.pop(id(worker), None)
        if m is None:
            return False
        self.backend.kill(worker)
        self.crashes += 1
        self._add(m.slots)
        return True

    # -- slots ------------------------------------------------------------------------------------
    def seat(self):
        """A live worker with a free slot (taken), or None."""
        free = [m for m in self.members.values() if m.placing is None and not m.retired and m.busy < m.slots]
        if not free:
            return None
        m = max(free, key=lambda m: m.slots - m.busy)  # the emptiest: episodes spread over processes
        m.busy += 1
        return m.worker

    def done(self, worker) -> None:
        """A slot of ``worker`` came free (no-op for a worker already lost)."""
        m = self.members.get(id(worker))
        if m is not None:
            m.busy -= 1

    def busy(self) -> list:
        return [m.worker for m in self.members.values() if m.busy > 0]

    def live(self) -> list:
        return [m.worker for m in self.members.values() if m.placing is None]

    def pending_refs(self) -> list:
        return [m.placing for m in self.members.values() if m.placing is not None]

    def newly_live(self) -> list:
        """Workers whose start-up answered since the last call (the backstop starts watching them)."""
        out, self._new = self._new, []
        return out

    # -- the bound on every wait ----------------------------------------------------------------
    def tick(self, wanted: bool) -> None:
        """Note placements; with no episode left to start (``wanted`` false) release idle workers and
        cancel pending ones; give up workers pending too long; stop a run that has none."""
        self._note_placements()
        now = self.clock()
        self._start_again(now, wanted)
        if wanted and now - self._shared >= SHARE_EVERY_S:
            self._shared = now
            self._share()
        for m in list(self.members.values()):
            if m.busy == 0 and (m.retired or not wanted):
                self.members.pop(id(m.worker))
                (self.backend.kill if m.placing is not None else self.backend.release)(m.worker)
        live = self.live()
        if live:
            self._live_at = now
        pending = [m for m in self.members.values() if m.placing is not None]
        load = self.load()
        late = [m for m in pending if now - m.made > self.place_s * load]
        if live and late:
            self._give_up(late, now, len(live), load)
        elif not live and (pending or wanted):
            self._starving(pending, now, load)

    def _share(self) -> None:
        """Make room for runs starved of workers (see the module's docstring)."""
        runs = self.backend.runs()
        if not runs:
            return
        wanting = sum(live + pending > 0 for live, pending in runs.values())
        share = max(1, self.backend.capacity() // max(1, wanting))
        live = [m for m in self.members.values() if m.placing is None and not m.retired]
        pending = [m for m in self.members.values() if m.placing is not None]
        if not live and len(pending) > share:  # starved: ask for no more than a share
            extra = sorted(pending, key=lambda m: m.made)[share:]
            for m in extra:
                self.members.pop(id(m.worker))
                self.backend.kill(m.worker)
            self.given_up += len(extra)
            self.log(
                f"{len(extra)} of this run's {len(pending)} pending worker(s) given up: the cluster holds "
                f"{self.backend.capacity()} and {wanting} run(s) want some ({self.backend.lacks()})"
            )
        starved = [job for job, (n, waiting) in runs.items() if job != "self" and n == 0 and waiting > 0]
        if starved and len(live) > share:
            extra = sorted(live, key=lambda m: m.busy)[: len(live) - share]
            for m in extra:
                m.retired = True
            self.log(
                f"{len(starved)} other run(s) on the cluster have no worker: retiring {len(extra)} of this run's "
                f"{len(live)} as their episodes end (a fair share is {share})"
            )

    def _note_placements(self) -> None:
        pending = {id(m.placing): m for m in self.members.values() if m.placing is not None}
        if not pending:
            return
        for ref in self.backend.wait(list(m.placing for m in pending.values()), 0, every=True):
            m = pending[id(ref)]
            try:
                self.backend.get(ref)
            except Exception as e:  # it died starting (a busy node, a node without Vulkan, an import error)
                self.members.pop(id(m.worker))
                self.backend.kill(m.worker)
                self._died_starting(m, one_line(e))
                continue
            m.placing = None
            self._new.append(m.worker)

    def _died_starting(self, m: Member, why: str) -> None:
        """Start it again after a bounded wait, or give it up after :data:`START_TRIES` starts."""
        if m.tries < START_TRIES:
            wait = RETRY_S * 2 ** (m.tries - 1)
            self._later.append((self.clock() + wait, m.slots, m.tries + 1))
            again = f"starting it again in {wait:g} s (try {m.tries + 1} of {START_TRIES})"
            self.log(f"a worker died while starting ({why}); {again}")
            return
        self._failed.append(why)
        self.log(f"a worker died while starting ({why}); given up after {START_TRIES} tries")

    def _start_again(self, now: float, wanted: bool) -> None:
        """Start the workers whose wait is over (none once no episode is left to start)."""
        due = [x for x in self._later if x[0] <= now or not wanted]
        self._later = [x for x in self._later if x not in due]
        for _, slots, tries in due if wanted else ():
            self._add(slots, tries)

    def _give_up(self, late: list[Member], now: float, live: int, load: float) -> None:
        for m in late:
            self.members.pop(id(m.worker))
            self.backend.kill(m.worker)  # Ray cancels a pending actor: its request leaves the cluster
        self.given_up += len(late)
        oldest = max(now - m.made for m in late)
        self.log(
            f"{len(late)} worker(s) pending for {oldest:.0f} s (ray.place_timeout_s={self.place_s:g} x load "
            f"{load:.1f}): {self.backend.lacks()}; given up, their episodes run on the {live} live worker(s)"
        )

    def _starving(self, pending: list[Member], now: float, load: float) -> None:
        if not pending:
            if self._later:  # a failed start waits to be tried again
                return
            why = "; ".join(self._failed[-3:]) or "no worker left"
            raise ClusterStarved(f"no worker could start ({START_TRIES} tries each): {why}")
        waited = now - max(self._live_at, min(m.made for m in pending))
        if waited > self.starve_s * load:
            raise ClusterStarved(
                f"{len(pending)} worker(s) pending for {waited:.0f} s and none live "
                f"(ray.starve_timeout_s={self.starve_s:g} x load {load:.1f}): {self.backend.lacks()}"
            )

    def close(self) -> None:
        """The run is over: idle workers free their scenes and end; pending ones are cancelled."""
        for m in list(self.members.values()):
            (self.backend.release if m.placing is None else self.backend.kill)(m.worker)
        self.members.clear()
        self._later.clear()
