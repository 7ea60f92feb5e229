"""What the paper compares, as one frozen value (:class:`Condition`): one model under one protocol
and summary source, plus every named departure from the paper's measurement (an observation
profile, an intervention, a render preset, a robot, a visual perturbation).

One value travels from the launcher to the worker, the env, the harness, the row and the review
app, and every one of them reads it: the worker builds the env for its :attr:`Condition.look`, the
harness reads the protocol, the observation profile and the intervention, the row's columns and
the label come from :meth:`Condition.columns` and :attr:`Condition.label`. Its defaults are the
paper's measurement (3.4, C.6-C.8, D.1-D.2; the reference harness where the paper is silent), and
they are declared here once: a departure from one of them is a named, recorded ablation that shows
in the label and the run folder's path, so its rows never pool with the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from vabench.vocab import (
    ACTIVE,
    Intervention,
    ObservationProfile,
    Perturbation,
    Render,
    Robot,
    SummaryKind,
    SummaryMode,
    summary_mode,
)

LOOK = ("render", "robot", "perturbation")  # what an env is built for (vabench.envs.env.EnvConfig)


@dataclass(frozen=True)
class Condition:
    model: str  # the row's model id: the agent's name (ModelConfig.name, else model.id)
    protocol: str = ACTIVE.name  # active | passive
    summary_source: str = SummaryKind.NONE  # own | none | expert | shared:<model id>
    observation: str = ObservationProfile.PAPER  # what each observation tells the model
    render: str = Render.PAPER  # image sizes and encodings (vabench.envs.render)
    intervention: str = Intervention.NONE  # the harness's intervention (summary=expert is in summary_source)
    robot: str = Robot.PANDA  # the embodiment (vabench.envs.sim.embodiments)
    perturbation: str = Perturbation.NONE  # none | <kind>:<level> (vabench.envs.perturb)

    @property
    def look(self) -> tuple[str, str, str]:
        """(render, robot, perturbation): what the env is built for."""
        return self.render, self.robot, self.perturbation

    @property
    def summary(self) -> SummaryMode:
        return summary_mode(self.summary_source)

    @property
    def interventions(self) -> str:
        """The row's ``intervention``: every intervention in force, joined by ``+`` (``none``: the
        paper's boundary); summary=expert counts as ``expert_summary``."""
        named = [Intervention.EXPERT_SUMMARY] if self.summary_source == SummaryKind.EXPERT else []
        named += [self.intervention] if self.intervention != Intervention.NONE else []
        return "+".join(map(str, named)) or Intervention.NONE

    def departures(self) -> dict[str, str]:
        """The departures from the paper's measurement, in the label's order (``intervention`` as
        the row says it: summary=expert shows as ``expert_summary`` there too)."""
        out = {"observation": self.observation, "intervention": self.interventions, "render": self.render}
        out |= {"robot": self.robot, "perturbation": self.perturbation}
        return {k: v for k, v in out.items() if v != default(k)}

    @property
    def label(self) -> str:
        """The outcome table's ``condition``: ``model | protocol | summary S`` and each departure."""
        parts = [self.model, self.protocol, f"summary {self.summary_source}"]
        return " | ".join(parts + [f"{k} {v}" for k, v in self.departures().items()])

    def columns(self) -> dict:
        """The outcome row's condition columns, and the label."""
        cols = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "intervention"}
        return {**cols, "intervention": self.interventions, "condition": self.label}

    def folders(self) -> tuple[str, ...]:
        """The departures as folder names (``render_small``), between the model and the protocol, in
        the order run folders have always had (a resumed run finds its episodes where they were)."""
        gone = self.departures()
        order = ("observation", "render", "intervention", "robot", "perturbation")
        return tuple(f"{k}_{gone[k]}" for k in order if k in gone)

    @classmethod
    def of_row(cls, row) -> Condition:
        """The condition a row (or any mapping with its columns) was run under; columns a row
        written before they existed lacks take the paper's value."""
        given = {f.name: row.get(f.name) for f in fields(cls) if f.name != "intervention"}
        named = [
            p for p in str(row.get("intervention") or Intervention.NONE).split("+") if p != Intervention.EXPERT_SUMMARY
        ]
        values = {k: str(v) for k, v in given.items() if v is not None and v == v}  # NaN: a missing column
        return cls(**values, intervention=named[0] if named else Intervention.NONE)

    def but(self, **changes) -> Condition:
        return replace(self, **changes)


def condition_label(
    model: str,
    protocol: str,
    summary_source: str,
    observation: str | None = None,
    render: str | None = None,
    intervention: str | None = None,
    robot: str | None = None,
    perturbation: str | None = None,
) -> str:
    """The label of a row's columns (``intervention`` as the row says it; None or NaN: a column an
    old row lacks, the paper's value), for tables that hold columns rather than conditions."""
    given = dict(observation=observation, render=render, intervention=intervention, robot=robot)
    given |= dict(perturbation=perturbation, model=model, protocol=protocol, summary_source=summary_source)
    return Condition.of_row(given).label


def default(key: str):
    """The paper's value of one condition key: the one place each default is declared."""
    return next(f.default for f in fields(Condition) if f.name == key)


DEFAULT_RENDER: str = default("render")
