"""A run's summary phase, before its episodes: shared summaries must exist; own summaries are
learned once per (model, base task) and summary root, which by default every run in the results
folder shares (a passive or transfer run reuses the base run's), by one driver at a time
(:mod:`vabench.run.folder.learnlock`: parallel jobs of a sweep reuse it too). Then each episode is
handed the summary it is told (:meth:`SummaryPhase.summary`).

A learning that ends without a summary for a reason other than infrastructure leaves its episodes
to run without one (``summary_learned`` false in the row); one that fails because of
infrastructure leaves its episodes as ``infra_error`` rows, retried on rerun.
"""

from __future__ import annotations

import time
from collections import deque
from functools import partial

from vabench.agents.summaries.summary_store import Summary, SummaryStore, resolve_summary
from vabench.core.errors import ClusterStarved, RunLocked
from vabench.core.vocab import EndReason, SummaryKind
from vabench.results.episodes import EpisodeSpec
from vabench.results.layout import LEARNING
from vabench.run.actors.backstop import load_factor
from vabench.run.config.run import RunConfig
from vabench.run.folder.learnlock import learn_once
from vabench.run.folder.state import infra_row
from vabench.run.folder.writer import RunWriter
from vabench.run.spend import learning_stopped

WAIT_S = 0.5  # the longest a wait on workers blocks: how soon a Ctrl-C is seen


class SummaryPhase:
    """``stopped()``: true once the user asked to stop (Ctrl-C under Ray)."""

    def __init__(self, run: RunConfig, writer: RunWriter, provenance: str, log=print, stopped=lambda: False):
        self.run, self.writer, self.provenance, self.log, self.stopped = run, writer, provenance, log, stopped
        self.store = SummaryStore(run.summary_root)
        self.infra = 0  # episodes left as infra_error rows because their summary could not be learned
        self._told: dict[tuple[str, str], Summary | None] = {}  # (summary source, task) -> what episodes get

    def prepare(self, backend, todo: list[tuple[EpisodeSpec, int]]) -> list[tuple[EpisodeSpec, int]]:
        """The episodes that can run now: every summary they are told exists or was learned."""
        run = self.run
        mode = todo[0][0].summary_mode if todo else None  # offline agents read none, whatever was asked
        if mode is None or mode.kind in (SummaryKind.NONE, SummaryKind.EXPERT):  # expert: in the code
            return todo
        if mode.kind == SummaryKind.SHARED:
            for base in sorted({s.base_task for s, _ in todo}):
                resolve_summary(self.store, mode, run.condition.model, base)  # raises SummaryError naming the file
            return todo
        bases = {s.base_task for s, _ in todo}
        missing = sorted(b for b in bases if not self.store.has(run.condition.model, b))
        if len(missing) < len(bases):
            self.log(f"reusing {len(bases) - len(missing)} stored summary(ies) from {run.summary_root}")
        if not missing:
            return todo
        learn = partial(self._learn, backend)
        failed = learn_once(self.store, run.condition.model, missing, learn, self.writer.hold, self.log)
        keep = []
        for spec, attempt in todo:
            if spec.base_task in failed:  # no summary because of infrastructure: retry on rerun
                error = f"summary: {failed[spec.base_task]}"
                self.writer.row(spec, infra_row(run, spec, attempt, error, self.provenance))
                self.infra += 1
            else:
                keep.append((spec, attempt))
        return keep

    def summary(self, spec: EpisodeSpec) -> Summary | None:
        """The summary an episode is given, read once per (source, task) from the store."""
        key = (spec.condition.summary_source, spec.task)
        if key not in self._told:
            self._told[key] = resolve_summary(
                self.store, spec.condition.summary_source, self.run.condition.model, spec.task
            )
        return self._told[key]

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
            ready = backend.wait(list(inflight), WAIT_S)
            if not ready:
                self._unplaced(backend, began)
                continue
            task = inflight.pop(ready[0])
            try:
                out = self._keep(task, backend.get(ready[0]))
            except RunLocked:
                raise
            except Exception as e:  # the learner crashed, or sent a summary that fails validation: infra
                out = {"end_reason": EndReason.INFRA_ERROR, "error": f"{type(e).__name__}: {e}"}
            learning_stopped(out)  # model.max_cost_usd reached: the run stops
            self.log(f"summary {task}: {out['end_reason']}" + (f" ({out['error']})" if out.get("error") else ""))
            if out["end_reason"] == EndReason.INFRA_ERROR:
                failed[task] = out.get("error") or "summary learning failed"
            elif not out.get("learned", True):
                self.log(f"summary {task}: none learned; its episodes run without one (summary_learned false)")
        return failed

    def _unplaced(self, backend, began: float) -> None:
        """A run whose summary learning the cluster cannot place stops as interrupted after
        ``ray.starve_timeout_s`` x load, like one none of whose workers can be placed."""
        if self.stopped():
            raise KeyboardInterrupt
        limit, load = self.run.ray.starve_timeout_s, load_factor()
        waited = time.monotonic() - began
        if waited > limit * load and not backend.learning_started():
            raise ClusterStarved(
                f"summary learning not started for {waited:.0f} s (ray.starve_timeout_s={limit:g} x load "
                f"{load:.1f}): {backend.lacks()}"
            )

    def _keep(self, task: str, out: dict) -> dict:
        """Land a learning's record in ``_learning/<task>/<time>/`` (a rerun learns anew) and its
        summary in the store; returns ``out``."""
        self.writer.files(out.pop("files"), f"{LEARNING}/{task}/{time.strftime('%Y%m%d-%H%M%S')}")
        text = out.pop("summary")
        if text is not None:
            self.store.adopt(self.run.condition.model, task, text)
        return out
