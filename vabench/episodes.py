"""What one episode is (:class:`EpisodeSpec`): the condition, task, seed and repetition, with its
deterministic place in a run folder, so a rerun knows what is already done. A plain frozen value
of the vocabulary's words: the driver expands a run into specs (:mod:`vabench.config.specs`), they
travel to workers as they are, the harness runs one, and its row carries the spec's identity."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

from vabench.vocab import (
    Intervention,
    ObservationProfile,
    Perturbation,
    Render,
    Robot,
    SummaryMode,
    Track,
    condition_label,
    summary_mode,
)


@dataclass(frozen=True)
class EpisodeSpec:
    model: str  # the row's model id (ModelConfig.name, or the agent's own name)
    protocol: str
    summary_source: str  # own | none | shared:<model id>
    track: str
    task: str
    base_task: str  # the family a held-out variant belongs to; the summary it reads
    seed: int
    run_index: int = 1
    observation: str | None = (
        ObservationProfile.PAPER
    )  # harness.observation; in the condition and folder when not paper
    render: str | None = Render.PAPER  # the render preset; in the condition and the folder when not paper
    # the interventions in force (vocab.intervention_label: harness.intervention, summary=expert); in the
    # condition and the folder when not none
    intervention: str | None = Intervention.NONE
    robot: str | None = Robot.PANDA  # the embodiment; in the condition and the folder when not panda
    perturbation: str | None = Perturbation.NONE  # none | <kind>:<level>; in the condition and folder when not none
    # (None, in an episode outside any run: the harness fills in what it uses)

    @property
    def condition(self) -> str:
        return condition_label(
            self.model,
            self.protocol,
            self.summary_source,
            self.observation,
            self.render,
            self.intervention,
            self.robot,
            self.perturbation,
        )

    @property
    def summary_mode(self) -> SummaryMode:
        return summary_mode(self.summary_source)

    @property
    def transfer(self) -> bool:
        """A held-out variant: its prompt says the scene may differ from the demonstration."""
        return self.track == Track.TRANSFER

    def identity(self) -> dict:
        """The outcome row's episode identity (:class:`vabench.outcomes.OutcomeRow` fields)."""
        return {**asdict(self), "condition": self.condition}

    @property
    def key(self) -> str:
        """Folder of this episode inside the run folder (filesystem-safe, deterministic)."""
        profile = () if self.observation == ObservationProfile.PAPER else (f"observation_{self.observation}",)
        render = () if self.render == Render.PAPER else (f"render_{self.render}",)
        named = () if self.intervention in (None, Intervention.NONE) else (f"intervention_{self.intervention}",)
        robot = () if self.robot in (None, Robot.PANDA) else (f"robot_{self.robot}",)
        look = () if self.perturbation in (None, Perturbation.NONE) else (slug(f"perturbation_{self.perturbation}"),)
        return "/".join(
            (
                slug(self.model),
                *profile,
                *render,
                *named,
                *robot,
                *look,
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


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_") or "_"
