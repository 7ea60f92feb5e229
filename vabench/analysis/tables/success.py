"""Success rates on a track: the per-task matrix (Tables 7-9), the macro-averages (Table 3, eq. 3)
and subtask progress as a checkpoint micro-average (eq. 12). Shared rules: ``common``."""

from __future__ import annotations

import pandas as pd

from vabench.core.paper import PAPER_COUNTS
from vabench.core.vocab import Status, Track

from ..load import exclusion_note, privileged_note, summary_note
from ..stats import mean_sd, wilson_interval
from .common import (
    SUBSET_NAMES,
    SUBSETS,
    _arms_of,
    _coverage,
    _empty_cells,
    _family_rates,
    _finish,
    _in_subset,
    _judged,
    _macro,
    _order,
    _pct,
    _pooled,
    _scope,
)


# ------------------------------------------------------------------------------------ Tables 7-9 (+ 3)
def success_matrix(df: pd.DataFrame, track: str | None = Track.BASE) -> pd.DataFrame:
    """Tables 7-9: task x condition. Per cell: mean and sample SD across runs of the per-run
    success rate (%), the number of runs, pooled k/n with its rate and 95% Wilson interval, and
    the infra_error rows excluded. A cell with no judged episode is NaN (k = n = 0), never 0."""
    p, notes = _scope(df, track, observation=None, look=False)
    j = _judged(p)
    arms = _arms_of(p)
    tasks = _order(p["task"].unique(), arms)
    conds = sorted(p["condition"].unique())
    cells = dict(list(j.groupby(["condition", "task"])))
    infra = p[p["state"] == Status.INFRA_ERROR].groupby(["condition", "task"]).size()
    rows, empty, one_run = [], [], False
    for c in conds:
        for t in tasks:
            g = cells.get((c, t))
            per_run = (g.groupby("run_index")["y"].mean() * 100) if g is not None else pd.Series(dtype=float)
            k, n = _pooled(g) if g is not None else (0, 0)
            mean, sd = mean_sd(per_run.values)
            lo, hi = wilson_interval(k, n)
            if n == 0:
                empty.append((c, t))
            one_run |= len(per_run) == 1
            rows.append(
                [
                    c,
                    t,
                    arms.get(t),
                    len(per_run),
                    mean,
                    sd,
                    k,
                    n,
                    _pct(k, n),
                    100 * lo,
                    100 * hi,
                    int(infra.get((c, t), 0)),
                ]
            )
    counts = {s: sum(1 for t in tasks if s == "all" or arms.get(t) == s) for s in SUBSETS}
    notes += [
        f"Tasks present: {counts['all']} ({counts['single']} single-arm, {counts['dual']} dual-arm) of the paper's "
        f"{PAPER_COUNTS['all']} ({PAPER_COUNTS['single']} + {PAPER_COUNTS['dual']})."
        if counts["all"] < PAPER_COUNTS["all"]
        else None,
        f"No judged episode (NaN, not 0): {_empty_cells(empty)}." if empty else None,
        "SD is NaN where a cell has one run." if one_run else None,
        exclusion_note(p),
        summary_note(p),
        *privileged_note(conds),
    ]
    cols = ["condition", "task", "arms", "runs", "mean_pct", "sd_pct", "k", "n", "rate_pct"]
    cols += ["ci_low_pct", "ci_high_pct", "excluded"]
    title = "Per-task success (%): mean ± sample SD across runs; pooled k/n with 95% Wilson interval (Tables 7-9)"
    return _finish(rows, cols, "success_matrix", title, notes)


# ------------------------------------------------------------------------------------- Table 3, eq. 3
def macro_averages(df: pd.DataFrame, track: str | None = Track.BASE) -> pd.DataFrame:
    """Table 3 / eq. 3: per condition and run, the single-arm, dual-arm and all-family macro-average
    of per-family success rates (families present); then mean and sample SD across runs (NaN with
    one run). ``families`` is the count covered, ``paper_families`` the paper's 11 / 3 / 14."""
    p, notes = _scope(df, track, observation=None, look=False)
    j = _judged(p)
    rates = _family_rates(j, ["condition"])
    rows, cover, short = [], {}, []
    for c in sorted(p["condition"].unique()):
        m = _macro(rates[rates["condition"] == c])
        pc = p[p["condition"] == c]
        for s in SUBSETS:
            x = m[s]
            cover.setdefault(c, {})[s] = x["families"]
            excluded = int((_in_subset(pc, s)["state"] == Status.INFRA_ERROR).sum())
            rows.append(
                [c, s, x["families"], PAPER_COUNTS[s], x["runs"], x["mean_pct"], x["sd_pct"], x["per_run"], excluded]
            )
            if x["short_runs"]:
                short.append(f"{c} ({SUBSET_NAMES[s]}): run(s) {x['short_runs']} cover fewer families")
    notes += _coverage(cover)
    notes += [
        f"Runs covering fewer families than their condition: {'; '.join(short)}." if short else None,
        "SD is the sample SD of run-level macro-averages (NaN with one run); it measures run-to-run variation.",
        exclusion_note(p),
        summary_note(p),
        *privileged_note(p["condition"].unique()),
    ]
    cols = ["condition", "subset", "families", "paper_families", "runs", "mean_pct", "sd_pct", "per_run", "excluded"]
    title = "Macro-average success (%) per condition: mean ± sample SD across runs (Table 3, eq. 3)"
    return _finish(rows, cols, "macro_averages", title, notes)


# ------------------------------------------------------------------------------------------- eq. 12
def checkpoint_progress(df: pd.DataFrame, track: str | None = Track.BASE, run_index: int | None = None) -> pd.DataFrame:
    """Eq. 12: subtask progress as a checkpoint micro-average, sum(checkpoints_done) /
    sum(checkpoints_total) over judged episodes, per condition and task and per subset.

    A judged episode reporting no checkpoint count (it ended before its first action) is scored
    with its task's checkpoint count and its done count (0), so every episode weighs its checkpoints.
    ``run_index`` restricts to one run (the paper uses one annotated run)."""
    p, notes = _scope(df, track, observation=None, extra=("checkpoints_done", "checkpoints_total"), look=False)
    if run_index is not None:
        p = p[p["run_index"] == run_index]
    j = _judged(p).copy()
    done = pd.to_numeric(j["checkpoints_done"], errors="coerce").fillna(0)
    total = pd.to_numeric(j["checkpoints_total"], errors="coerce").fillna(0)
    per_task = total.groupby(j["task"]).max()
    gap = total <= 0
    if gap.any():
        notes.append(
            f"{int(gap.sum())} judged episode(s) reported no checkpoint count; scored with their task's count."
        )
        total = total.where(~gap, j["task"].map(per_task).fillna(0))
    j["done"], j["total"] = done, total
    unscored = sorted(per_task[per_task <= 0].index)
    if unscored:
        notes.append(f"No checkpoint counts at all for: {', '.join(unscored)}; left out.")
    j = j[j["total"] > 0]
    arms = _arms_of(p)
    rows, cover = [], {}
    for c in sorted(j["condition"].unique()):
        g = j[j["condition"] == c]
        for t in _order(g["task"].unique(), arms):
            x = g[g["task"] == t]
            rows.append([c, "task", t, arms.get(t), 1, len(x), int(x["done"].sum()), int(x["total"].sum())])
        for s in SUBSETS:
            x = _in_subset(g, s)
            cover.setdefault(c, {})[s] = x["task"].nunique()
            rows.append([c, "subset", s, s, x["task"].nunique(), len(x), int(x["done"].sum()), int(x["total"].sum())])
    for r in rows:
        r.append(_pct(r[6], r[7]))
    if not rows:
        notes.append("No judged episodes with checkpoints.")
    notes += _coverage(cover, "micro-average")
    notes += [
        "Progress = sum of checkpoints done / sum of checkpoints scored (micro-average, eq. 12): weighted by "
        "checkpoint, not by family; not an upper bound on success.",
        f"Run {run_index} only." if run_index is not None else "All runs pooled.",
        exclusion_note(p),
        summary_note(p),
        *privileged_note(p["condition"].unique()),
    ]
    cols = ["condition", "scope", "task", "arms", "families", "episodes", "done", "total", "progress_pct"]
    title = "Subtask progress (%): checkpoint micro-average (eq. 12)"
    return _finish(rows, cols, "checkpoint_progress", title, notes)
