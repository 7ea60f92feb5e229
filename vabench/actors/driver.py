"""The driver, the one way episodes run: expand a run into episodes, learn missing summaries, and
keep env workers busy, on Ray or in this process (:mod:`vabench.actors.backends`).

Model latency dominates an episode, so throughput comes from many episodes in flight: Ray actors
(env workers), each hosting several episodes at once; without Ray (``ray.address=none``) one
worker runs them one after another for the same run folder.
Correctness rules:

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
- an episode that works longer than ``episode_timeout_s`` (waits on rate limits excluded) ends
  itself as an infra error at its next model call; one stuck inside a simulator call, or a worker
  that stops answering, is caught by the driver's backstop, which kills that worker (its episodes
  are then collected as after a crash);
- infrastructure errors are never task failures: they stay ``infra_error`` and are excluded.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import deque

import pandas as pd
from tqdm import tqdm

from vabench.agents.harness import Episode
from vabench.agents.registry import is_offline
from vabench.agents.summary_schema import SummaryError
from vabench.agents.summary_store import Summary, SummaryStore, resolve_summary
from vabench.episodes import EpisodeSpec
from vabench.outcomes import OutcomeRow, read_rows, write_row
from vabench.vocab import EndReason, ErrorKind, Status, SummaryKind

from .backends import NodeCheckFailed, WorkerDied, backend_for
from .config import RunConfig
from .runfolder import infra_row, plan, write_run_info
from .runlock import RunLock, RunLocked
from .scratch import land

POLL_S = 2.0
STUCK_S = 600.0  # one simulator call this long is stuck (they take < 5 s): the episode cannot end itself
BACKSTOP_EVERY_S = 15.0  # how often the driver asks workers about stuck episodes
MISSES = 3  # checks in a row a worker failed to answer: it is hung (a native call holding the GIL)
STARTUP_S = 600.0  # a worker that has never answered yet may still be starting (Ray, shaders)
ABORT_AFTER = 3  # permanent provider errors with nothing judged yet: stop the run


class RunAborted(RuntimeError):
    """Every episode so far hit a permanent provider error (bad key, unknown model, ...)."""


class Driver:
    def __init__(self, run: RunConfig, log=print, progress: bool = True, line: int | None = None):
        """``line``: the terminal line of this driver's progress bar when several run at once (a
        parallel sweep's job number); its bar then names the run folder."""
        self.run, self.log, self.progress, self.line = run, log, progress, line
        self.store = SummaryStore(run.summary_root)
        self.counts = {"ok": 0, "failed": 0, "infra": 0, "retried": 0, "worker_crashes": 0, "permanent": 0}
        self._stop = False
        self._told: dict[tuple[str, str], Summary | None] = {}  # (summary source, task) -> what episodes get

    # -- stages ---------------------------------------------------------------------------
    def execute(self) -> pd.DataFrame:
        with RunLock(self.run.run_dir, self.log) as lock:
            return self._execute(lock)

    def _execute(self, lock: RunLock) -> pd.DataFrame:
        self.lock = lock
        run = self.run
        self.provenance = write_run_info(run, self.log)  # every row names the manifest it ran under
        todo, done = plan(run)
        self.last = {spec: attempt + run.max_attempts - 1 for spec, attempt in todo}  # this run's budget
        retried = sum(attempt > 1 for _, attempt in todo)
        self.log(
            f"run {run.run_id}: {len(todo) + done} episodes, {done} already done, {len(todo)} to run"
            + (f" ({retried} infra_error row(s) retried)" if retried else "")
        )
        if is_offline(run.model.model) and run.summary.kind != SummaryKind.NONE:
            self.log(f"{run.model_name} is an offline agent and reads no summary: summary {run.summary} -> none")
        if todo:
            backend = backend_for(run, (str(lock.path), lock.token))
            todo = self._summaries(backend, todo)
            self._episodes(backend, todo)
        return read_rows(run.run_dir / "outcomes")

    def _summaries(self, backend, todo: list[tuple[EpisodeSpec, int]]) -> list[tuple[EpisodeSpec, int]]:
        """Shared summaries must exist; own summaries are learned once per (model, base task) and
        summary root, which by default every run in the results folder shares (a passive or transfer
        run reuses the base run's). A learning that ends without a summary for a reason other than
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
        self.log(f"learning summaries for {len(missing)} task(s): {', '.join(missing)}")
        failed: dict[str, str] = {}
        queue, inflight = deque(missing), {}
        while queue or inflight:
            while queue and len(inflight) < run.model.max_concurrency:
                task = queue.popleft()
                inflight[backend.submit_learn(task)] = task
            ready = backend.wait(list(inflight), None)
            task = inflight.pop(ready[0])
            try:
                out = self._keep_learning(task, backend.get(ready[0]))
            except RunLocked:
                raise
            except Exception as e:  # the learner crashed, or sent a summary that fails validation: infra
                out = {"end_reason": EndReason.INFRA_ERROR, "error": f"{type(e).__name__}: {e}"}
            self.log(f"summary {task}: {out['end_reason']}" + (f" ({out['error']})" if out.get("error") else ""))
            if out["end_reason"] == EndReason.INFRA_ERROR:
                failed[task] = out.get("error") or "summary learning failed"
            elif not out.get("learned", True):
                self.log(f"summary {task}: none learned; its episodes run without one (summary_learned false)")
        keep = []
        for spec, attempt in todo:
            if spec.base_task in failed:  # no summary because of infrastructure: retry on rerun
                self._write(spec, infra_row(run, spec, attempt, f"summary: {failed[spec.base_task]}", self.provenance))
                self.counts["infra"] += 1
            else:
                keep.append((spec, attempt))
        return keep

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
        run = self.run
        slots = max(1, min(backend.slots, run.model.max_concurrency, len(todo)))
        queue = deque(todo)
        idle = backend.start(slots)  # one entry per episode slot
        inflight: dict = {}  # ref -> (worker, spec, attempt, submitted)
        self._replaced: dict[int, tuple] = {}  # id(dead worker) -> (it, its replacement)
        self._answered: dict[int, object] = {}  # workers that have answered a backstop check
        self._misses: dict[int, int] = {}  # id(worker) -> checks it failed to answer, in a row
        self._shown = 0.0
        desc = None if self.line is None else self.run.run_dir.name
        bar = tqdm(
            total=len(todo), disable=not self.progress, unit="ep", dynamic_ncols=True, position=self.line, desc=desc
        )
        previous = self._catch_ctrl_c() if backend.catches_ctrl_c else None
        checked = time.monotonic()
        try:
            while queue or inflight:
                if self._stop:
                    raise KeyboardInterrupt
                self._hold()
                while queue and idle:
                    worker = idle.pop()
                    spec, attempt = queue.popleft()
                    ref = backend.submit(worker, Episode(spec, attempt, self._summary(spec), self._run_part()))
                    inflight[ref] = (worker, spec, attempt, time.monotonic())
                for ref in backend.wait(list(inflight), POLL_S):
                    worker, spec, attempt, _ = inflight.pop(ref)
                    if self._collect(backend, ref, spec, attempt, queue):
                        bar.update(1)
                    idle.append(self._seat(backend, worker, idle))
                if time.monotonic() - checked > BACKSTOP_EVERY_S:
                    checked = time.monotonic()
                    bar.update(self._backstop(backend, inflight, idle, queue))
                self._show(bar, backend)
        except (KeyboardInterrupt, RunAborted, RunLocked) as stop:
            what = "interrupted" if isinstance(stop, KeyboardInterrupt) else "stopped"
            self.log(f"\n{what}: finished episodes are saved; rerun with run_id={run.run_id} to resume")
            busy = _distinct(w for w, *_ in inflight.values())
            if not isinstance(stop, RunLocked):  # the folder is still ours: keep what was cut short
                self._keep_partial(backend, busy)
            for worker in busy:
                backend.kill(worker)
                idle[:] = [w for w in idle if w is not worker]
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            bar.close()
            for worker in _distinct(idle):
                backend.release(worker)

    def _seat(self, backend, worker, idle: list):
        """The worker for a slot that just came free: the same one, or the replacement of a dead one."""
        if id(worker) in self._replaced:
            return self._replaced[id(worker)][1]
        return worker if backend.alive(worker) else self._replace(backend, worker, idle)

    def _replace(self, backend, worker, idle: list):
        """One replacement per dead worker, with as many slots, however many of its episodes come
        back; its free slots in ``idle`` move to the replacement (never a submit to a dead worker)."""
        if id(worker) in self._replaced:
            return self._replaced[id(worker)][1]
        backend.kill(worker)  # dead, or judged so: never left running beside its replacement
        new = backend.new_worker(backend.slots_of(worker))
        self._replaced[id(worker)] = (worker, new)
        idle[:] = [new if w is worker else w for w in idle]
        self.counts["worker_crashes"] += 1
        return new

    def _backstop(self, backend, inflight: dict, idle: list, queue) -> int:
        """Kill a worker with an episode stuck inside one simulator call for over :data:`STUCK_S`
        (it cannot end itself there), or one that failed :data:`MISSES` checks in a row (hung; one
        that has never answered gets :data:`STARTUP_S` to start). Its episodes are then collected
        as after a crash (retried). Returns episodes finished."""
        finished = 0
        for worker in _distinct(w for w, *_ in inflight.values()):
            stuck = backend.stuck(worker, STUCK_S)
            if stuck is None:
                misses = self._misses[id(worker)] = self._misses.get(id(worker), 0) + 1
                oldest = min(t for w, *_, t in inflight.values() if w is worker)
                starting = id(worker) not in self._answered and time.monotonic() - oldest <= STARTUP_S
                if misses < MISSES or starting:
                    continue
                why = f"worker did not answer {misses} checks in a row"
            else:
                self._answered[id(worker)], self._misses[id(worker)] = worker, 0
                if not stuck:
                    continue
                why = f"an episode was inside one simulator call for over {STUCK_S:g} s"
            new = self._replace(backend, worker, idle)
            for ref, (w, spec, attempt, _) in list(inflight.items()):
                if w is worker:
                    inflight.pop(ref)
                    finished += self._collect(backend, ref, spec, attempt, queue, died=why)
                    idle.append(new)
        return finished

    def _show(self, bar, backend) -> None:
        if not self.progress or time.monotonic() - self._shown < POLL_S:
            return
        self._shown = time.monotonic()
        stats = backend.limit_stats()
        extra = {}
        if stats:
            extra = {"rpm": f"{stats.get('rpm', 0):.0f}", "limit_wait": f"{stats.get('wait_s', 0.0) / 60:.1f}m"}
        bar.set_postfix(
            ok=self.counts["ok"],
            failed=self.counts["failed"],
            infra=self.counts["infra"],
            retried=self.counts["retried"],
            **extra,
            refresh=False,
        )

    def _catch_ctrl_c(self):
        """Ctrl-C sets a flag the loop checks every poll: Ray's blocking calls may swallow a
        KeyboardInterrupt raised inside them. A second Ctrl-C interrupts at once."""
        if threading.current_thread() is not threading.main_thread():
            return None

        def request_stop(signum, frame):
            self._stop = True
            signal.signal(signal.SIGINT, signal.default_int_handler)

        return signal.signal(signal.SIGINT, request_stop)

    def _collect(self, backend, ref, spec: EpisodeSpec, attempt: int, queue, died: str | None = None) -> bool:
        """Take one finished episode; True when it is final (judged, or out of attempts). ``died``:
        why the driver killed its worker (the retry's error)."""
        try:
            out = backend.get(ref)
        except WorkerDied as e:  # the worker died (crash, kill -9): nothing of this attempt was written
            return self._retry(spec, attempt, died or f"worker died: {e}", queue)
        except Exception as e:  # a bug inside the worker: infra, with the reason
            return self._retry(spec, attempt, f"{type(e).__name__}: {e}", queue)
        row = out["row"]
        if out["files"] is not None:  # the record of a worker that cannot see the run folder
            self._hold()
            try:
                land(out["files"], spec.record_dir(self.run.run_dir) / f"attempt{attempt}")
            except (OSError, ValueError) as e:  # a record the run folder cannot hold: the attempt is infra
                return self._retry(spec, attempt, f"storing the record failed: {type(e).__name__}: {e}", queue)
        self._write(spec, row)
        if row["status"] != Status.OK:
            error = row.get("error") or EndReason.INFRA_ERROR
            if row.get("error_kind") == ErrorKind.PERMANENT:  # retrying cannot help; the row stays infra_error
                self.counts["permanent"] += 1
                self.counts["infra"] += 1
                if self.counts["permanent"] >= ABORT_AFTER and self.counts["ok"] + self.counts["failed"] == 0:
                    raise RunAborted(error)
                return True
            return self._retry(spec, attempt, error, queue, written=True)
        self.counts["ok" if row["success"] else "failed"] += 1
        return True

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
    except (RunLocked, NodeCheckFailed) as e:
        raise SystemExit(str(e)) from None
