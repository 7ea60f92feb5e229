"""Local (open-weight) models: success count / judged episodes per subset (Table 19) and per task
(Table 20), with the summary's author. Shared rules: ``common``."""

from __future__ import annotations

import pandas as pd

from vabench.core.paper import PAPER_COUNTS
from vabench.core.vocab import Status, Track

from ..load import exclusion_note, privileged_note, summary_note
from .common import SUBSETS, _arms_of, _coverage, _finish, _in_subset, _judged, _order, _pct, _pooled, _scope


# ----------------------------------------------------------------------------------- Tables 19 and 20
def local_models(df: pd.DataFrame, models=None, per_task: bool = False) -> pd.DataFrame:
    """Tables 19 and 20: success count / judged episodes and rate per condition for single-arm,
    dual-arm and all families (base track), with the summary's author. ``models`` restricts to
    those model names (None: every model). ``per_task=True`` gives the per-task rates (Table 20)."""
    p, notes = _scope(df, Track.BASE)
    if models is not None:
        wanted = {str(m) for m in models}
        p = p[p["model_raw"].isin(wanted) | p["model"].isin(wanted)]
        if p.empty:
            notes.append(f"No rows for model(s): {', '.join(sorted(wanted))}.")
    j = _judged(p)
    arms = _arms_of(p)
    rows, task_rows, cover = [], [], {}
    for c in sorted(p["condition"].unique()):
        pc, g = p[p["condition"] == c], j[j["condition"] == c]
        summary = _summary_label(pc)
        for s in SUBSETS:
            sub = _in_subset(g, s)
            k, n = _pooled(sub)
            fams = sub["task"].nunique()
            cover.setdefault(c, {})[s] = fams
            excluded = int((_in_subset(pc, s)["state"] == Status.INFRA_ERROR).sum())
            rows.append([c, summary, s, fams, PAPER_COUNTS[s], k, n, _pct(k, n), excluded])
        for t in _order(pc["task"].unique(), arms):
            k, n = _pooled(g[g["task"] == t])
            task_rows.append([c, summary, arms.get(t), t, k, n, _pct(k, n)])
    notes += _coverage(cover, "count")
    notes += [
        "Entries pool judged episodes: the denominators are the judged episodes present (paper: 220 / 60 / 280).",
        exclusion_note(p),
        summary_note(p),
        *privileged_note(p["condition"].unique()),
    ]
    if per_task:
        cols = ["condition", "summary", "arms", "task", "k", "n", "rate_pct"]
        title = "Per-task success rates (%) (Table 20)"
        return _finish(task_rows, cols, "local_models_tasks", title, notes)
    cols = ["condition", "summary", "subset", "families", "paper_families", "k", "n", "rate_pct", "excluded"]
    title = "Success count / judged episodes and rate per subset (Table 19)"
    return _finish(rows, cols, "local_models", title, notes)


def _summary_label(pc: pd.DataFrame) -> str:
    models = sorted(set(pc["summary_model"].dropna()))
    if models:
        return ", ".join(models)
    return ", ".join(sorted(set(pc["summary_source"])))
