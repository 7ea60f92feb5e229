"""The driver, the one way episodes run: expand a run into episodes, learn missing summaries, and
keep env workers busy, on Ray or in this process (:mod:`vabench.run.actors.backends`).

Model latency dominates an episode, so throughput comes from many episodes in flight: Ray actors
(env workers), each hosting several episodes at once; without Ray (``ray.address=none``) one
worker runs them one after another for the same run folder. Correctness rules:

- results reach the run folder through the driver, from any node: a worker returns an episode's
  row (and, where it cannot see the run folder, its record) and the driver writes them, so a
  cluster needs no shared filesystem; summaries are learned anywhere and stored by the driver,
  which hands each episode its summary;
- every episode has one outcome file at a deterministic path; a rerun of the same run folder
  skips episodes whose file says ``ok`` and retries those that say ``infra_error`` with a fresh
  budget of ``max_attempts`` (``retry_infra=false``: keeps them);
- an attempt is consumed only by a failure of the episode itself: a worker that dies (crash,
  kill -9, timeout) is replaced and its episodes re-queued with ``attempt + 1`` (once each); an
  interrupted driver costs nothing (Ctrl-C first fetches the partial records a worker keeps in its
  node's scratch; the stale record folder is set aside and the same attempt runs afresh; an
  attempt that completed before the stop keeps its record, whose result becomes its row); the
  backend never re-runs anything by itself, so no episode is judged twice;
- an episode that works longer than ``episode_timeout_s`` (waits on rate limits and on its
  neighbours' simulator calls excluded) ends itself as an infra error at its next model call; one
  stuck inside a simulator call, or a worker that shows no sign of progress, is caught by the
  driver's backstop (:mod:`vabench.run.actors.backstop`), which kills that worker saying why (its
  episodes are then collected as after a crash);
- the driver never waits forever for a worker (:mod:`vabench.run.actors.pool`): episodes go to live
  workers' free slots, a worker the cluster cannot place is given up within ``ray.place_timeout_s``,
  and a run with none stops as interrupted after ``ray.starve_timeout_s``;
- infrastructure errors are never task failures: they stay ``infra_error`` and are excluded.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import deque

import pandas as pd

from vabench.agents.episode import Episode
from vabench.agents.summaries.summary_schema import SummaryError
from vabench.core.errors import ClusterStarved, Interrupted, RunAborted, RunLocked, RunStopped, SummaryUnavailable
from vabench.core.vocab import EndReason, ErrorKind, Status, SummaryKind, counted
from vabench.results.episodes import EpisodeSpec
from vabench.results.layout import OUTCOMES
from vabench.results.outcometable import load
from vabench.run.actors.backends import WorkerDied, backend_for
from vabench.run.actors.backstop import Backstop, Limits
from vabench.run.actors.pool import WorkerPool
from vabench.run.config.run import RunConfig
from vabench.run.folder.lock import RunLock
from vabench.run.folder.recover import recover
from vabench.run.folder.state import infra_row, todo, write_run_info
from vabench.run.folder.writer import RunWriter
from vabench.run.progress import ProgressBar, Spending, Stage
from vabench.run.spend import after_run, interrupted
from vabench.run.summaries import WAIT_S, SummaryPhase

ABORT_AFTER = 3  # permanent provider errors with nothing judged yet: stop the run
COUNTS = ("ok", "failed", "infra", "retried", "worker_crashes", "given_up", "permanent")


class Driver:
    clock = staticmethod(time.monotonic)  # what the worker pool's bounds are judged on; a test's fake clock goes here

    def __init__(self, run: RunConfig, log=print, progress: bool = True, line: int | None = None):
        """``line``: the terminal line of this driver's progress bar when several run at once (a
        parallel sweep's job number); its bar then names the run folder."""
        self.run, self.log, self.progress, self.line = run, log, progress, line
        self.counts = dict.fromkeys(COUNTS, 0)
        self._stop = False
        self.writer: RunWriter | None = None  # while the run folder is ours (execute)
        self.summaries: SummaryPhase | None = None
        self.last: dict[EpisodeSpec, int] = {}  # spec -> the last attempt this run's budget allows
        self.pool: WorkerPool | None = None
        self.backstop: Backstop | None = None
        self.bar: ProgressBar | None = None
        self.capped: list[str] = []  # why episodes a cost limit interrupted (vabench.run.spend)

    # -- stages ---------------------------------------------------------------------------
    def execute(self) -> pd.DataFrame:
        with RunLock(self.run.run_dir, self.log) as lock:
            return self._execute(lock)

    def _execute(self, lock: RunLock) -> pd.DataFrame:
        run = self.run
        self.writer = RunWriter(run.run_dir, lock, self.log)
        provenance = write_run_info(run, self.log)  # every row names the manifest it ran under
        self.summaries = SummaryPhase(run, self.writer, provenance, self.log, lambda: self._stop)
        self._run_part = {**run.identity, "provenance_digest": provenance}
        pending, done = todo(run, self.log)
        pending, recovered = recover(run, pending, self.writer, self.log)  # completed, but no row
        done += recovered
        self.last = {spec: attempt + run.options.max_attempts - 1 for spec, attempt in pending}  # this run's budget
        retried = sum(attempt > 1 for _, attempt in pending)
        self.log(
            f"run {run.run_id}: {counted(len(pending) + done, 'episode')}, {done} already done, {len(pending)} to run"
            + (f" ({retried} infra_error row(s) retried)" if retried else "")
        )
        if pending:
            name = None if self.line is None else run.run_dir.name
            self.bar = ProgressBar(len(pending), self.counts, self.progress, self.line, name, Spending.of(run))
            try:
                if not run.ray.in_process:
                    self.bar.stage(Stage.RAY)
                backend = backend_for(run, (str(lock.path), lock.token))
                if pending[0][0].summary_mode.kind == SummaryKind.OWN:
                    self.bar.stage(Stage.SUMMARIES)
                pending = self.summaries.prepare(backend, pending)
                self.counts["infra"] += self.summaries.infra
                self.bar.judged(self.summaries.infra)
                self._episodes(backend, pending)
            finally:
                self.bar.close()
        return after_run(self.capped, run, load(run.run_dir / OUTCOMES))

    def _episodes(self, backend, todo: list[tuple[EpisodeSpec, int]]) -> None:
        """Keep every live worker's slots busy until each episode is judged: on any live worker with
        a free slot (:class:`~vabench.run.actors.pool.WorkerPool`: no wait on a worker the cluster
        cannot place lasts beyond its bound), watched by the backstop (:mod:`vabench.run.actors.backstop`)."""
        run, bar = self.run, self.bar
        slots = max(1, min(backend.slots, run.model.max_concurrency, len(todo)))
        queue = deque(todo)
        ray_cfg = run.ray
        self.pool = pool = WorkerPool(backend, ray_cfg.place_timeout_s, ray_cfg.starve_timeout_s, self.log, self.clock)
        limits = Limits(ray_cfg.check_every_s, ray_cfg.hang_s, ray_cfg.stuck_s)
        self.backstop = backstop = Backstop(backend, limits) if backend.watched else None
        inflight: dict = {}  # ref -> (worker, spec, attempt)
        previous = self._catch_ctrl_c() if backend.catches_ctrl_c else None
        bar.stage(Stage.WORKERS)
        try:
            pool.start(slots, ray_cfg.env_actors)
            while queue or inflight:
                if self._stop:
                    raise Interrupted("Ctrl-C")
                self.writer.hold()
                pool.tick(bool(queue))
                for worker in pool.newly_live():
                    bar.stage(Stage.EPISODES)
                    if backstop is not None:
                        backstop.alive(worker)
                while queue and (worker := pool.seat()) is not None:
                    spec, attempt = queue.popleft()
                    episode = Episode(spec, attempt, self.summaries.summary(spec), self._run_part)
                    inflight[backend.submit(worker, episode)] = (worker, spec, attempt)
                bar.inflight = _places(inflight)
                for ref in backend.wait(list(inflight) + pool.pending_refs(), WAIT_S):
                    if ref in inflight:
                        worker, spec, attempt = inflight.pop(ref)
                        bar.inflight = _places(inflight)
                        self._finish(backend, ref, worker, spec, attempt, queue)
                if backstop is not None and backstop.due():
                    for worker, why in backstop.verdicts(pool.busy()):
                        self._kill(backend, worker, why, inflight, queue)
                bar.show(backend)
        except KeyboardInterrupt as e:  # Ctrl-C inside a blocking call (in this process)
            self._stopped(Interrupted("Ctrl-C"), backend, inflight)
            raise Interrupted("Ctrl-C") from e
        except RunStopped as stop:
            self._stopped(stop, backend, inflight)
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            bar.show(backend, force=True)
            self.counts["worker_crashes"] = pool.crashes
            self.counts["given_up"] = pool.given_up
            pool.close()

    def _stopped(self, stop: RunStopped, backend, inflight: dict) -> None:
        """The run stops early: say why and how to resume, keep what was cut short, free the workers."""
        what = "interrupted" if isinstance(stop, (Interrupted, ClusterStarved)) else "stopped"
        if isinstance(stop, ClusterStarved):
            self.log(f"\nthe cluster cannot place a worker for this run: {stop}")
        self.log(f"\n{what}: finished episodes are saved; rerun with run_id={self.run.run_id} to resume")
        busy = _distinct(w for w, *_ in inflight.values())
        if not isinstance(stop, RunLocked):  # the folder is still ours: keep what was cut short
            self.writer.partial(backend, busy)
        for worker in busy:
            backend.kill(worker)
            self.pool.members.pop(id(worker), None)

    def _finish(self, backend, ref, worker, spec: EpisodeSpec, attempt: int, queue) -> None:
        """An episode came back: judge it, free its slot, or replace its worker if that died."""
        final, died = self._collect(backend, ref, spec, attempt, queue)
        self.bar.show(backend, force=True, draw=not final)
        self.bar.judged(final)
        if died:
            if self.pool.lost(worker):
                self.log(f"a worker died ({died[:200]}); its episodes are re-queued and a replacement asked for")
        else:
            self.pool.done(worker)
            if self.backstop is not None:
                self.backstop.alive(worker)

    def _kill(self, backend, worker, why: str, inflight: dict, queue) -> None:
        """The backstop judged ``worker`` stuck: kill it (saying why), collect its episodes as after a
        crash (each retried as its next attempt) and ask for a replacement."""
        self.log(f"killing a worker: {why}")
        self.pool.lost(worker)
        for ref, (w, spec, attempt) in list(inflight.items()):
            if w is worker:
                inflight.pop(ref)
                final, _ = self._collect(backend, ref, spec, attempt, queue, died=why)
                self.bar.judged(final)
        self.bar.inflight = _places(inflight)
        self.bar.show(backend, force=True)

    def _catch_ctrl_c(self):
        """Ctrl-C sets a flag the loop checks every :data:`WAIT_S`: Ray's blocking calls may swallow
        a KeyboardInterrupt raised inside them. A second Ctrl-C interrupts at once."""
        if threading.current_thread() is not threading.main_thread():
            return None

        def request_stop(signum, frame):
            self._stop = True
            signal.signal(signal.SIGINT, signal.default_int_handler)

        return signal.signal(signal.SIGINT, request_stop)

    def _collect(
        self, backend, ref, spec: EpisodeSpec, attempt: int, queue, died: str | None = None
    ) -> tuple[bool, str | None]:
        """Take one finished episode: (final: judged, or out of attempts; why its worker died, or
        None). ``died``: why the driver killed its worker (the retry's error)."""
        try:
            out = backend.get(ref)
        except WorkerDied as e:  # the worker died (crash, kill -9): nothing of this attempt was written
            why = died or f"worker died: {e}"
            return self._retry(spec, attempt, why, queue), why
        except Exception as e:  # a bug inside the worker: infra, with the reason; the worker lives on
            return self._retry(spec, attempt, f"{type(e).__name__}: {e}", queue), None
        row = out["row"]
        if out.get("stopped"):  # a cost limit interrupted it: no row, resumable
            return interrupted(out, self.run, spec, attempt, self.capped), None
        if out["files"] is not None:  # the record of a worker that cannot see the run folder
            try:
                self.writer.files(out["files"], spec.place(attempt))
            except (OSError, ValueError) as e:  # a record the run folder cannot hold: the attempt is infra
                return self._retry(spec, attempt, f"storing the record failed: {type(e).__name__}: {e}", queue), None
        self.writer.row(spec, row)
        self.bar.row(row)  # its calls, tokens and cost: the bar's figures are the rows'
        if row["status"] != Status.OK:
            return self._failed(spec, attempt, row, queue), None
        self.counts["ok" if row["success"] else "failed"] += 1
        return True, None

    def _failed(self, spec: EpisodeSpec, attempt: int, row: dict, queue) -> bool:
        """An attempt that ended as an infra error (its row written): a permanent one is final (and
        stops a run that has judged nothing after :data:`ABORT_AFTER`), another is retried."""
        error = row.get("error") or EndReason.INFRA_ERROR
        if row.get("error_kind") != ErrorKind.PERMANENT:
            return self._retry(spec, attempt, error, queue, written=True)
        self.counts["permanent"] += 1
        self.counts["infra"] += 1
        if self.counts["permanent"] >= ABORT_AFTER and self.counts["ok"] + self.counts["failed"] == 0:
            raise RunAborted(error)
        return True

    def _retry(self, spec: EpisodeSpec, attempt: int, error: str, queue, written: bool = False) -> bool:
        """The attempt failed: its infra row is written first (a rerun after an interruption then
        counts on from it), and the next attempt queued while this run's budget lasts."""
        if not written:
            self.writer.row(spec, infra_row(self.run, spec, attempt, error, self.summaries.provenance))
        if attempt < self.last[spec]:
            self.counts["retried"] += 1
            queue.append((spec, attempt + 1))
            return False
        self.counts["infra"] += 1
        return True


def _places(inflight: dict) -> set[str]:
    """The attempts in flight, by their record's place (what their workers report usage under)."""
    return {spec.place(attempt) for _, spec, attempt in inflight.values()}


def _distinct(workers) -> list:
    """Each worker once (a worker appears once per slot it hosts)."""
    seen: dict[int, object] = {}
    for w in workers:
        seen.setdefault(id(w), w)
    return list(seen.values())


def run_experiment(run: RunConfig, log=print, progress: bool = True, line: int | None = None) -> pd.DataFrame:
    """Run ``run``; a summary that cannot be learned or stored is a stop like the others."""
    try:
        return Driver(run, log, progress, line).execute()
    except SummaryError as e:
        raise SummaryUnavailable(str(e)) from None
