"""Annotation reliability (paper C.9.1): agreement coefficients for binary items, Table 28, and the
sensitivity of the diagnostics to the vote rule (strict / majority / permissive).

An *item* is one applicable (episode, criterion) with ``raters`` judgments of which ``positives``
are 1 (the tally of ``diagnostics``). Coefficients use the items with at least two raters:

- observed agreement of an item = pairs of raters who agree / all pairs,
  ``(k(k-1) + (r-k)(r-k-1)) / (r(r-1))``; ``pa`` is its mean over items;
- ``pi`` = the mean over items of ``k / r`` (the prevalence of 1; Gwet's convention, which equals
  Fleiss's pooled proportion when every item has the same number of raters);
- Fleiss kappa: chance agreement ``pe = pi^2 + (1 - pi)^2``;
- Gwet AC1 (two categories): ``pe = 2 pi (1 - pi)``; both are ``(pa - pe) / (1 - pe)``.

For two raters with identity (a proxy against the majority label): Cohen kappa (each rater's own
marginals) and AC1 (their mean prevalence). Neither scipy nor pandas has these coefficients.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from vabench.core.vocab import Track

from . import labels as L
from .diagnostics import RULES, _done, _scope, criterion_scores, episode_labels
from .load import privileged_note
from .tally import MODULE_OF


# ---------------------------------------------------------------------------------- coefficients
def _items(raters, positives) -> tuple[np.ndarray, np.ndarray]:
    r, k = np.asarray(raters, dtype=float), np.asarray(positives, dtype=float)
    if r.shape != k.shape or (k < 0).any() or (k > r).any():
        raise ValueError("need raters and positives of the same length with 0 <= positives <= raters")
    keep = r >= 2
    return r[keep], k[keep]


def _pa_pi(raters, positives) -> tuple[float, float]:
    r, k = _items(raters, positives)
    if r.size == 0:
        return math.nan, math.nan
    pa = ((k * (k - 1) + (r - k) * (r - k - 1)) / (r * (r - 1))).mean()
    return float(pa), float((k / r).mean())


def _chance_corrected(pa: float, pe: float) -> float:
    if math.isnan(pa) or math.isclose(pe, 1.0):
        return math.nan
    return (pa - pe) / (1 - pe)


def fleiss_kappa(raters, positives) -> float:
    """Fleiss' kappa over binary items (NaN with no item of two or more raters, or when every
    judgment is the same category: chance agreement is then 1)."""
    pa, pi = _pa_pi(raters, positives)
    return _chance_corrected(pa, pi**2 + (1 - pi) ** 2) if not math.isnan(pi) else math.nan


def gwet_ac1(raters, positives) -> float:
    """Gwet's AC1 over binary items (two categories: chance agreement 2 pi (1 - pi))."""
    pa, pi = _pa_pi(raters, positives)
    return _chance_corrected(pa, 2 * pi * (1 - pi)) if not math.isnan(pi) else math.nan


def cohen_kappa(a, b) -> float:
    """Cohen's kappa of two binary raters over the same items (NaN when undefined)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0:
        return math.nan
    po = float((a == b).mean())
    pe = float(a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean()))
    return _chance_corrected(po, pe)


def ac1_pair(a, b) -> float:
    """Gwet's AC1 of two binary raters over the same items."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0:
        return math.nan
    pi = float((a.mean() + b.mean()) / 2)
    return _chance_corrected(float((a == b).mean()), 2 * pi * (1 - pi))


# -------------------------------------------------------------------------------------- Table 28
def _agreement_row(module: str, label: str, x: pd.DataFrame) -> list:
    r, k = x["raters"].to_numpy(), x["positives"].to_numpy()
    n = len(x)
    unanimous = int(((k == 0) | (k == r)).sum())
    counts = sorted(set(r.tolist()))
    raters = "–" if not counts else str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    return [
        module,
        label,
        n,
        raters,
        100.0 * unanimous / n if n else math.nan,
        n - unanimous,
        float(x["label"].astype(float).mean()) if n else math.nan,
        fleiss_kappa(r, k),
        gwet_ac1(r, k),
    ]


def agreement_table(tally: pd.DataFrame, track: str | None = Track.BASE) -> pd.DataFrame:
    """Table 28: per criterion, and over all criteria and all but FG, the applicable items judged by
    two or more raters: n, unanimity (%), split items, positive rate of the majority label, Fleiss
    kappa and Gwet AC1."""
    t = episode_labels(_scope(tally, track), "majority")
    app = t[t["applicable"] & (t["raters"] > 0)]
    items = app[app["raters"] >= 2]
    rows = [_agreement_row(MODULE_OF[c], c, items[items["criterion"] == c]) for c in L.CRITERIA]
    rows.append(_agreement_row("", "All criteria", items))
    rows.append(_agreement_row("", "All except FG", items[items["criterion"] != "FG"]))
    cols = ["module", "criterion", "n", "raters", "unanimity_pct", "splits", "positive_rate", "fleiss_kappa", "ac1"]
    out = pd.DataFrame(rows, columns=cols)
    r, k = items["raters"], items["positives"]
    split = items[(k > 0) & (k < r)]
    two_one = bool(len(split)) and ((split["raters"] == 3) & split["positives"].isin([1, 2])).all()
    notes = [
        *t.attrs.get("notes", []),
        f"{len(app) - len(items)} applicable item(s) judged by one rater left out (agreement needs two)."
        if len(app) > len(items)
        else None,
        f"All {len(split)} disagreements are 2-1 splits." if two_one else None,
        "Positive rate is the share of majority-vote labels equal to 1; a skewed rate deflates kappa (chance "
        "agreement rises) and hardly moves AC1: read the two together.",
    ]
    where = f"{track} track" if track else "all tracks"
    return _done(out, "agreement", f"Inter-annotator agreement over the nine criteria, {where} (Table 28)", notes)


# --------------------------------------------------------------------------------- vote-rule checks
def _rule_scores(tally: pd.DataFrame, track: str | None) -> dict[str, pd.DataFrame]:
    return {rule: criterion_scores(tally, rule, track) for rule in RULES}


def vote_rule_sensitivity(tally: pd.DataFrame, track: str | None = Track.BASE) -> pd.DataFrame:
    """C.9.1: per condition, the mean of the nine criterion scores under the strict, majority and
    permissive rules, their range and each alternative's difference from majority (pp)."""
    scores = _rule_scores(tally, track)
    means = pd.DataFrame({r: s.groupby("condition")["score_pct"].mean() for r, s in scores.items()})
    out = means.rename(columns=lambda r: f"{r}_pct").reset_index()
    out["range_pp"] = means.max(axis=1).to_numpy() - means.min(axis=1).to_numpy()
    out["strict_delta_pp"] = (means["strict"] - means["majority"]).to_numpy()
    out["permissive_delta_pp"] = (means["permissive"] - means["majority"]).to_numpy()
    notes = [
        "Mean of the criterion scores that are not NA; gates stay majority-decided under every rule.",
    ]
    if len(out) and out["range_pp"].notna().any():
        notes += [
            f"Largest within-condition range across the three rules: {out['range_pp'].max():.2f} pp; strict lowers "
            f"the mean by at most {-out['strict_delta_pp'].min():.2f} pp, permissive raises it by at most "
            f"{out['permissive_delta_pp'].max():.2f} pp.",
        ]
    notes += [_leaders(scores), *privileged_note(out["condition"])]
    title = "Vote-rule sensitivity: mean criterion score (%) under strict, majority and permissive rules (C.9.1)"
    return _done(out, "vote_rules", title, notes)


def _leaders(scores: dict[str, pd.DataFrame]) -> str | None:
    """Criteria whose leading condition (the strict maximum; a tie has no leader) differs between rules."""
    parts = []
    for c in L.CRITERIA:
        lead = {}
        for rule, s in scores.items():
            x = s[(s["criterion"] == c) & (s["n"] > 0)].sort_values("score_pct", ascending=False)
            if len(x) and (len(x) == 1 or x["score_pct"].iloc[0] > x["score_pct"].iloc[1]):
                lead[rule] = (x["condition"].iloc[0], x["score_pct"].iloc[0])
        if len({v[0] for v in lead.values()}) > 1:
            parts.append(f"{c} ({'; '.join(f'{r}: {v[0]} {v[1]:.1f}' for r, v in lead.items())})")
    return f"Leader changes with the rule for: {', '.join(parts)}." if parts else None


def vote_rule_orderings(tally: pd.DataFrame, track: str | None = Track.BASE) -> pd.DataFrame:
    """C.9.1: agreement between the condition orderings each rule induces (Spearman rho, Kendall
    tau-b over the conditions' mean criterion scores) and whether the top three stay the top three."""
    from scipy.stats import kendalltau, spearmanr  # here: scipy.stats is most of the CLI's start-up

    scores = _rule_scores(tally, track)
    means = pd.DataFrame({r: s.groupby("condition")["score_pct"].mean() for r, s in scores.items()}).dropna()
    rows = []
    for i, a in enumerate(RULES):
        for b in RULES[i + 1 :]:
            with warnings.catch_warnings():  # constant input: scipy warns and returns nan
                warnings.simplefilter("ignore")
                rho = spearmanr(means[a], means[b]).statistic if len(means) > 1 else math.nan
                tau = kendalltau(means[a], means[b]).statistic if len(means) > 1 else math.nan
            top_a = set(means[a].sort_values(ascending=False).index[:3])
            top_b = set(means[b].sort_values(ascending=False).index[:3])
            rows.append([a, b, len(means), float(rho), float(tau), top_a == top_b])
    out = pd.DataFrame(rows, columns=["rule_a", "rule_b", "conditions", "spearman", "kendall", "same_top3"])
    notes = [f"Orderings of {len(means)} condition(s) by mean criterion score; NaN with fewer than two."]
    return _done(out, "vote_orderings", "Condition orderings under the three vote rules (C.9.1)", notes)
