"""What the paper compares, as one frozen value (:class:`Condition`): one model under one protocol
and summary source, plus every named departure from the paper's measurement (an observation
profile, an intervention, a render preset, a robot, a visual perturbation, a step budget scale,
an action interface, the training split's seeds).

One value travels from the launcher to the worker, the env, the harness, the row and the review
app, and every one of them reads it: the worker builds the env for its :attr:`Condition.look`, the
harness reads the protocol, the observation profile, the intervention and the budget scale, the
row's columns and the label come from :meth:`Condition.columns` and :attr:`Condition.label`. Its
defaults are the paper's measurement (3.4, C.6-C.8, D.1-D.2; the reference harness where the paper
is silent), and they are declared here once: a departure from one of them is a named, recorded
ablation that shows in the label and the run folder's path, so its rows never pool with the paper's.

The departure keys are declared once, as the fields made with :func:`key`: the run folder's order,
the row's columns and their defaults (vabench.results.outcomes), the config's top-level keys and their
checks (vabench.run.config.choices), the launcher's words, the analysis's fills and the export's rows
are all read from :data:`KEYS`, so a new key is one field here.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field, fields, replace

from vabench.core.vocab import (
    ACTIVE,
    ControlMode,
    Intervention,
    ObservationProfile,
    Perturbation,
    Render,
    Robot,
    Split,
    SummaryKind,
    SummaryMode,
    summary_mode,
)

BUDGET_FORM = "a number > 0; unset: the agent's own (1; a policy's 10)"
LAST = 99  # the label rank of a key that names none: after the others, in field order


def key(default, about: str, check: str, *, label: int = LAST, kind: type = str, **rules):
    """A departure key: its paper's value, what the row's column says (``about``), and its rules
    (``field(metadata=...)``): ``check``, ``module:name`` of a registry (its ``check``) or a
    callable that raises ValueError for a value it refuses; ``label``, its place in the label
    (the field order is the run folder's, which never changes: a resumed run finds its episodes);
    ``kind``, the value's type (str, float); and optional rules: ``look`` (the env is built for
    it), ``agent`` (an agent may declare its own default, as a class attribute of this name: the
    config's default is then null), ``fill`` (False: the analysis leaves an older row's missing
    column empty), ``choices`` (``module:name`` of what ``--help`` lists, else the check's names),
    ``form`` (the help's words for the values)."""
    return field(default=default, metadata={"about": about, "check": check, "label": label, "kind": kind, **rules})


def positive(value: float) -> None:
    """The check of a scale: a number > 0."""
    if not value > 0 or math.isinf(value):
        raise ValueError(f"must be a number > 0, got {value:g}")


@dataclass(frozen=True)
class Condition:
    model: str  # the row's model id: the agent's name (ModelConfig.name, else model.id)
    protocol: str = ACTIVE.name  # active | passive
    summary_source: str = SummaryKind.NONE  # own | none | expert | shared:<model id>
    observation: str = key(
        ObservationProfile.PAPER,
        " | ".join(ObservationProfile) + ": what the model is told per step (observation=)",
        "vabench.run.config.choices:PROFILES",
        label=0,
    )
    render: str = key(
        Render.PAPER,
        " | ".join(Render) + ": the render preset (image sizes and encodings; vabench.envs.render)",
        "vabench.envs.render:RENDER_PRESETS",
        label=2,
        look=True,
        fill=False,  # rows before schema 5 named no preset: their images were not the paper preset's
    )
    intervention: str = key(
        Intervention.NONE,
        "the interventions in force, joined by + (none: the paper's boundary; vabench.core.interventions)",
        "vabench.core.interventions:MANIFESTS",
        label=1,
    )
    robot: str = key(
        Robot.PANDA,
        " | ".join(Robot) + ": the embodiment (robot=NAME; vabench.envs.sim.embodiments)",
        "vabench.envs.sim.embodiments:EMBODIMENTS",
        label=3,
        look=True,
    )
    perturbation: str = key(
        Perturbation.NONE,
        "none | <kind>:<level>: the visual perturbation (perturbation=; vabench.envs.perturb)",
        "vabench.envs.perturb:PerturbationConfig",
        label=4,
        look=True,
        choices="vabench.envs.perturb:KINDS",
        form="vabench.envs.perturb:FORM",
    )
    budget_scale: float = key(
        1.0,
        "the episode's step budget is the task's times this, at least 1 (budget_scale=; 1: the paper's; "
        "a policy's default: 10, vabench.agents.models.policy)",
        "vabench.core.condition:positive",
        kind=float,
        agent=True,
        form="vabench.core.condition:BUDGET_FORM",
    )
    control: str = key(
        ControlMode.COMMANDS,
        " | ".join(ControlMode) + ": the action interface (control=; commands: the paper's; vabench.envs.control)",
        "vabench.envs.control:CONTROLS",
        label=5,
        look=True,
    )
    split: str = key(
        Split.EVAL,
        " | ".join(Split) + ": whose seeds the episode played (split=; eval: the evaluation manifests; "
        "train: the training split's, vabench.envs.seeds)",
        "vabench.run.config.choices:SPLITS",
        label=6,
    )

    @property
    def look(self) -> tuple:
        """(render, robot, perturbation, control): what the env is built for (:data:`LOOK`)."""
        return tuple(getattr(self, k) for k in LOOK)

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

    def budget(self, task_budget: int) -> int:
        """The env steps an episode of a task with this step budget may take (an agent may still
        keep its own: a replay, the recorded episode's; vabench.agents.chat.model.Model.step_budget)."""
        return max(1, round(task_budget * self.budget_scale))

    def values(self) -> dict:
        """Every departure key's value as the row says it, in the folder order (``intervention``:
        summary=expert shows as ``expert_summary`` there too)."""
        return {k: self.interventions if k == "intervention" else getattr(self, k) for k in KEYS}

    def departures(self) -> dict[str, str]:
        """The departures from the paper's measurement as words, in the label's order."""
        gone = {k: v for k, v in self.values().items() if v != default(k)}
        return {k: word(gone[k]) for k in LABEL_ORDER if k in gone}

    @property
    def label(self) -> str:
        """The outcome table's ``condition``: ``model | protocol | summary S`` and each departure."""
        parts = [self.model, self.protocol, f"summary {self.summary_source}"]
        return " | ".join(parts + [f"{k} {v}" for k, v in self.departures().items()])

    def columns(self) -> dict:
        """The outcome row's condition columns, and the label."""
        head = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in KEYS}
        return {**head, **self.values(), "condition": self.label}

    def folders(self) -> tuple[str, ...]:
        """The departures as folder names (``render_small``), between the model and the protocol, in
        the field order (the order run folders have always had: a resumed run finds its episodes)."""
        gone = self.departures()
        return tuple(f"{k}_{gone[k]}" for k in KEYS if k in gone)

    @classmethod
    def of_row(cls, row) -> Condition:
        """The condition a row (or any mapping with its columns) was run under; columns a row
        written before they existed lacks take the paper's value."""
        given = {f.name: row.get(f.name) for f in fields(cls) if f.name != "intervention"}
        named = [
            p for p in str(row.get("intervention") or Intervention.NONE).split("+") if p != Intervention.EXPERT_SUMMARY
        ]
        values = {k: kind(k)(v) for k, v in given.items() if v is not None and v == v}  # NaN: a missing column
        return cls(**values, intervention=named[0] if named else Intervention.NONE)

    def but(self, **changes) -> Condition:
        return replace(self, **changes)


def rule(name: str, what: str, otherwise=None):
    """One rule of a departure key (:func:`key`), or ``otherwise``."""
    return next(f.metadata.get(what, otherwise) for f in fields(Condition) if f.name == name)


def kind(name: str) -> type:
    """The type of a condition key's value (str unless its :func:`key` says)."""
    return rule(name, "kind", str)


def word(value) -> str:
    """A key's value as the label and the folder say it (a number without a trailing ``.0``)."""
    return format(value, "g") if isinstance(value, float) else str(value)


def named(path: str):
    """The object ``module:name`` names (a rule's registry, imported when first asked)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def check(name: str, value):
    """``value`` of condition key ``name`` as its type, once its check accepts it (ValueError)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"must be a {kind(name).__name__}, got {value!r}")
    try:
        value = kind(name)(value)
    except ValueError:
        raise ValueError(f"must be a number, got {value!r}") from None
    checker = named(rule(name, "check"))
    getattr(checker, "check", checker)(value)
    return value


def config_default(name: str):
    """The config's default of a condition key: the paper's value, or null where an agent may
    declare its own (:func:`key`'s ``agent``)."""
    return None if rule(name, "agent") else default(name)


def condition_label(model: str, protocol: str, summary_source: str, observation: str | None = None, **keys) -> str:
    """The label of a row's columns (``intervention`` as the row says it; None or NaN: a column an
    old row lacks, the paper's value), for tables that hold columns rather than conditions."""
    given = dict(model=model, protocol=protocol, summary_source=summary_source, observation=observation)
    return Condition.of_row({**given, **keys}).label


def default(name: str):
    """The paper's value of one condition key: the one place each default is declared."""
    return next(f.default for f in fields(Condition) if f.name == name)


KEYS: tuple[str, ...] = tuple(f.name for f in fields(Condition) if "check" in f.metadata)  # the folder order
LABEL_ORDER: tuple[str, ...] = tuple(sorted(KEYS, key=lambda k: rule(k, "label")))  # stable: ties in field order
LOOK: tuple[str, ...] = tuple(k for k in KEYS if rule(k, "look"))  # what an env is built for (EnvConfig)
DEFAULT_RENDER: str = default("render")
