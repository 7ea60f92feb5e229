"""The paper's suite as one table: which task families VA-Bench defines, their arms and track, and
the paper table that specifies each (shared/reference/va-bench-paper.txt).

The task registry (``vabench.envs.tasks``) is the source of truth for what exists here; this table
is what the paper reports against, so analysis can say "11 of 11 single-arm families" without
importing the simulator. A test checks it against the registry and the seed manifests. Tasks
that go beyond the paper register normally and simply do not appear here.
"""

from __future__ import annotations

from dataclasses import dataclass

from vabench.core.vocab import Arms, Track


@dataclass(frozen=True)
class PaperTask:
    name: str
    arms: str  # single | dual
    track: str  # base | transfer | long_horizon
    source: str  # where the paper specifies it
    base: str | None = None  # the base family of a held-out variant


def _heldout(base: str) -> PaperTask:
    return PaperTask(f"{base}_heldout", Arms.SINGLE, Track.TRANSFER, "Table 15", base)


PAPER_TASKS: tuple[PaperTask, ...] = (
    PaperTask("grasp_single_bottle", Arms.SINGLE, Track.BASE, "Table 22"),
    PaperTask("grasp_single_bottle_upright", Arms.SINGLE, Track.BASE, "Table 22"),
    PaperTask("grasp_single_cube", Arms.SINGLE, Track.BASE, "Table 22"),
    PaperTask("grasp_single_pen", Arms.SINGLE, Track.BASE, "Table 22"),
    PaperTask("grasp_pen_leaning_cube", Arms.SINGLE, Track.BASE, "Table 22"),
    PaperTask("place_cube_in_bowl", Arms.SINGLE, Track.BASE, "Table 23"),
    PaperTask("place_cube_on_cube", Arms.SINGLE, Track.BASE, "Table 23"),
    PaperTask("place_single_cube", Arms.SINGLE, Track.BASE, "Table 23"),
    PaperTask("place_single_bottle_upright", Arms.SINGLE, Track.BASE, "Table 23"),
    PaperTask("click_bell_right", Arms.SINGLE, Track.BASE, "Table 24"),
    PaperTask("beat_block_hammer_right", Arms.SINGLE, Track.BASE, "Table 24"),
    PaperTask("place_shoe", Arms.DUAL, Track.BASE, "Table 25"),
    PaperTask("handover_horizontal_block", Arms.DUAL, Track.BASE, "Table 25"),
    PaperTask("lift_pot", Arms.DUAL, Track.BASE, "Table 25"),
    *(
        _heldout(b)
        for b in (
            "grasp_single_bottle",
            "grasp_single_bottle_upright",
            "grasp_single_cube",
            "place_cube_in_bowl",
            "place_cube_on_cube",
            "place_single_bottle_upright",
            "place_single_cube",
        )
    ),
    PaperTask("put_everything_in_basket", Arms.SINGLE, Track.LONG_HORIZON, "Table 5 (Long)"),
)

_BASE = [t for t in PAPER_TASKS if t.track == Track.BASE]
PAPER_SINGLE_ARM = tuple(sorted(t.name for t in _BASE if t.arms == Arms.SINGLE))
PAPER_DUAL_ARM = tuple(t.name for t in _BASE if t.arms == Arms.DUAL)
PAPER_FAMILIES = PAPER_SINGLE_ARM + PAPER_DUAL_ARM
PAPER_HELD_OUT = tuple(t.name for t in PAPER_TASKS if t.track == Track.TRANSFER)
PAPER_COUNTS = {"single": len(PAPER_SINGLE_ARM), "dual": len(PAPER_DUAL_ARM), "all": len(PAPER_FAMILIES)}
PAPER_MATCHED_TRANSFER = len(PAPER_HELD_OUT)  # held-out families with a base counterpart (Tables 5, 15)
PAPER_OBJECTS_PER_EPISODE = 5  # long-horizon basket task (Table 5)
