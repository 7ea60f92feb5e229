"""The observation-profile ablation: the paper's boundary (``paper``: two booleans per step) vs the
``explained`` profile (+ budget left, reason texts, table height, earlier images), per (model, protocol, summary
source) on matched runs and families, pooled per subset with a sign test, laid out like Table 4.
Not a paper table: it measures how much the richer feedback is worth. Shared rules: ``common``."""

from __future__ import annotations

import pandas as pd

from vabench.core.paper import PAPER_COUNTS
from vabench.core.vocab import ObservationProfile, Track

from ..load import exclusion_note, privileged_note, summary_note
from .common import (
    _coverage,
    _finish,
    _judged,
    _paired,
    _paired_subsets,
    _pct,
    _scope,
)

PAPER, EXPLAINED = ObservationProfile.PAPER, ObservationProfile.EXPLAINED


def feedback_ablation(df: pd.DataFrame) -> pd.DataFrame:
    """Base track: per (model, protocol, summary source) with rows of both profiles, pooled k/n per
    subset for each, delta = explained - paper (pp), and a two-sided sign test over the families
    (p = 0.5 on the non-tied ones)."""
    p, notes = _scope(df, Track.BASE, observation=None)
    j = _judged(p)
    rows, cover = [], {}
    for (model, protocol, source), g in j.groupby(["model", "protocol", "summary_source"]):
        a, b = g[g["observation"] == PAPER], g[g["observation"] == EXPLAINED]
        if a.empty or b.empty:
            continue
        name = f"{model} ({protocol}, {source})"
        paired = _paired(g, a, b, (PAPER, EXPLAINED), "profile", name, notes)
        if paired is None:
            continue
        fr, runs = paired
        for s, fams, ka, na, kb, nb, worse, better, ties, p_sign in _paired_subsets(fr):
            cover.setdefault(name, {})[s] = fams
            rows.append(
                [model, protocol, source, s, fams, PAPER_COUNTS[s], runs, ka, na, _pct(ka, na), kb, nb]
                + [_pct(kb, nb), _pct(kb, nb) - _pct(ka, na), worse, better, ties, p_sign]
            )
    if not rows:
        notes.append("No model has judged base-track episodes under both the paper and the explained profile.")
    notes += _coverage(cover, "total and sign test")
    notes += [
        "paper: per step the step count, instruction, proprioception, executed actions, last_action_valid and "
        "last_planner_success, and the current image(s). explained: + the budget left, the env's reason texts, the "
        "camera-chain count, the table height and earlier active images re-sent (so a delta is their joint "
        "effect). Delta = explained - paper (pp); sign test: two-sided binomial test (p = 0.5) over "
        "the non-tied families.",
        exclusion_note(p),
        summary_note(p),
        *privileged_note(j["model"].unique()),
    ]
    cols = ["model", "protocol", "summary_source", "subset", "families", "paper_families", "runs"]
    cols += ["paper_k", "paper_n", "paper_pct", "explained_k", "explained_n", "explained_pct", "delta_pp"]
    cols += ["explained_worse", "explained_better", "ties", "sign_p"]
    title = "Observation profile: paper vs explained feedback, pooled success, delta = explained - paper, sign test"
    return _finish(rows, cols, "feedback_ablation", title, notes)
