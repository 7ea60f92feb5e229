"""The benchmark's words, defined once: protocols with their properties, tracks, summary modes,
episode statuses and end reasons, arm counts.

Every layer (envs, agents, actors, analysis) imports these instead of re-deriving them from
strings, so a new protocol or mode is added here and nowhere else. This module imports nothing
from vabench and nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Protocol:
    """How the model sees the scene (paper 3.4, C.6-C.7)."""

    name: str
    camera_actions: bool  # True: one movable camera and the Table 27 camera actions (active)
    about: str

    @property
    def bundle(self) -> bool:
        """Every observation is the fixed five-view bundle of the C.7 observer (passive); earlier
        bundles are never re-sent."""
        return not self.camera_actions

    def __str__(self) -> str:
        return self.name


ACTIVE = Protocol("active", True, "the model chooses viewpoints with camera actions; one current image per request")
PASSIVE = Protocol("passive", False, "five fixed views of the current moment per request; no camera actions")
PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (ACTIVE, PASSIVE)}


def protocol_named(name: str | Protocol) -> Protocol:
    """The protocol called ``name``; ValueError names the allowed values."""
    if isinstance(name, Protocol):
        return name
    try:
        return PROTOCOLS[name]
    except (KeyError, TypeError):
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {name!r}") from None


# Tracks (paper Table 2, 5, 15): which part of the suite a task belongs to.
BASE, TRANSFER, LONG_HORIZON = "base", "transfer", "long_horizon"
TRACKS: dict[str, str] = {
    BASE: "the 14 base task families",
    TRANSFER: "held-out variants of base families, reusing their base task's summary",
    LONG_HORIZON: "the five-object basket task, learned from atomic-skill demonstrations",
}


def track(name: str) -> str:
    if name not in TRACKS:
        raise ValueError(f"track must be one of {', '.join(TRACKS)}, got {name!r}")
    return name


@dataclass(frozen=True)
class SummaryMode:
    """Which demonstration summary an episode carries (paper 3.3, Table 6): the evaluated model's
    ``own``, ``none``, or another model's (``shared:<model id>``, the shared-summary control)."""

    kind: str  # own | none | shared
    source: str | None = None  # the author of a shared summary

    def __str__(self) -> str:
        return f"shared:{self.source}" if self.kind == "shared" else self.kind


SUMMARY_MODES = ("own", "none", "shared:<model id>")


def summary_mode(text: str | SummaryMode) -> SummaryMode:
    """Parse ``own`` / ``none`` / ``shared:<model id>``; ValueError names the allowed forms."""
    if isinstance(text, SummaryMode):
        return text
    if text in ("own", "none"):
        return SummaryMode(text)
    if isinstance(text, str) and text.startswith("shared:") and text[len("shared:") :].strip():
        return SummaryMode("shared", text[len("shared:") :].strip())
    shown = repr(text) if len(repr(text)) <= 60 else repr(text)[:57] + "..."
    raise ValueError(f"unknown summary mode {shown}; allowed: {', '.join(SUMMARY_MODES)}")


# Outcome vocabulary (DESIGN.md, the outcome table).
OK, INFRA_ERROR = "ok", "infra_error"
STATUSES = (OK, INFRA_ERROR)  # infra_error: the episode could not be judged; excluded, retried
END_REASONS = ("success", "stop", "budget", "repairs_exhausted", "call_limit", "infra_error")


SINGLE, DUAL = "single", "dual"
PAPER_OBSERVATION = "paper"  # the observation profile of the paper's boundary (harness.observation's default)
PAPER_RENDER = "paper"  # the render preset of the paper's study: the reference's image sizes and encodings


def arms_label(arms: tuple[str, ...] | list[str]) -> str:
    """``single`` or ``dual``: the outcome table's name for a task's controlled arms."""
    return DUAL if len(arms) == 2 else SINGLE


def condition_label(
    model: str, protocol: str, summary_source: str, observation: str | None = None, render: str | None = None
) -> str:
    """The outcome table's ``condition``: one model under one protocol and summary source, the unit
    the paper compares. An observation profile or a render preset other than the paper's
    (``explained``; ``fast``) is part of the label, so its rows never pool with the paper's."""
    label = f"{model} | {protocol} | summary {summary_source}"
    if observation not in (None, PAPER_OBSERVATION):
        label += f" | observation {observation}"
    return label if render in (None, PAPER_RENDER) else f"{label} | render {render}"
