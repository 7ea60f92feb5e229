"""The driver, the one way episodes run: expand a run into episodes, learn missing summaries, and
keep env workers busy, on Ray or in this process (:mod:`vabench.actors.backends`).

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
  node's scratch; the stale record folder is set aside and the same attempt runs afresh); the
  backend never re-runs anything by itself, so no episode is judged twice;
- an episode that works longer than ``episode_timeout_s`` (waits on rate limits and on its
  neighbours' simulator calls excluded) ends itself as an infra error at its next model call; one
  stuck inside a simulator call, or a worker that shows no sign of progress, is caught by the
  driver's backstop (:mod:`vabench.actors.backstop`), which kills that worker saying why (its
  episodes are then collected as after a crash);
- the driver never waits forever for a worker (:mod:`vabench.actors.pool`): episodes go to live
  workers' free slots, a worker the cluster cannot place is given up within ``ray.place_timeout_s``,
  and a run with none stops as interrupted after ``ray.starve_timeout_s``;
- infrastructure errors are never task failures: they stay ``infra_error`` and are excluded.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import deque
from functools import partial

import pandas as pd
from tqdm import tqdm

from vabench.agents.harness import Episode
from vabench.agents.registry import is_offline
from vabench.agents.summary_schema import SummaryError
from vabench.agents.summary_store import Summary, SummaryStore, resolve_summary
from vabench.episodes import EpisodeSpec
from vabench.outcomes import OutcomeRow, write_row
from vabench.outcometable import landed, load
from vabench.vocab import EndReason, ErrorKind, Status, SummaryKind, counted

from .backends import NodeCheckFailed, WorkerDied, backend_for
from .backstop import Backstop, Limits, load_factor
from .config import RunConfig
from .learnlock import learn_once
from .pool import ClusterStarved, WorkerPool
from .runfolder import infra_row, plan, write_run_info
from .runlock import RunLock, RunLocked
from .scratch import land
from .spend import CostStop, after_run, interrupted, learning_stopped, spend_shown

POLL_S = 2.0
ABORT_AFTER = 3  # permanent provider errors with nothing judged yet: stop the run


class RunAborted(RuntimeError):
    """Every episode so far hit a permanent provider error (bad key, unknown model, ...)."""


class Driver:
    def __init__(self, run: RunConfig, log=print, progress: bool = True, line: int | None = None):
        """``line``: the terminal line of this driver's progress bar when several run at once (a
        parallel sweep's job number); its bar then names the run folder."""
        self.run, self.log, self.progress, self.line = run, log, progress, line
        self.store = SummaryStore(run.summary_root)
        self.counts = dict.fromkeys(("ok", "failed", "infra", "retried", "worker_crashes", "given_up", "permanent"), 0)
        self._stop, self.capped = False, []  # capped: why episodes a cost limit interrupted (vabench.actors.spend)
        self._told: dict[tuple[str, str], Summary | None] = {}  # (summary source, task) -> what episodes get

    # -- stages ---------------------------------------------------------------------------
    def execute(self) -> pd.DataFrame:
        with RunLock(self.run.run_dir, self.log) as lock:
            return self._execute(lock)

    def _execute(self, lock: RunLock) -> pd.DataFrame:
        self.lock = lock
        run = self.run
        self.provenance = write_run_info(run, self.log)  # every row names the manifest it ran under
        todo, done = plan(run, self.log)
        self.last = {spec: attempt + run.max_attempts - 1 for spec, attempt in todo}  # this run's budget
        retried = sum(attempt > 1 for _, attempt in todo)
        self.log(
            f"run {run.run_id}: {counted(len(todo) + done, 'episode')}, {done} already done, {len(todo)} to run"
            + (f" ({retried} infra_error row(s) retried)" if retried else "")
        )
        if is_offline(run.model.model) and run.summary.kind != SummaryKind.NONE:
            self.log(f"{run.model_name} is an offline agent and reads no summary: summary {run.summary} -> none")
        if todo:
            backend = backend_for(run, (str(lock.path), lock.token))
            todo = self._summaries(backend, todo)
            self._episodes(backend, todo)
        return after_run(self.capped, run, load(run.run_dir / "outcomes"))

    def _summaries(self, backend, todo: list[tuple[EpisodeSpec, int]]) -> list[tuple[EpisodeSpec, int]]:
        """Shared summaries must exist; own summaries are learned once per (model, base task) and
        summary root, which by default every run in the results folder shares (a passive or transfer
        run reuses the base run's), by one driver at a time (:mod:`vabench.actors.learnlock`: parallel
        jobs of a sweep reuse it too). A learning that ends without a summary for a reason other than
        infrastructure leaves its episodes to run without one (``summary_learned`` false in the row)."""
        run = self.run
        mode = todo[0][0].summary_mode if todo else None  # offline agents read none, whatever was asked
        if mode is None or mode.kind == SummaryKind.NONE:
            return todo
        if mode.kind == SummaryKind.SHARED:
            for base in sorted({s.base_task for s, _ in todo}):
                resolve_summary(self.store, mode, run.model_name, base)  # raises SummaryError naming the file
            return todo
        bases = {s.base_task for s, _ in todo}
        missing = sorted(b for b in bases if not self.store.has(run.model_name, b))
        if len(missing) < len(bases):
            self.log(f"reusing {len(bases) - len(missing)} stored summary(ies) from {run.summary_root}")
        if not missing:
            return todo
        failed = learn_once(self.store, run.model_name, missing, partial(self._learn, backend), self._hold, self.log)
        keep = []
        for spec, attempt in todo:
            if spec.base_task in failed:  # no summary because of infrastructure: retry on rerun
                self._write(spec, infra_row(run, spec, attempt, f"summary: {failed[spec.base_task]}", self.provenance))
                self.counts["infra"] += 1
            else:
                keep.append((spec, attempt))
        return keep

    def _learn(self, backend, tasks: list[str]) -> dict[str, str]:
        """Learn and store the summaries of ``tasks``; returns {task: error} for those that failed
        because of infrastructure."""
        self.log(f"learning summaries for {len(tasks)} task(s): {', '.join(tasks)}")
        failed: dict[str, str] = {}
        queue, inflight, began = deque(tasks), {}, time.monotonic()
        while queue or inflight:
            while queue and len(inflight) < self.run.model.max_concurrency:
                task = queue.popleft()
                inflight[backend.submit_learn(task)] = task
            ready = backend.wait(list(inflight), POLL_S)
            if not ready:
                self._unplaced_learning(backend, began)
                continue
            task = inflight.pop(ready[0])
            try:
                out = self._keep_learning(task, backend.get(ready[0]))
            except RunLocked:
                raise
            except Exception as e:  # the learner crashed, or sent a summary that fails validation: infra
                out = {"end_reason": EndReason.INFRA_ERROR, "error": f"{type(e).__name__}: {e}"}
            learning_stopped(out, self.run)
            self.log(f"summary {task}: {out['end_reason']}" + (f" ({out['error']})" if out.get("error") else ""))
            if out["end_reason"] == EndReason.INFRA_ERROR:
                failed[task] = out.get("error") or "summary learning failed"
            elif not out.get("learned", True):
                self.log(f"summary {task}: none learned; its episodes run without one (summary_learned false)")
        return failed

    def _unplaced_learning(self, backend, began: float) -> None:
        """A run whose summary learning the cluster cannot place stops as interrupted after
        ``ray.starve_timeout_s`` x load, like one none of whose workers can be placed."""
        if self._stop:
            raise KeyboardInterrupt
        limit, load = self.run.ray.starve_timeout_s, load_factor()
        waited = time.monotonic() - began
        if waited > limit * load and not backend.learning_started():
            raise ClusterStarved(
                f"summary learning not started for {waited:.0f} s (ray.starve_timeout_s={limit:g} x load "
                f"{load:.1f}): {backend.lacks()}"
            )

    def _keep_learning(self, task: str, out: dict) -> dict:
        """Land a learning's record in ``_learning/<task>/<time>/`` (a rerun learns anew) and its
        summary in the store; returns ``out``."""
        self._hold()
        land(out.pop("files"), self.run.run_dir / "_learning" / task / time.strftime("%Y%m%d-%H%M%S"))
        text = out.pop("summary")
        if text is not None:
            self.store.adopt(self.run.model_name, task, text)
        return out

    def _run_part(self) -> dict:
        """The run's part of every row: its identity and the digest of its provenance manifest."""
        return {**self.run.identity, "provenance_digest": self.provenance}

    def _summary(self, spec: EpisodeSpec) -> Summary | None:
        """The summary an episode is given, read once per (source, task) from the driver's store."""
        key = (spec.summary_source, spec.task)
        if key not in self._told:
            self._told[key] = resolve_summary(self.store, spec.summary_source, self.run.model_name, spec.task)
        return self._told[key]

    def _episodes(self, backend, todo: list[tuple[EpisodeSpec, int]]) -> None:
        """Keep every live worker's slots busy until each episode is judged: on any live worker with
        a free slot (:class:`~vabench.actors.pool.WorkerPool`: no wait on a worker the cluster
        cannot place lasts beyond its bound), watched by the backstop (:mod:`vabench.actors.backstop`)."""
        run = self.run
        slots = max(1, min(backend.slots, run.model.max_concurrency, len(todo)))
        queue = deque(todo)
        ray_cfg = run.ray
        self.pool = pool = WorkerPool(backend, ray_cfg.place_timeout_s, ray_cfg.starve_timeout_s, self.log)
        limits = Limits(ray_cfg.check_every_s, ray_cfg.hang_s, ray_cfg.stuck_s)
        self.backstop = backstop = Backstop(backend, limits) if backend.watched else None
        inflight: dict = {}  # ref -> (worker, spec, attempt)
        self._shown, self._stats, self._postfix = 0.0, None, None
        desc = None if self.line is None else self.run.run_dir.name
        bar = tqdm(
            total=len(todo), disable=not self.progress, unit="ep", dynamic_ncols=True, position=self.line, desc=desc
        )
        previous = self._catch_ctrl_c() if backend.catches_ctrl_c else None
        try:
            pool.start(slots, ray_cfg.env_actors)
            while queue or inflight:
                if self._stop:
                    raise KeyboardInterrupt
                self._hold()
                pool.tick(bool(queue))
                for worker in pool.newly_live():
                    if backstop is not None:
                        backstop.alive(worker)
                while queue and (worker := pool.seat()) is not None:
                    spec, attempt = queue.popleft()
                    ref = backend.submit(worker, Episode(spec, attempt, self._summary(spec), self._run_part()))
                    inflight[ref] = (worker, spec, attempt)
                for ref in backend.wait(list(inflight) + pool.pending_refs(), POLL_S):
                    if ref in inflight:
                        worker, spec, attempt = inflight.pop(ref)
                        self._finish(bar, backend, ref, worker, spec, attempt, queue)
                if backstop is not None and backstop.due():
                    for worker, why in backstop.verdicts(pool.busy()):
                        self._kill(bar, backend, worker, why, inflight, queue)
                self._show(bar, backend)
        except (KeyboardInterrupt, RunAborted, RunLocked, ClusterStarved, CostStop) as stop:
            what = "stopped" if isinstance(stop, (RunAborted, RunLocked, CostStop)) else "interrupted"
            if isinstance(stop, ClusterStarved):
                self.log(f"\nthe cluster cannot place a worker for this run: {stop}")
            self.log(f"\n{what}: finished episodes are saved; rerun with run_id={run.run_id} to resume")
            busy = _distinct(w for w, *_ in inflight.values())
            if not isinstance(stop, RunLocked):  # the folder is still ours: keep what was cut short
                self._keep_partial(backend, busy)
            for worker in busy:
                backend.kill(worker)
                pool.members.pop(id(worker), None)
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            self._show(bar, backend, force=True)
            bar.close()
            self.counts["worker_crashes"] = pool.crashes
            self.counts["given_up"] = pool.given_up
            pool.close()

    def _finish(self, bar, backend, ref, worker, spec: EpisodeSpec, attempt: int, queue) -> None:
        """An episode came back: judge it, free its slot, or replace its worker if that died."""
        final, died = self._collect(backend, ref, spec, attempt, queue)
        self._show(bar, backend, force=True, draw=not final)
        bar.update(final)  # draws the new count with its tally
        if died:
            if self.pool.lost(worker):
                self.log(f"a worker died ({died[:200]}); its episodes are re-queued and a replacement asked for")
        else:
            self.pool.done(worker)
            if self.backstop is not None:
                self.backstop.alive(worker)

    def _kill(self, bar, backend, worker, why: str, inflight: dict, queue) -> None:
        """The backstop judged ``worker`` stuck: kill it (saying why), collect its episodes as after a
        crash (each retried as its next attempt) and ask for a replacement."""
        self.log(f"killing a worker: {why}")
        self.pool.lost(worker)
        for ref, (w, spec, attempt) in list(inflight.items()):
            if w is worker:
                inflight.pop(ref)
                final, _ = self._collect(backend, ref, spec, attempt, queue, died=why)
                bar.update(final)
        self._show(bar, backend, force=True)

    def _show(self, bar, backend, force: bool = False, draw: bool = True) -> None:
        """The bar's tally, drawn at once on every change and last at the end (``infra``: episodes
        whose final attempt was an infra error; ``retried``: attempts re-queued after one). The
        limiter's figures are asked for at most every :data:`POLL_S`."""
        if not self.progress or (not force and time.monotonic() - self._shown < POLL_S):
            return
        if time.monotonic() - self._shown >= POLL_S:
            self._stats = backend.limit_stats()
            self._shown = time.monotonic()
        stats = self._stats
        extra = {}
        if stats:
            extra = {"rpm": f"{stats.get('rpm', 0):.0f}", "limit_wait": f"{stats.get('wait_s', 0.0) / 60:.1f}m"}
            extra |= spend_shown(stats, self.run.model.max_cost_usd)
        shown = {k: self.counts[k] for k in ("ok", "failed", "infra", "retried")} | extra
        if shown != self._postfix:  # redrawn on a change only: logs stay short
            self._postfix = shown
            bar.set_postfix(**shown, refresh=draw)

    def _catch_ctrl_c(self):
        """Ctrl-C sets a flag the loop checks every poll: Ray's blocking calls may swallow a
        KeyboardInterrupt raised inside them. A second Ctrl-C interrupts at once."""
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
            self._hold()
            try:
                land(out["files"], spec.record_dir(self.run.run_dir) / f"attempt{attempt}")
            except (OSError, ValueError) as e:  # a record the run folder cannot hold: the attempt is infra
                return self._retry(spec, attempt, f"storing the record failed: {type(e).__name__}: {e}", queue), None
        self._write(spec, row)
        if row["status"] != Status.OK:
            error = row.get("error") or EndReason.INFRA_ERROR
            if row.get("error_kind") == ErrorKind.PERMANENT:  # retrying cannot help; the row stays infra_error
                self.counts["permanent"] += 1
                self.counts["infra"] += 1
                if self.counts["permanent"] >= ABORT_AFTER and self.counts["ok"] + self.counts["failed"] == 0:
                    raise RunAborted(error)
                return True, None
            return self._retry(spec, attempt, error, queue, written=True), None
        self.counts["ok" if row["success"] else "failed"] += 1
        return True, None

    def _retry(self, spec: EpisodeSpec, attempt: int, error: str, queue, written: bool = False) -> bool:
        """The attempt failed: its infra row is written first (a rerun after an interruption then
        counts on from it), and the next attempt queued while this run's budget lasts."""
        if not written:
            self._write(spec, infra_row(self.run, spec, attempt, error, self.provenance))
        if attempt < self.last[spec]:
            self.counts["retried"] += 1
            queue.append((spec, attempt + 1))
            return False
        self.counts["infra"] += 1
        return True

    def _keep_partial(self, backend, workers: list) -> None:
        """Land the records of episodes cut short by a stop that live in their worker's scratch
        (another node), where the next attempt then sets them aside; in-place ones are there."""
        for worker in workers:
            for rel, files in backend.partial(worker).items():
                try:
                    land(files, self.run.run_dir / rel)
                except (OSError, ValueError) as e:
                    self.log(f"could not keep the partial record {rel}: {type(e).__name__}: {e}")

    def _hold(self) -> None:
        """Never write into a folder another driver has taken over."""
        if not self.lock.held():
            raise RunLocked(f"{self.lock.path}: another driver took this run folder over; stopping")

    def _write(self, spec: EpisodeSpec, row: OutcomeRow | dict) -> None:
        self._hold()
        write_row(spec.outcome_path(self.run.run_dir), row)
        landed(self.run.run_dir)  # keeps the run's outcome table (vabench.outcometable) close behind


def _distinct(workers) -> list:
    """Each worker once (a worker appears once per slot it hosts)."""
    seen: dict[int, object] = {}
    for w in workers:
        seen.setdefault(id(w), w)
    return list(seen.values())


def run_experiment(run: RunConfig, log=print, progress: bool = True, line: int | None = None) -> pd.DataFrame:
    try:
        return Driver(run, log, progress, line).execute()
    except SummaryError as e:
        raise SystemExit(f"summary: {e}") from None
    except RunAborted as e:
        raise SystemExit(f"run stopped: the first episodes all failed with a permanent provider error: {e}") from None
    except (RunLocked, NodeCheckFailed, CostStop) as e:
        raise SystemExit(str(e)) from None
    except ClusterStarved as e:
        raise SystemExit(
            f"interrupted: the cluster cannot place this run's work: {e}; rerun with run_id={run.run_id} to resume"
        ) from None
