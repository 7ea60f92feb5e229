"""One simulator worker: a process that hosts up to ``slots`` episodes at once, each on its own
env (scene) and model client, and writes each outcome file before that episode's call returns.
The driver's backend runs it as a threaded Ray actor, or in the driver's process
(``ray.address=none``, one slot).

Model latency dominates an episode (seconds per call, against ~0.1 s of simulator work per
decision), so the episodes of a worker run as threads: while some wait for their models, one
steps. The simulator is not shared between threads: every env call holds the worker's
simulator lock (:func:`vabench.agents.harness.run_episode`). The scenes share the process's
renderer, compiled shaders and robot assets; with several slots they keep no render targets
between renders (``EnvConfig.hold_cameras``), so an extra episode costs a few MB, not ~35.
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from vabench.agents.harness import HarnessConfig, run_episode
from vabench.agents.learning import learn_summary
from vabench.agents.models import Model, ModelConfig
from vabench.agents.records import set_aside
from vabench.agents.registry import make_model
from vabench.agents.summary_store import SummaryStore, resolve_summary, summary_identity
from vabench.envs import CAMERA_PRESETS, EnvConfig, VABenchEnv
from vabench.outcomes import write_row
from vabench.vocab import TRANSFER

from .runlock import DriverWatch
from .specs import EpisodeSpec

logging.getLogger("toppra").setLevel(logging.ERROR)


WATCH_S = 0.5  # how often a worker checks that its driver still holds the run folder


@dataclass
class Seat:
    """One episode place in a worker: an env and a model client of its own (offline agents keep
    per-episode state), and the running episode's clock."""

    env: VABenchEnv
    model: Model
    key: str | None = None  # the running episode (its folder key), None when free
    started: float = 0.0
    limiter_s: float = 0.0  # limit waits granted to this episode so far

    def active_s(self) -> float:
        """Seconds the running episode has worked: wall time less its waits on the run's rate limits."""
        return time.monotonic() - self.started - self.limiter_s


class _SeatLimiter:
    """The run's shared rate limiter as one seat's model sees it: it books the waits it grants on
    the seat, so waiting on a limit never counts toward the episode's time limit."""

    def __init__(self, shared, seat: Seat):
        self.shared, self.seat = shared, seat

    def acquire(self, tokens: int) -> float:
        wait = self.shared.acquire(tokens)
        self.seat.limiter_s += wait
        return wait

    def settle(self, reserved: int, used: int) -> None:
        self.shared.settle(reserved, used)

    def pause(self, seconds: float) -> None:
        self.shared.pause(seconds)


class EpisodeWorker:
    """``lock`` (path, token): the driver's run-folder lock. A worker in its own process (Ray)
    ends itself once that driver is gone (within :data:`WATCH_S` where the driver's pid can be
    checked, after the lock's stale time elsewhere) or another driver took the folder over, and
    never writes an outcome after that; in the driver's process it is None.

    ``slots``: episodes this worker runs at once (:meth:`run` called from that many threads);
    ``limiter``: the run's shared rate limiter (acquire/settle/pause), or None; ``timeout_s``: an
    episode that has worked this long (limit waits excluded) ends as an infra error at its next
    model call."""

    def __init__(
        self,
        camera: str,
        harness: dict,
        model: dict,
        run_dir: str,
        summary_root: str,
        meta: dict,
        lock: tuple[str, str] | None = None,
        slots: int = 1,
        limiter=None,
        timeout_s: float | None = None,
    ):
        self.watch = DriverWatch(*lock) if lock is not None else None
        if self.watch is not None:
            threading.Thread(target=self._watch, name="driver-watch", daemon=True).start()
        self.camera, self.slots, self.limiter, self.timeout_s = camera, slots, limiter, timeout_s
        self.harness = HarnessConfig(**harness)
        self.model_cfg = ModelConfig(**model)
        self.run_dir, self.meta = Path(run_dir), meta
        self.store = SummaryStore(Path(summary_root))
        self.sim = threading.RLock()  # one simulator call at a time in this process
        self.seats: list[Seat] = []
        self.free: queue.SimpleQueue[Seat] = queue.SimpleQueue()
        self._seat_lock = threading.Lock()
        first = self._new_seat()
        with self.sim:
            first.env.reset("grasp_single_cube", 0)  # compile shaders now, not inside the first timed episode
        first.model.warm()
        self.free.put(first)

    def close(self) -> None:
        """Free every scene (the in-process backend, when its run is over)."""
        with self.sim:
            for seat in self.seats:
                seat.env.close()

    def _new_seat(self) -> Seat:
        with self.sim:  # building an env touches SAPIEN
            env = VABenchEnv(EnvConfig(camera=CAMERA_PRESETS[self.camera], hold_cameras=self.slots == 1))
        seat = Seat(env, make_model(self.model_cfg))
        if self.limiter is not None:
            seat.model.limiter = _SeatLimiter(self.limiter, seat)
        self.seats.append(seat)
        return seat

    def _take_seat(self) -> Seat:
        with self._seat_lock:
            try:
                return self.free.get_nowait()
            except queue.Empty:
                if len(self.seats) < self.slots:
                    return self._new_seat()
        return self.free.get()  # more calls than slots: wait for one (the driver never does this)

    def pid(self) -> int:
        return os.getpid()

    def overdue(self, limit_s: float) -> list[str]:
        """Keys of the running episodes that have worked longer than ``limit_s`` (the driver's
        backstop for an episode stuck inside the simulator, where its own time limit cannot act)."""
        return [s.key for s in self.seats if s.key is not None and s.active_s() > limit_s]

    def _check_driver(self) -> None:
        why = self.watch.gone() if self.watch is not None else None
        if why:
            print(f"vabench worker {os.getpid()}: stopping, {why}", file=sys.stderr, flush=True)
            os._exit(3)  # at once: no outcome, no record events after this point

    def _watch(self) -> None:
        while True:
            try:
                self._check_driver()
            except Exception as e:  # the watch must outlive any odd read; the pre-write check still holds
                print(f"vabench worker {os.getpid()}: driver watch: {type(e).__name__}: {e}", file=sys.stderr)
            time.sleep(WATCH_S)

    def run(self, spec: dict, attempt: int) -> dict:
        """Run one episode on a free seat and write its row; returns the row. An ``own`` summary
        missing here is one whose learning ended without a summary (not infra): the episode runs
        without it and its row says ``summary_learned`` false, so the analysis can count it."""
        s = EpisodeSpec(**spec)
        seat = self._take_seat()
        seat.key, seat.started, seat.limiter_s = s.key, time.monotonic(), 0.0
        try:
            return self._run(seat, s, attempt)
        finally:
            seat.key = None
            self.free.put(seat)

    def _overdue(self, seat: Seat):
        if self.timeout_s is None:
            return None
        limit = self.timeout_s
        return lambda: (
            f"episode exceeded {limit:g} s (episode_timeout_s; rate-limit waits excluded)"
            if seat.active_s() > limit
            else None
        )

    def _run(self, seat: Seat, s: EpisodeSpec, attempt: int) -> dict:
        summary = resolve_summary(self.store, s.summary_source, seat.model.name, s.task)
        told = summary_identity(summary, s.summary_source)
        folder = s.record_dir(self.run_dir) / f"attempt{attempt}"
        set_aside(folder)  # left by an interrupted driver: kept, and this attempt starts afresh
        result = run_episode(
            seat.env,
            seat.model,
            s.task,
            s.seed,
            folder,
            s.protocol,
            self.harness,
            summary=summary,
            summary_source=s.summary_source,
            transfer=s.track == TRANSFER,
            identity={**self.meta, **s.identity(), **told, "attempt": attempt},
            sim=self.sim,
            overdue=self._overdue(seat),
        )
        result.record = str(s.record_dir(self.run_dir).relative_to(self.run_dir) / f"attempt{attempt}" / result.record)
        self._check_driver()
        write_row(s.outcome_path(self.run_dir), result)
        return result.row()


def learn(model: dict, task: str, summary_root: str, learn_dir: str, demo_root: str | None = None) -> dict:
    """Summary learning for one (model, task): no simulator unless a demo must be recorded."""
    m = make_model(ModelConfig(**model))
    demos = Path(demo_root) if demo_root else None
    result = learn_summary(m, task, SummaryStore(Path(summary_root)), Path(learn_dir), demos)
    return {"task": task, "end_reason": result.end_reason, "error": result.error, "learned": result.summary is not None}
