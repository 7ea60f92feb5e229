"""Trajectory diagnostics (paper 3.7 and Appendix C.9): gates, vote rules, criterion
and module scores, and the tables built on them (Tables 11-14 and 16, Figure 2c's profile, and the
label-outcome concordance of C.9.1). Agreement (Table 28) and vote-rule sensitivity: ``agreement``.

The labels come as a tally (``tally``: per-annotator files or a tally CSV), one row per (episode,
criterion) with the raters' judgment and gate counts.

Rules (C.9, eqs. 9-11), decided here once:

- A gate (``error`` for ED/OC/PF, ``ambiguity`` for AE) is open when strictly more than half of the
  raters who answered it said yes. A rater who left the gate null is not counted for it; a tie
  (1-1, 2-2) keeps it closed. When nobody answered it, it is open iff some rater labelled one of
  its criteria in that episode (a 0/1 on a gated criterion says the rater found it applicable; a
  tally row without gate counts is applicable). TL, SR, MS, MP and FG are always applicable.
- The episode label is the vote of the raters who gave the criterion a 0 or 1 (null is not a vote):
  ``majority`` = positives strictly more than half (eq. 10; a tie of an even number of raters is 0,
  the behaviour is credited only when most raters saw it), ``strict`` = every rater positive,
  ``permissive`` = at least one. Gates are always decided by majority.
- An applicable item no rater labelled is unjudged: no label, out of every denominator, noted.
- A criterion's score is positives over labelled applicable episodes (%), pooled over single- and
  dual-arm; NA (NaN), never 0, when no episode applies. A module score is the equal-weight mean of
  its criteria that are not NA (NA when all are), the NA ones named in ``left_out``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from vabench.core.vocab import Arms, Track

from . import labels as L
from .load import privileged_note
from .tables import macro_averages
from .tally import EPISODE, MODULE_OF

RULES = ("strict", "majority", "permissive")


# ---------------------------------------------------------------------------------- gates and votes
def episode_labels(tally: pd.DataFrame, rule: str = "majority") -> pd.DataFrame:
    """The tally with ``applicable`` (the criterion's gate is open) and ``label`` (0/1 under ``rule``;
    <NA> where not applicable or unjudged)."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}, not {rule!r}")
    t = tally.copy()
    r, k = t["raters"], t["positives"]
    gr, gp = t["gate_raters"].fillna(0).astype(int), t["gate_positives"].fillna(0).astype(int)
    keys = [t[c] for c in EPISODE] + [t["gate"]]
    labelled = (r > 0).groupby(keys, dropna=False).transform("any").astype(bool)  # per episode and gate
    t["applicable"] = np.where(t["gate"].isna(), True, np.where(gr > 0, 2 * gp > gr, labelled)).astype(bool)
    vote = {"majority": 2 * k > r, "strict": k == r, "permissive": k >= 1}[rule]
    t["label"] = vote.astype("Int8").where(t["applicable"] & (r > 0))
    t.attrs = {"notes": list(tally.attrs.get("notes", []))}
    return t


def _scope(tally: pd.DataFrame, track: str | None) -> pd.DataFrame:
    t = tally if track is None else tally[tally["track"] == track]
    t = t.copy()
    t.attrs = {"notes": list(tally.attrs.get("notes", []))}
    return t


def _vote_notes(t: pd.DataFrame, rule: str) -> list[str]:
    """What the gates and votes decided that a reader should know: unjudged items, ties, fallbacks."""
    notes = list(t.attrs.get("notes", []))
    gated = t[t["gate"].notna()]
    gr = gated["gate_raters"].fillna(0)
    fallback = int((gr == 0).sum())
    tied = gated[(gr > 0) & (2 * gated["gate_positives"].fillna(0) == gr)]
    gate_ties = len(tied.drop_duplicates([*EPISODE, "gate"]))
    applied = t[t["applicable"]]
    unjudged = int((applied["raters"] == 0).sum())
    ties = int(((applied["raters"] > 0) & (2 * applied["positives"] == applied["raters"])).sum())
    counts = applied.loc[applied["raters"] > 0, "raters"].value_counts().sort_index()
    notes += [
        f"Vote rule: {rule}; gates by majority of the raters who answered them (a null gate is not a vote; a tie "
        "closes the gate). Error-free episodes are NA for ED, OC, PF and out of their denominators.",
        f"Raters per labelled applicable item: {', '.join(f'{int(r)} ({n})' for r, n in counts.items())}."
        if len(counts)
        else "No labelled item.",
        f"{ties} item(s) split evenly (an even number of raters): 0 under majority."
        if ties and rule == "majority"
        else None,
        f"{gate_ties} episode gate(s) tied: closed (its criteria NA)." if gate_ties else None,
        f"{fallback} gated item(s) had no gate answer: applicable iff some rater labelled a criterion of that gate."
        if fallback
        else None,
        f"{unjudged} applicable item(s) without any 0/1 judgment: unjudged, out of every denominator."
        if unjudged
        else None,
    ]
    return notes


def criterion_scores(
    tally: pd.DataFrame, rule: str = "majority", track: str | None = Track.BASE, subsets=("all",)
) -> pd.DataFrame:
    """One row per condition, subset and criterion: ``k`` positive of ``n`` labelled applicable
    episodes and ``score_pct`` (NaN, never 0, when n = 0). Subsets: single, dual, all."""
    t = episode_labels(_scope(tally, track), rule)
    lab = t[t["label"].notna()]
    conds = sorted(t["condition"].unique())
    full = pd.MultiIndex.from_product([conds, L.CRITERIA], names=["condition", "criterion"])
    parts = []
    for s in subsets:
        sub = lab if s == "all" else lab[lab["arms"] == s]
        g = sub.groupby(["condition", "criterion"])["label"].agg(k="sum", n="count").reindex(full, fill_value=0)
        parts.append(g.reset_index().assign(subset=s))
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["condition", "criterion", "k", "n"])
    out["k"], out["n"] = out["k"].astype(int), out["n"].astype(int)
    out["module"] = out["criterion"].map(MODULE_OF)
    out["score_pct"] = np.where(out["n"] > 0, 100.0 * out["k"] / out["n"].where(out["n"] > 0, 1), math.nan)
    out = out[["condition", "subset", "module", "criterion", "k", "n", "score_pct"]]
    out.attrs = {"notes": _vote_notes(t, rule)}
    return out


def _done(frame: pd.DataFrame, kind: str, title: str, notes) -> pd.DataFrame:
    frame = frame.reset_index(drop=True)
    frame.attrs = {"kind": kind, "title": title, "notes": [n for n in notes if n]}
    return frame


def _na_note(s: pd.DataFrame) -> str | None:
    na = s[s["n"] == 0]
    if na.empty:
        return None
    parts = [f"{c}: {', '.join(g['criterion'])}" for c, g in na.groupby("condition", sort=True)]
    return f"NA (no applicable labelled episode; never 0): {'; '.join(parts)}."


# ------------------------------------------------------------------------------------------ tables
def diagnostic_scores(tally: pd.DataFrame, rule: str = "majority", track: str | None = Track.BASE) -> pd.DataFrame:
    """Table 11: per condition, each criterion's score pooled over single- and dual-arm episodes."""
    s = criterion_scores(tally, rule, track)
    notes = [*s.attrs["notes"], _na_note(s), *privileged_note(s["condition"].unique())]
    title = f"Trajectory diagnostics (%), pooled single- and dual-arm, {rule} vote (Table 11)"
    return _done(s.drop(columns="subset"), "diagnostic_scores", title, notes)


_MODULE_TABLE = {"SPU": 12, "RM": 13, "ER": 14}
_MODULE_NAME = {"SPU": "spatial perception and understanding", "RM": "robot manipulation", "ER": "error recovery"}


def diagnostic_components(
    tally: pd.DataFrame, module: str, rule: str = "majority", track: str | None = Track.BASE
) -> pd.DataFrame:
    """Tables 12-14: one module's three criteria, single-arm and dual-arm separately."""
    if module not in L.MODULES:
        raise ValueError(f"module must be one of {', '.join(L.MODULES)}, not {module!r}")
    s = criterion_scores(tally, rule, track, subsets=(Arms.SINGLE, Arms.DUAL))
    s = s[s["module"] == module]
    notes = [*s.attrs["notes"], _na_note(s), *privileged_note(s["condition"].unique())]
    title = f"{_MODULE_NAME[module].capitalize()} diagnostics (%), single- and dual-arm (Table {_MODULE_TABLE[module]})"
    return _done(s, "diagnostic_components", title, notes)


def module_overview(tally: pd.DataFrame, rule: str = "majority", track: str | None = Track.TRANSFER) -> pd.DataFrame:
    """Table 16 (held-out track by default): SPU, RM, ER as equal-weight means of their criteria's
    pooled scores; an NA criterion is left out of its module (``left_out``), never counted as 0."""
    s = criterion_scores(tally, rule, track)
    rows = []
    for c in sorted(s["condition"].unique()):
        g = s[s["condition"] == c]
        for m, crit in L.MODULES.items():
            x = g[g["criterion"].isin(crit)]
            used = x[x["n"] > 0]
            score = float(used["score_pct"].mean()) if len(used) else math.nan
            rows.append([c, m, ", ".join(used["criterion"]), ", ".join(x.loc[x["n"] == 0, "criterion"]), score])
    out = pd.DataFrame(rows, columns=["condition", "module", "criteria", "left_out", "score_pct"])
    left = out[out["left_out"] != ""]
    gaps = "; ".join(f"{r.condition} {r.module}: {r.left_out}" for r in left.itertuples())
    notes = [
        *s.attrs["notes"],
        "SPU, RM and ER equally average TL/AE/SR, MS/MP/FG and ED/OC/PF: descriptive profiles, not a ranking.",
        f"Left out of a module mean as NA: {gaps}." if len(left) else None,
        *privileged_note(out["condition"].unique()),
    ]
    where = f"{track} track" if track else "all tracks"
    title = f"Module-level diagnostic overview (%), {where} (Table 16)"
    return _done(out, "module_overview", title, notes)


def diagnostic_profile(
    tally: pd.DataFrame, conditions=None, top: int = 5, rows: pd.DataFrame | None = None, track: str | None = Track.BASE
) -> pd.DataFrame:
    """Figure 2c's data: pooled majority-vote scores of the nine criteria for the strongest
    conditions (the ``top`` by macro-average success when outcome ``rows`` are given, else by the
    mean of their criterion scores), or for ``conditions`` in that order."""
    s = criterion_scores(tally, "majority", track)
    if conditions is None:
        if rows is not None:
            m = macro_averages(rows)
            strength = m[m["subset"] == "all"].set_index("condition")["mean_pct"]
            how = "macro-average success"
        else:
            strength, how = s.groupby("condition")["score_pct"].mean(), "mean criterion score"
        strength = strength.reindex(sorted(s["condition"].unique())).fillna(-1.0)
        conditions = list(strength.sort_values(ascending=False, kind="stable").index[:top])
    else:
        how = "as given"
    out = s[s["condition"].isin(conditions)].copy()
    out["rank"] = out["condition"].map({c: i + 1 for i, c in enumerate(conditions)})
    out = out.sort_values(["rank", "criterion"], key=lambda c: c.map(L.CRITERIA.index) if c.name == "criterion" else c)
    notes = [*s.attrs["notes"], f"Conditions ({how}): {', '.join(conditions)}.", _na_note(out)]
    title = "Diagnostic profile per condition (%), majority vote (Figure 2c)"
    return _done(out[["rank", "condition", "module", "criterion", "k", "n", "score_pct"]], "profile", title, notes)


def label_concordance(tally: pd.DataFrame, rule: str = "majority", track: str | None = Track.BASE) -> pd.DataFrame:
    """C.9.1: each criterion's episode label against terminal success, on the labelled episodes whose
    checker verdict is known: agreement (label = success) and the four cells."""
    t = episode_labels(_scope(tally, track), rule)
    t = t[t["label"].notna() & t["success"].notna()]
    rows = []
    for c in L.CRITERIA:
        x = t[t["criterion"] == c]
        lab, ok = x["label"].astype(int).to_numpy(), x["success"].astype(bool).to_numpy()
        n = len(x)
        cells = [int(((lab == a) & (ok == b)).sum()) for a in (1, 0) for b in (True, False)]
        agree = 100.0 * (cells[0] + cells[3]) / n if n else math.nan
        rows.append([MODULE_OF[c], c, n, agree, *cells])
    cols = ["module", "criterion", "episodes", "agree_pct", "pos_success", "pos_failure", "neg_success", "neg_failure"]
    notes = [
        f"Episodes with a {rule}-vote label and a checker verdict: {t[EPISODE].drop_duplicates().shape[0]}.",
        "agree = label equals terminal success; a diagnostic that merely restated the outcome would agree everywhere.",
    ]
    return _done(pd.DataFrame(rows, columns=cols), "concordance", "Label-outcome concordance (C.9.1)", notes)
