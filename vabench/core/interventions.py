"""The interventions and their input manifests, declared once (issue 27; the paper's Limitations).

The paper measures where a trajectory breaks but cannot say why: "Attributing a breakpoint to
perception, planning, numerical grounding, or execution would require interventions on those
components". Each intervention here is a named condition that hands the model exactly one declared
input beyond the paper's boundary (its :class:`Manifest`), so a difference in success from the
paper condition on the same seeds is attributable to that input. Its name is in every outcome row
(``intervention``), in the condition label and in the run info (``vabench.results.layout.RunInfo``); the boundary tests
(tests/test_interventions.py) check over HTTP that each run's requests differ from the paper's by
exactly the manifest. This module is data over the vocabulary and imports nothing else.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from vabench.core.errors import ConfigError
from vabench.core.registry import Registry
from vabench.core.vocab import ACTIVE, PASSIVE, PROTOCOLS, Intervention, SummaryKind, protocol_named

ALL_VIEWS = ("topdown", "side", "front_side_45", "side_top_45", "oblique_45")  # the C.7 order


@dataclass(frozen=True)
class Manifest:
    """What one intervention gives the model beyond the paper's boundary, and what it removes."""

    name: Intervention
    removes: str  # the factor it takes off the model's hands (the attribution's column)
    adds: tuple[str, ...]  # exactly what reaches the model in addition (or instead), in words
    protocols: tuple[str, ...] = tuple(PROTOCOLS)  # the protocols it composes with
    views: tuple[str, ...] | None = None  # the passive views every observation carries (view interventions)

    def record(self) -> dict:
        """As the run info (``RunInfo.interventions``) lists it."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


MANIFESTS: Registry[Manifest] = Registry(
    "intervention",
    (
        (m.name, m)
        for m in (
            Manifest(Intervention.NONE, "nothing", ()),
            Manifest(
                Intervention.EXPERT_SUMMARY,
                "summary quality",
                (
                    "system prompt: the expert-written procedure summary of the base task, in the learned "
                    "summaries' schema, instead of the model's own (no seed-specific numbers)",
                ),
            ),
            Manifest(
                Intervention.OBJECT_POSES,
                "perception",
                (
                    "observation text: one line per task body (its name, world centre x y z in metres, yaw of its "
                    "long horizontal axis in degrees, extent along / across that axis and height in metres, "
                    "static or movable), after the robot state",
                    "system prompt: one rule saying the observation states them",
                ),
            ),
            Manifest(
                Intervention.DEPTH_POINT,
                "metric grounding",
                (
                    "tool perception.depth_point (free, does not advance the episode): a pixel (u, v) of the current "
                    "image (passive: with its view) -> the world point x y z under it from the depth buffer, or "
                    "'no surface'",
                    "system prompt: the tool's line in the tool list",
                ),
            ),
            Manifest(
                Intervention.VIEWS_1,
                "view integration and context (one whole-table view)",
                ("observation images: the topdown view only, instead of the five",),
                protocols=(PASSIVE.name,),
                views=ALL_VIEWS[:1],
            ),
            Manifest(
                Intervention.VIEWS_3,
                "part of the view context (three views)",
                ("observation images: topdown, side and oblique_45 only, instead of the five",),
                protocols=(PASSIVE.name,),
                views=("topdown", "side", "oblique_45"),
            ),
            Manifest(
                Intervention.VIEWS_5,
                "view choice (the passive views at no step cost)",
                ("observation images: the five passive views of the moment after the active camera's image",),
                protocols=(ACTIVE.name,),
                views=ALL_VIEWS,
            ),
        )
    ),
    "intervention=NAME",
)


def manifest(name: str) -> Manifest:
    """The manifest of ``name``; UnknownName (a ValueError) names the allowed values."""
    return MANIFESTS[name]


def check_composes(intervention: str, protocols, summary: str, offline: bool) -> None:
    """ValueError naming what does not compose: a view intervention under a protocol it does not
    change, or summary=expert for an offline agent (which reads no summary)."""
    m = manifest(intervention)
    wrong = [str(protocol_named(p)) for p in protocols if str(protocol_named(p)) not in m.protocols]
    if wrong:
        allowed = " or ".join(f"protocol={p}" for p in m.protocols)
        raise ConfigError(
            f"intervention={intervention} does not compose with protocol={','.join(wrong)} "
            f"(it changes the {'/'.join(m.protocols)} observation only); use {allowed}"
        )
    if offline and str(summary) == SummaryKind.EXPERT:
        raise ConfigError(
            "summary=expert does not compose with an offline agent (it reads no summary); use summary=none"
        )


def in_force(intervention: str, summary_source: str) -> list[Manifest]:
    """The manifests of a condition's interventions (empty: the paper condition)."""
    named = [Intervention.EXPERT_SUMMARY] if str(summary_source) == SummaryKind.EXPERT else []
    return [MANIFESTS[n] for n in (*named, Intervention(intervention)) if n != Intervention.NONE]
