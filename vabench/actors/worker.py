"""One simulator worker: an env (kept across episodes, so shaders compile once) plus a model
client, running one episode at a time and writing its outcome file before it returns. The
driver wraps it as a Ray actor; it also runs in-process for tests and debugging."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from vabench.agents.harness import HarnessConfig, run_episode
from vabench.agents.learning import learn_summary
from vabench.agents.models import ModelConfig, make_model
from vabench.agents.summaries import SummaryStore, resolve_summary
from vabench.envs import CAMERA_PRESETS, EnvConfig, VABenchEnv
from vabench.outcomes import write_row

from .specs import EpisodeSpec

logging.getLogger("toppra").setLevel(logging.ERROR)


class EpisodeWorker:
    def __init__(self, camera: str, harness: dict, model: dict, run_dir: str, summary_root: str, meta: dict):
        self.env = VABenchEnv(EnvConfig(camera=CAMERA_PRESETS[camera]))
        self.harness = HarnessConfig(**harness)
        self.model = make_model(ModelConfig(**model))
        self.run_dir, self.meta = Path(run_dir), meta
        self.store = SummaryStore(Path(summary_root))
        self.env.reset("grasp_single_cube", 0)  # compile shaders now, not inside the first timed episode
        self.model.warm()

    def pid(self) -> int:
        return os.getpid()

    def run(self, spec: dict, attempt: int) -> dict:
        """Run one episode and write its row; returns the row."""
        s = EpisodeSpec(**spec)
        summary = resolve_summary(self.store, s.summary_source, self.model.name, s.task)
        result = run_episode(
            self.env,
            self.model,
            s.task,
            s.seed,
            s.record_dir(self.run_dir) / f"attempt{attempt}",
            s.protocol,
            self.harness,
            summary=summary,
            summary_source=s.summary_source,
            transfer=s.track == "transfer",
            meta={
                **self.meta,
                "condition": s.condition,
                "track": s.track,
                "run_index": s.run_index,
                "attempt": attempt,
            },
        )
        row = result.row()
        row["base_task"] = s.base_task
        row["record"] = str(s.record_dir(self.run_dir).relative_to(self.run_dir) / f"attempt{attempt}" / result.record)
        write_row(s.outcome_path(self.run_dir), row)
        return row


def learn(model: dict, task: str, summary_root: str, learn_dir: str) -> dict:
    """Summary learning for one (model, task): no simulator unless a demo must be recorded."""
    m = make_model(ModelConfig(**model))
    result = learn_summary(m, task, SummaryStore(Path(summary_root)), Path(learn_dir))
    return {"task": task, "end_reason": result.end_reason, "error": result.error, "learned": result.summary is not None}
