"""Beyond the base track: held-out transfer vs base on matched families (Tables 5, 15) and the
long-horizon composition track (Table 5 "Long"). Shared rules: ``common``."""

from __future__ import annotations

import pandas as pd

from vabench.core.paper import PAPER_MATCHED_TRANSFER, PAPER_OBJECTS_PER_EPISODE
from vabench.core.vocab import Track

from ..load import exclusion_note, privileged_note, summary_note
from .common import NAN, _finish, _judged, _pct, _pooled_by, _runs_note, _scope


# ----------------------------------------------------------------------------------- Tables 5 and 15
def heldout_vs_base(df: pd.DataFrame) -> pd.DataFrame:
    """Tables 5 and 15: held-out (transfer track) vs base on matched families, per condition.

    A transfer row maps to its family through ``base_task``; base rows are restricted to the
    transfer rows' run(s). Rows with scope ``family`` give both rates and delta = held-out - base;
    the ``average`` row averages the matched families' rates (equal weight) and its delta."""
    p, notes = _scope(df, None)  # paper rows only
    p = p[p["track"].isin([Track.BASE, Track.TRANSFER])]
    j = _judged(p)
    t_all, b_all = j[j["track"] == Track.TRANSFER], j[j["track"] == Track.BASE]
    unmapped = t_all["base_task"].isna()
    if unmapped.any():
        notes.append(f"{int(unmapped.sum())} transfer row(s) without base_task could not be matched and were left out.")
    t_all = t_all[~unmapped]
    rows, fewest = [], PAPER_MATCHED_TRANSFER
    for c in sorted(t_all["condition"].unique()):
        t = t_all[t_all["condition"] == c]
        runs = sorted(set(t["run_index"]))
        b_cond = b_all[b_all["condition"] == c]
        b = b_cond[b_cond["run_index"].isin(runs)]
        notes.append(_runs_note(c, {"held-out": runs, "base": sorted(set(b_cond["run_index"]))}, runs))
        fams = sorted(set(t["base_task"]) & set(b["task"]))
        missing = sorted(set(t["base_task"]) - set(b["task"]))
        if missing:
            notes.append(f"{c}: no matched base episodes for {', '.join(missing)}; left out.")
        fewest = min(fewest, len(fams))
        base_rates, held_rates = [], []
        base_by, held_by = _pooled_by(b, "task"), _pooled_by(t, "base_task")  # one groupby per side
        for f in fams:
            (kb, nb), (kh, nh) = base_by[f], held_by[f]
            base_rates.append(_pct(kb, nb))
            held_rates.append(_pct(kh, nh))
            rows.append([c, "family", f, 1, runs, kb, nb, base_rates[-1], kh, nh, held_rates[-1]])
        if fams:
            mb, mh = sum(base_rates) / len(fams), sum(held_rates) / len(fams)
            rows.append([c, "average", "(average)", len(fams), runs, NAN, NAN, mb, NAN, NAN, mh])
    for r in rows:
        r.append(r[10] - r[7])
    if not rows:
        notes.append("No condition has judged episodes on both the transfer and the base track.")
    if rows and fewest < PAPER_MATCHED_TRANSFER:
        notes.append(f"Fewer matched families than the paper's {PAPER_MATCHED_TRANSFER}: the average covers {fewest}+.")
    notes += [exclusion_note(p), summary_note(p), *privileged_note(p["condition"].unique())]
    cols = ["condition", "scope", "family", "families", "runs", "base_k", "base_n", "base_pct"]
    cols += ["heldout_k", "heldout_n", "heldout_pct", "delta_pp"]
    title = "Held-out transfer vs base on matched families (%), delta = held-out - base (Tables 5, 15)"
    return _finish(rows, cols, "heldout_vs_base", title, notes)


# ------------------------------------------------------------------------------ Table 5 (long horizon)
def long_horizon(df: pd.DataFrame, objects_per_episode: int = PAPER_OBJECTS_PER_EPISODE) -> pd.DataFrame:
    """Table 5 "Long": per condition and task on the long_horizon track, objects placed out of
    ``objects_per_episode`` x judged episodes, mean objects per episode, strict success k/n."""
    p, notes = _scope(df, Track.LONG_HORIZON, extra=("objects_placed",))
    j = _judged(p)
    rows = []
    for (c, t), g in j.groupby(["condition", "task"]):
        placed = pd.to_numeric(g["objects_placed"], errors="coerce")
        if placed.isna().any():
            notes.append(
                f"{c} / {t}: {int(placed.isna().sum())} judged episode(s) without objects_placed, counted as 0."
            )
        placed = placed.fillna(0)
        n = len(g)
        k = int(g["y"].sum())
        total, possible = int(placed.sum()), objects_per_episode * n
        rows.append([c, t, n, total, possible, _pct(total, possible), total / n, k, _pct(k, n)])
    if not rows:
        notes.append("No judged long-horizon episodes.")
    notes += [exclusion_note(p), summary_note(p), *privileged_note(p["condition"].unique())]
    cols = ["condition", "task", "episodes", "objects_placed", "objects_possible", "placed_pct"]
    cols += ["mean_placed", "successes", "success_pct"]
    title = "Long-horizon composition: objects placed / possible and strict success (Table 5)"
    return _finish(rows, cols, Track.LONG_HORIZON, title, notes)
