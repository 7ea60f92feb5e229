"""What one episode is (:class:`EpisodeSpec`): its :class:`~vabench.core.condition.Condition`, task,
seed and repetition, with its deterministic place in a run folder, so a rerun knows what is
already done. A plain frozen value: the driver expands a run into specs
(:mod:`vabench.run.config.specs`), they travel to workers as they are, the worker builds the env for
the condition's look, the harness runs the spec, and its row carries the spec's identity."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from vabench.core.condition import Condition
from vabench.core.vocab import SummaryMode, Track
from vabench.results.layout import OUTCOMES, RECORDS


@dataclass(frozen=True)
class EpisodeSpec:
    condition: Condition
    task: str
    seed: int
    run_index: int = 1
    track: str = Track.BASE  # the task's track (its registered class says)
    base_task: str = ""  # the family a held-out variant belongs to, whose summary it reads ("": the task)

    def __post_init__(self):
        if not self.base_task:
            object.__setattr__(self, "base_task", self.task)

    @classmethod
    def of_row(cls, row) -> EpisodeSpec:
        """The spec a row (any mapping with its identity columns) names."""
        track, base = row.get("track") or Track.BASE, row.get("base_task") or ""
        return cls(
            Condition.of_row(row), str(row["task"]), int(row["seed"]), int(row.get("run_index") or 1), track, base
        )

    @property
    def protocol(self) -> str:
        return self.condition.protocol

    @property
    def summary_mode(self) -> SummaryMode:
        return self.condition.summary

    @property
    def transfer(self) -> bool:
        """A held-out variant: its prompt says the scene may differ from the demonstration."""
        return self.track == Track.TRANSFER

    def identity(self) -> dict:
        """The outcome row's episode identity (:class:`vabench.results.outcomes.OutcomeRow` fields)."""
        own = {"track": self.track, "task": self.task, "base_task": self.base_task}
        return {**self.condition.columns(), **own, "seed": self.seed, "run_index": self.run_index}

    @property
    def key(self) -> str:
        """Folder of this episode inside the run folder (filesystem-safe, deterministic)."""
        c = self.condition
        departures = tuple(slug(f) if f.startswith("perturbation_") else f for f in c.folders())
        return "/".join(
            (slug(c.model), *departures, c.protocol, slug(c.summary_source), self.track, self.task)
            + (f"seed{self.seed}_run{self.run_index}",)
        )

    def outcome_path(self, run_dir: Path) -> Path:
        return Path(run_dir) / OUTCOMES / f"{self.key}.parquet"

    def record_dir(self, run_dir: Path) -> Path:
        return Path(run_dir) / RECORDS / self.key

    def place(self, attempt: int) -> str:
        """Where an attempt's record lives in a run folder (relative): also the attempt's name
        while it is in flight (the progress bar's in-flight figures)."""
        return (self.record_dir(Path()) / f"attempt{attempt}").as_posix()


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_") or "_"
