"""The camera-protocol comparison: active vs passive per (model, summary source) on matched runs
and families, pooled per subset with a sign test (Table 4) or per family (Table 10). Shared
rules: ``common``."""

from __future__ import annotations

import pandas as pd

from vabench.paper import PAPER_COUNTS
from vabench.vocab import ACTIVE, PASSIVE

from ..load import exclusion_note, privileged_note, summary_note
from ..stats import sign_test
from .common import (
    SUBSETS,
    _arms_of,
    _coverage,
    _finish,
    _in_subset,
    _judged,
    _order,
    _pct,
    _pooled,
    _runs_note,
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
    p, notes = _scope(df, "base")
    j = _judged(p)
    rows_t, rows_s, cover = [], [], {}
    for (model, source), g in j.groupby(["model", "summary_source"]):
        a, ps = g[g["protocol"] == ACTIVE.name], g[g["protocol"] == PASSIVE.name]
        if a.empty or ps.empty:
            continue
        runs = sorted(set(a["run_index"]) & set(ps["run_index"]))
        notes.append(
            _runs_note(
                f"{model} ({source})",
                {"active": sorted(set(a["run_index"])), "passive": sorted(set(ps["run_index"]))},
                runs,
            )
        )
        if not runs:
            continue
        a, ps = a[a["run_index"].isin(runs)], ps[ps["run_index"].isin(runs)]
        fams = set(a["task"]) & set(ps["task"])
        dropped = (set(a["task"]) | set(ps["task"])) - fams
        if dropped:
            notes.append(f"{model} ({source}): left out, judged under one protocol only: {', '.join(sorted(dropped))}.")
        arms = _arms_of(g)
        fam_rows = []
        for t in _order(fams, arms):
            ka, na = _pooled(a[a["task"] == t])
            kp, np_ = _pooled(ps[ps["task"] == t])
            ra, rp = _pct(ka, na), _pct(kp, np_)
            direction = "tie" if ra == rp else ("passive worse" if rp < ra else "passive better")
            fam_rows.append([model, source, arms.get(t), t, ka, na, ra, kp, np_, rp, rp - ra, direction])
        rows_t += fam_rows
        fr = pd.DataFrame(fam_rows, columns=["m", "s", "arms", "task", "ka", "na", "ra", "kp", "np", "rp", "d", "dir"])
        for s in SUBSETS:
            sub = _in_subset(fr, s)
            ka, na, kp, np_ = (int(sub[c].sum()) for c in ("ka", "na", "kp", "np"))
            worse, better = int((sub["dir"] == "passive worse").sum()), int((sub["dir"] == "passive better").sum())
            ties = int((sub["dir"] == "tie").sum())
            cover.setdefault(f"{model} ({source})", {})[s] = len(sub)
            rows_s.append(
                [model, source, s, len(sub), PAPER_COUNTS[s], runs, ka, na, _pct(ka, na), kp, np_, _pct(kp, np_)]
                + [_pct(kp, np_) - _pct(ka, na), worse, better, ties, sign_test(worse, better)]
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
    common = ["active_k", "active_n", "active_pct", "passive_k", "passive_n", "passive_pct", "delta_pp"]
    if per_task:
        cols = ["model", "summary_source", "arms", "task", *common, "direction"]
        title = "Active vs passive per family: successes / judged episodes (Table 10)"
        return _finish(rows_t, cols, "active_passive_tasks", title, notes)
    cols = ["model", "summary_source", "subset", "families", "paper_families", "runs", *common]
    cols += ["passive_worse", "passive_better", "ties", "sign_p"]
    title = "Active vs passive camera protocol: pooled success, delta = passive - active, sign test (Table 4)"
    return _finish(rows_s, cols, "active_passive", title, notes)
