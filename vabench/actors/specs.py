"""Episode specs: a run configuration expanded into (condition x task x seed x run) episodes, each
with a deterministic place in the run folder, so a rerun knows what is already done."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

from .config import OFFLINE_MODELS, RunConfig


@dataclass(frozen=True)
class EpisodeSpec:
    model: str
    protocol: str
    summary_source: str
    track: str
    task: str
    base_task: str
    seed: int
    run_index: int

    @property
    def condition(self) -> str:
        return f"{self.model} | {self.protocol} | summary {self.summary_source}"

    @property
    def key(self) -> str:
        """Folder of this episode inside the run folder (filesystem-safe, deterministic)."""
        return "/".join(
            (
                slug(self.model),
                self.protocol,
                slug(self.summary_source),
                self.track,
                self.task,
                f"seed{self.seed}_run{self.run_index}",
            )
        )

    def outcome_path(self, run_dir: Path) -> Path:
        return Path(run_dir) / "outcomes" / f"{self.key}.parquet"

    def record_dir(self, run_dir: Path) -> Path:
        return Path(run_dir) / "_records" / self.key

    def as_dict(self) -> dict:
        return asdict(self)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_") or "_"


def summary_source(run: RunConfig) -> str:
    """Offline agents read no summary: their episodes say ``none`` whatever the condition asked."""
    return "none" if run.model.model in OFFLINE_MODELS else run.summary


def expand(run: RunConfig) -> list[EpisodeSpec]:
    from vabench.agents.summaries import summary_task
    from vabench.envs.seeds import eval_seeds

    name = run.model.name or run.model.model
    specs = []
    for run_index in range(1, run.runs + 1):
        for protocol in run.protocols:
            for task in run.tasks:
                verified = eval_seeds(task)
                if run.seeds is None:
                    seeds = verified
                elif isinstance(run.seeds, int):
                    seeds = verified[: run.seeds]
                else:
                    seeds = list(run.seeds)
                for seed in seeds:
                    specs.append(
                        EpisodeSpec(
                            name, protocol, summary_source(run), run.track, task, summary_task(task), seed, run_index
                        )
                    )
    return specs
