"""One simulator worker: a process that hosts up to ``slots`` episodes at once, each on its own
env (scene) and model client. The driver's backend runs it as a threaded Ray actor, or in the
driver's process (``ray.address=none``, one slot).

Results reach the run folder through the driver, from any node: an episode returns its outcome
row, and the driver writes it. Its record (events and frames) goes straight into the run folder
where the worker sees the driver's run folder (the same machine, or a shared filesystem: checked
by the lock's token, so an unrelated folder at the same path never counts), live, so an
interrupted episode keeps its partial record; elsewhere it is written to node-local scratch and
travels back with the row (:mod:`vabench.run.folder.scratch`).

Model latency dominates an episode (seconds per call, against ~0.1 s of simulator work per
decision), so the episodes of a worker run as threads: while some wait for their models, one
steps. The simulator is not shared between threads: every env call holds the worker's
simulator lock (:func:`vabench.agents.episode.run_episode`). The scenes share the process's
renderer, compiled shaders and robot assets; with several slots they keep no render targets
between renders (``EnvConfig.hold_cameras``), so an extra episode costs a few MB, not ~35, except
under ``control=ee_delta``, whose episodes render every control step (every 0.1 s of simulated
time, not every model reply): remaking the targets cost them ~7% more CPU per step.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from vabench.agents.chat.model import ModelConfig
from vabench.agents.episode import Episode, Runtime, run_episode
from vabench.agents.models.cache import CachedModel
from vabench.agents.models.kinds import make_model
from vabench.agents.summaries.learning import learn_summary
from vabench.agents.summaries.summary_store import SummaryStore
from vabench.core.boundary import Participant
from vabench.core.condition import DEFAULT_RENDER, Condition
from vabench.core.errors import CostCapReached
from vabench.core.vocab import ControlMode, EndReason
from vabench.envs import EnvConfig, VABenchEnv
from vabench.results.layout import CACHE
from vabench.results.records import set_aside
from vabench.run.folder.lock import DriverWatch, _snapshot
from vabench.run.folder.scratch import Scratch, pack, read

from .backstop import Progress
from .workerconfig import WorkerConfig

logging.getLogger("toppra").setLevel(logging.ERROR)


WATCH_S = 0.5  # how often a worker checks that its driver still holds the run folder


@dataclass
class Seat:
    """One episode place in a worker: an env and a model client of its own (offline agents keep
    per-episode state), and the running episode's clocks."""

    model: Participant  # a chat model or an agent that reads observations (vabench.core.boundary)
    env: VABenchEnv | None = None  # built for the first episode's condition look (EpisodeWorker.env_for)
    key: str | None = None  # the running episode (its folder key), None when free
    started: float = 0.0
    limiter_s: float = 0.0  # waits not counted as its work so far: rate limits, neighbours holding the simulator
    in_sim: float | None = None  # since when it holds the simulator lock (None: it does not)
    scratch: tuple[str, Path] | None = None  # (place in the run folder, scratch folder) of a record kept here

    def active_s(self) -> float:
        """Seconds the running episode has worked: wall time less its waits on the run's rate limits."""
        return time.monotonic() - self.started - self.limiter_s


class _SeatLock:
    """The worker's simulator lock as one seat takes it: the seat notes since when it holds it, so
    the driver can tell an episode stuck inside the simulator from one waiting for its model; the
    wait for the lock (neighbours' simulator calls) is not the episode's work, so its time limit
    skips it; every call made bumps the worker's progress counter (the backstop's evidence)."""

    def __init__(self, lock: threading.RLock, seat: Seat, progress: Progress | None = None):
        self.lock, self.seat, self.progress = lock, seat, progress

    def __enter__(self) -> None:
        asked = time.monotonic()
        self.lock.acquire()
        self.seat.in_sim = time.monotonic()
        self.seat.limiter_s += self.seat.in_sim - asked

    def __exit__(self, *exc) -> None:
        self.seat.in_sim = None
        self.lock.release()
        if self.progress is not None:
            self.progress.bump()


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

    def charge(self, cost_usd: float) -> None:
        self.shared.charge(cost_usd)

    def spent(self) -> float:
        return self.shared.spent()


def sees_run_folder(lock: tuple[str, str] | None) -> bool:
    """This process sees its driver's run folder: the lock file there holds the driver's token
    (None: the worker runs in the driver's process)."""
    if lock is None:
        return True
    snap = _snapshot(Path(lock[0]))
    return snap is not None and snap[0] is not None and snap[0].get("token") == lock[1]


class EpisodeWorker:
    """One worker (:class:`~vabench.run.actors.workerconfig.WorkerConfig`). ``config.lock`` (path,
    token): the driver's run-folder lock. A worker in its own process (Ray) that sees the run folder
    ends itself once that driver is gone (within :data:`WATCH_S` where the driver's pid can be
    checked, after the lock's stale time elsewhere) or another driver took the folder over, and never
    writes a record event after that; in the driver's process it is None. A worker that cannot see
    the run folder writes nothing there, sends each record back with its row, and is ended by Ray
    with its driver. It runs ``config.slots`` episodes at once (:meth:`run` called from that many
    threads); an episode that has worked ``config.timeout_s`` (limit waits excluded) ends as an
    infra error at its next model call."""

    def __init__(self, config: WorkerConfig):
        self.config = config
        ship = not sees_run_folder(config.lock)  # records go back with the rows, from this node's scratch
        self.scratch = Scratch(config.worker_id or uuid.uuid4().hex[:12]) if ship else None
        self.watch = DriverWatch(*config.lock) if config.lock is not None and not ship else None
        if self.watch is not None:
            threading.Thread(target=self._watch, name="driver-watch", daemon=True).start()
        self.limiter, self.timeout_s = config.limiter, config.timeout_s
        self.progress = Progress(config.board, config.worker_id or "")
        self.harness, self.run_dir = config.harness, Path(config.run_dir)
        self.sim_lock = threading.RLock()  # one simulator call at a time in this process
        self.seats = [self._seat(make_model(config.model)) for _ in range(config.slots)]
        self.free: queue.SimpleQueue[Seat] = queue.SimpleQueue()
        for seat in self.seats:
            self.free.put(seat)
        self.warm = False  # the renderer compiled its shaders (the first env's warm-up reset)
        self.seats[0].model.warm()

    def env_for(self, seat: Seat, condition: Condition) -> None:
        """Give ``seat`` an env built for ``condition``'s look, before the episode's clock starts.
        A run has one look, so this builds once per seat; with several slots no render targets are
        kept between renders (a few MB an extra episode, not ~35), but under control=ee_delta. Each
        stage is pushed to the board at once: a build takes no simulator step and may hold the GIL,
        so it is the backstop's only evidence that this worker is not hung."""
        if seat.env is not None and seat.env.config.look == condition.look:
            return
        hold = self.config.slots == 1 or condition.control == ControlMode.EE_DELTA  # renders every control step
        settings = {"recording": self.config.recording, "hold_cameras": hold}
        with self.sim_lock:
            self.progress.bump(push=True)
            if seat.env is not None:
                seat.env.close()
            seat.env = VABenchEnv(EnvConfig.of(condition, **settings))
            self.progress.bump(push=True)
            if not self.warm:  # compile the shaders now, not inside the first timed episode
                seat.env.reset("grasp_single_cube", 0)
                self.warm = True
                self.progress.bump(push=True)

    def _seat(self, model: Participant) -> Seat:
        seat = Seat(model)
        if self.limiter is not None:
            model.limiter = _SeatLimiter(self.limiter, seat)
        return seat

    def close(self) -> None:
        """Free every scene, every model's connections and the scratch folder (the run is over)."""
        with self.sim_lock:
            for seat in self.seats:
                seat.model.close()
                if seat.env is not None:
                    seat.env.close()
        if self.scratch is not None:
            self.scratch.close()

    def pid(self) -> int:
        return os.getpid()

    def partial(self) -> dict[str, dict[str, bytes]]:
        """The records so far of the episodes running now, by their place in the run folder, where
        they are kept in this node's scratch (the driver keeps them when it stops mid-run)."""
        out = {}
        for seat in self.seats:
            kept = seat.scratch  # read once: the episode thread may clear it
            if kept is not None:
                out[kept[0]] = read(kept[1])
        return out

    def stuck(self, limit_s: float) -> list[str]:
        """Keys of the running episodes that have been inside one simulator call for longer than
        ``limit_s`` (the driver's backstop: such an episode cannot end itself; one waiting for its
        model can, at its next call)."""
        now, out = time.monotonic(), []
        for seat in self.seats:
            key, since = seat.key, seat.in_sim  # read once: the episode thread may change them
            if key is not None and since is not None and now - since > limit_s:
                out.append(key)
        return out

    def _check_driver(self) -> None:
        why = self.watch.gone() if self.watch is not None else None
        if why:
            print(f"vabench worker {os.getpid()}: stopping, {why}", file=sys.stderr, flush=True)
            os._exit(3)  # at once: no result, no record events after this point

    def _watch(self) -> None:
        while True:
            try:
                self._check_driver()
            except Exception as e:  # the watch must outlive any odd read; the check before returning still holds
                print(f"vabench worker {os.getpid()}: driver watch: {type(e).__name__}: {e}", file=sys.stderr)
            time.sleep(WATCH_S)

    def run(self, episode: Episode) -> dict:
        """Run one episode on a free seat: ``{"row": its outcome row, "files": its record folder's
        files, or None when written in place}``. ``episode.summary``: the one the driver resolved
        for it; an ``own`` episode given none is one whose learning ended without a summary (not
        infra): it runs without, and its row says ``summary_learned`` false, so the analysis can
        count it."""
        seat = self.free.get()  # the driver never runs more episodes on a worker than it has seats
        self.env_for(seat, episode.spec.condition)
        seat.started, seat.limiter_s = time.monotonic(), 0.0
        seat.key = episode.spec.key  # last: a clock read by stuck() is this episode's
        try:
            return self._run(seat, episode)
        finally:
            seat.key, seat.scratch = None, None
            self.progress.ended(episode.spec.place(episode.attempt))
            self.free.put(seat)

    def _overdue(self, seat: Seat):
        """Checked before every model call: counts the call as progress, and ends an episode over its time."""
        limit = self.timeout_s

        def overdue() -> str | None:
            self.progress.bump()
            if limit is not None and seat.active_s() > limit:
                return f"episode exceeded {limit:g} s (episode_timeout_s; rate-limit waits excluded)"
            return None

        return overdue

    def _bind_cache(self, seat: Seat, episode: Episode) -> None:
        """Point a cached model at its episode's cache (``<run>/_cache/<episode key>``), where this
        worker sees the run folder; elsewhere the episode runs without one."""
        if isinstance(seat.model, CachedModel):
            seen = self.scratch is None
            seat.model.bind(self.run_dir / CACHE / episode.spec.key if seen else None)

    def _run(self, seat: Seat, episode: Episode) -> dict:
        place = episode.spec.place(episode.attempt)
        rel = Path(place)
        if self.scratch is not None:
            folder = self.scratch.folder(rel)
            seat.scratch = (rel.as_posix(), folder)
        else:
            folder = self.run_dir / rel
            set_aside(folder)  # left by an interrupted driver: kept, and this attempt starts afresh
        counted = functools.partial(self.progress.counted, place)
        runtime = Runtime(_SeatLock(self.sim_lock, seat, self.progress), self._overdue(seat), counted)
        self._bind_cache(seat, episode)
        try:
            result = run_episode(seat.env, seat.model, episode, folder, self.harness, runtime)
        except CostCapReached as e:  # interrupted (its record says so): no row; the driver stops or goes on
            seat.scratch = None
            files = pack(folder) if self.scratch is not None else None
            return {"row": None, "files": files, **capped(e)}
        result.record = (rel / result.record).as_posix()
        self._check_driver()
        seat.scratch = None
        return {"row": result.row(), "files": pack(folder) if self.scratch is not None else None}


def learn(
    model: ModelConfig,
    task: str,
    demo_root: str | None = None,
    limiter=None,
    render: str = DEFAULT_RENDER,
    board=None,
    key: str = "",
) -> dict:
    """Summary learning for one (model, task), on any node, from the demos recorded at the run's
    ``render`` preset: no simulator unless a demo must be recorded. Its requests go through the
    run's ``limiter`` like the episodes'. The summary and the learning record come back as text and
    files for the driver to store (workers never write the run's summary store, which another node
    may not see). It tells the run's progress ``board`` (under ``key``) that it started: the driver
    bounds how long a learning the cluster cannot place may wait."""
    if board is not None:
        board.bump.remote(key, 1)
    m = make_model(model)
    if limiter is not None:
        m.limiter = limiter
    demos = Path(demo_root) if demo_root else None
    scratch = Scratch(f"learn-{uuid.uuid4().hex[:12]}")
    try:
        store = SummaryStore(scratch.folder("summaries"))
        try:
            result = learn_summary(m, task, store, scratch.folder("record"), demos, preset=render)
            end, error, learned = result.end_reason, result.error, result.summary is not None
        except CostCapReached as e:  # model.max_cost_usd: the driver stops the run
            return {"task": task, **capped(e), "files": pack(scratch.root / "record"), "summary": None}
        except Exception as e:  # a crash: infra, and its record still reaches the driver
            end, error, learned = EndReason.INFRA_ERROR, f"{type(e).__name__}: {e}", False
        return {
            "task": task,
            "end_reason": end,
            "error": error,
            "learned": learned,
            "summary": store.path(m.name, task).read_text(encoding="utf-8") if learned else None,
            "files": pack(scratch.root / "record"),
        }
    finally:
        scratch.close()


def capped(stop: CostCapReached) -> dict:
    """What a worker sends back instead of a row when a cap stopped its episode or learning (the
    driver raises it again: :func:`vabench.run.spend.stopped`)."""
    return {"stopped": str(stop), "cost_limit": str(stop.limit), "spent": stop.spent, "cap": stop.cap}
