"""One simulator worker: an env (kept across episodes, so shaders compile once) plus a model
client, running one episode at a time and writing its outcome file before it returns. The
driver's backend runs it as a Ray actor, or in the driver's process (``ray.address=none``)."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path

from vabench.agents.harness import HarnessConfig, run_episode
from vabench.agents.learning import learn_summary
from vabench.agents.models import ModelConfig
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


class EpisodeWorker:
    """``lock`` (path, token): the driver's run-folder lock. A worker in its own process (Ray)
    ends itself once that driver is gone (within :data:`WATCH_S` where the driver's pid can be
    checked, after the lock's stale time elsewhere) or another driver took the folder over, and
    never writes an outcome after that; in the driver's process it is None."""

    def __init__(
        self,
        camera: str,
        harness: dict,
        model: dict,
        run_dir: str,
        summary_root: str,
        meta: dict,
        lock: tuple[str, str] | None = None,
    ):
        self.watch = DriverWatch(*lock) if lock is not None else None
        if self.watch is not None:
            threading.Thread(target=self._watch, name="driver-watch", daemon=True).start()
        self.env = VABenchEnv(EnvConfig(camera=CAMERA_PRESETS[camera]))
        self.harness = HarnessConfig(**harness)
        self.model = make_model(ModelConfig(**model))
        self.run_dir, self.meta = Path(run_dir), meta
        self.store = SummaryStore(Path(summary_root))
        self.env.reset("grasp_single_cube", 0)  # compile shaders now, not inside the first timed episode
        self.model.warm()

    def pid(self) -> int:
        return os.getpid()

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
        """Run one episode and write its row; returns the row. An ``own`` summary missing here is one
        whose learning ended without a summary (not infra): the episode runs without it and its row
        says ``summary_learned`` false, so the analysis can count it."""
        s = EpisodeSpec(**spec)
        summary = resolve_summary(self.store, s.summary_source, self.model.name, s.task)
        told = summary_identity(summary, s.summary_source)
        folder = s.record_dir(self.run_dir) / f"attempt{attempt}"
        set_aside(folder)  # left by an interrupted driver: kept, and this attempt starts afresh
        result = run_episode(
            self.env,
            self.model,
            s.task,
            s.seed,
            folder,
            s.protocol,
            self.harness,
            summary=summary,
            summary_source=s.summary_source,
            transfer=s.track == TRANSFER,
            identity={**self.meta, **s.identity(), **told, "attempt": attempt},
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
