"""The camera-protocol comparison: active vs passive per (model, summary source) on matched runs
and families, pooled per subset with a sign test (Table 4) or per family (Table 10). Shared
rules: ``common``."""

from __future__ import annotations

import pandas as pd

from vabench.core.paper import PAPER_COUNTS
from vabench.core.vocab import ACTIVE, PASSIVE, Track

from ..load import exclusion_note, privileged_note, reused, summary_note
from .common import (
    _coverage,
    _finish,
    _judged,
    _paired,
    _paired_subsets,
    _pct,
    _scope,
)


# ----------------------------------------------------------------------------------- Tables 4 and 10
def active_passive(df: pd.DataFrame, per_task: bool = False) -> pd.DataFrame:
    """Tables 4 and 10: active vs passive camera protocol per (model, summary source), base track,
    on matched runs and on families judged under both protocols.

    ``per_task=False`` (Table 4): per subset, pooled k/n and rate for each protocol,
    delta = passive - active (pp), and a two-sided sign test over the subset's families (p = 0.5
    on the non-tied families; ``ties`` counts the families left out). ``per_task=True`` (Table 10):
    one row per family with its direction."""
    rows_t, rows_s, notes = reused("active_passive", df, lambda: _compare(df))
    notes = list(notes)
    common = ["active_k", "active_n", "active_pct", "passive_k", "passive_n", "passive_pct", "delta_pp"]
    if per_task:
        cols = ["model", "summary_source", "arms", "task", *common, "direction"]
        title = "Active vs passive per family: successes / judged episodes (Table 10)"
        return _finish(rows_t, cols, "active_passive_tasks", title, notes)
    cols = ["model", "summary_source", "subset", "families", "paper_families", "runs", *common]
    cols += ["passive_worse", "passive_better", "ties", "sign_p"]
    title = "Active vs passive camera protocol: pooled success, delta = passive - active, sign test (Table 4)"
    return _finish(rows_s, cols, "active_passive", title, notes)


def _compare(df: pd.DataFrame) -> tuple[list, list, list[str]]:
    """The rows of Tables 4 (per subset) and 10 (per family), and their notes, computed together."""
    p, notes = _scope(df, Track.BASE)
    j = _judged(p)
    rows_t, rows_s, cover = [], [], {}
    for (model, source), g in j.groupby(["model", "summary_source"]):
        a, ps = g[g["protocol"] == ACTIVE.name], g[g["protocol"] == PASSIVE.name]
        if a.empty or ps.empty:
            continue
        paired = _paired(g, a, ps, (ACTIVE.name, PASSIVE.name), "protocol", f"{model} ({source})", notes)
        if paired is None:
            continue
        fr, runs = paired
        for f in fr.itertuples(index=False):
            direction = "tie" if f.ra == f.rb else ("passive worse" if f.rb < f.ra else "passive better")
            rows_t.append([model, source, f.arms, f.task, f.ka, f.na, f.ra, f.kb, f.nb, f.rb, f.d, direction])
        for s, fams, ka, na, kp, np_, worse, better, ties, p_sign in _paired_subsets(fr):
            cover.setdefault(f"{model} ({source})", {})[s] = fams
            rows_s.append(
                [model, source, s, fams, PAPER_COUNTS[s], runs, ka, na, _pct(ka, na), kp, np_, _pct(kp, np_)]
                + [_pct(kp, np_) - _pct(ka, na), worse, better, ties, p_sign]
            )
    if not rows_s:
        notes.append("No model has judged base-track episodes under both the active and the passive protocol.")
    notes += _coverage(cover, "total and sign test")
    notes += [
        "Delta = passive - active (pp). Sign test: two-sided binomial test (p = 0.5) over the non-tied families "
        "(paper l.215); a family is tied when both protocols have the same success rate.",
        exclusion_note(p),
        summary_note(p),
        *privileged_note(j["model"].unique()),
    ]
    return rows_t, rows_s, notes
