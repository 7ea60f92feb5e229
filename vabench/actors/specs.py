"""Episode specs: a run configuration expanded into (condition x task x seed x run) episodes, each
with a deterministic place in the run folder, so a rerun knows what is already done."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

from vabench.agents.registry import is_offline
from vabench.vocab import PAPER_OBSERVATION, PAPER_RENDER, SummaryMode, condition_label, summary_mode

from .config import RunConfig


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
    observation: str = PAPER_OBSERVATION  # harness.observation; part of the condition (and the folder) when not paper
    render: str = PAPER_RENDER  # the render preset; part of the condition (and the folder) when not paper

    @property
    def condition(self) -> str:
        return condition_label(self.model, self.protocol, self.summary_source, self.observation, self.render)

    @property
    def summary_mode(self) -> SummaryMode:
        return summary_mode(self.summary_source)

    def identity(self) -> dict:
        """The outcome row's episode identity (:class:`vabench.outcomes.OutcomeRow` fields)."""
        return {**asdict(self), "condition": self.condition}

    @property
    def key(self) -> str:
        """Folder of this episode inside the run folder (filesystem-safe, deterministic)."""
        profile = () if self.observation == PAPER_OBSERVATION else (f"observation_{self.observation}",)
        render = () if self.render == PAPER_RENDER else (f"render_{self.render}",)
        return "/".join(
            (
                slug(self.model),
                *profile,
                *render,
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
    return "none" if is_offline(run.model.model) else str(run.summary)


def expand(run: RunConfig) -> list[EpisodeSpec]:
    """Every episode of the run: runs x protocols x tasks x seeds, in that nesting. A task's track
    and base task come from its registered class."""
    from vabench.envs.seeds import eval_seeds
    from vabench.envs.tasks import task_class

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
                cls = task_class(task)
                for seed in seeds:
                    specs.append(
                        EpisodeSpec(
                            run.model_name,
                            protocol,
                            summary_source(run),
                            cls.track,
                            task,
                            cls.summary_task,
                            seed,
                            run_index,
                            run.harness.observation,
                            run.render,
                        )
                    )
    return specs
