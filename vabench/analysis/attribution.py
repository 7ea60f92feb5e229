"""Why a model fails: success under each intervention against the paper condition, on the same seeds
(issue 27; the paper's Limitations leave the attribution open).

A condition under an intervention (its ``intervention`` column, vabench.core.interventions) is paired with
its paper condition: the same model, protocol, render preset and observation profile, the summary
source kept (a harness intervention) or ``own`` (summary=expert, whose paper condition is the
model's own summary). Per task family: both rates, the difference in percentage points and the
exact McNemar p of the discordant pairs; per subset: the macro difference with the seed-cluster
bootstrap interval (:func:`vabench.analysis.paired.paired_comparison`). :func:`recovers_most` names
the intervention with the largest difference per family, and so the factor (the manifest's
``removes``) whose removal recovers most.
"""

from __future__ import annotations

import pandas as pd

from vabench.core.interventions import manifest
from vabench.core.vocab import Intervention, SummaryKind, Track

from .paired import paired_comparison
from .tables.common import _scope

_KEEP = ["model", "protocol", "render", "observation"]


def _paper_of(rows: pd.DataFrame, treated: pd.Series) -> str | None:
    """The paper condition an intervention condition is compared with, or None when it was not run."""
    named = str(treated["intervention"]).split("+")
    source = SummaryKind.OWN if Intervention.EXPERT_SUMMARY in named else treated["summary_source"]
    match = rows[(rows["intervention"] == Intervention.NONE) & (rows["summary_source"] == source)]
    for k in _KEEP:
        match = match[match[k] == treated[k]]
    labels = sorted(match["condition"].unique())
    return labels[0] if len(labels) == 1 else None


def attribution(df: pd.DataFrame, track: str | None = Track.BASE, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One row per (intervention condition, task family or subset): the paper condition's and the
    intervention's success, the difference and its test (see the module docstring)."""
    p, notes = _scope(df, track, observation=None)
    p = p.assign(intervention=p["intervention"].fillna(Intervention.NONE))
    conditions = p.drop_duplicates("condition").set_index("condition")
    parts, missing = [], []
    for label, row in conditions[conditions["intervention"] != Intervention.NONE].iterrows():
        paper = _paper_of(p, row)
        if paper is None:
            missing.append(label)
            continue
        t = paired_comparison(df, paper, label, track=track, n_boot=n_boot, seed=seed)  # the rows, not the trimmed p
        names = str(row["intervention"]).split("+")
        t.insert(0, "removes", " + ".join(manifest(n).removes for n in names))
        t.insert(0, "intervention", row["intervention"])
        t.insert(0, "paper_condition", paper)
        t.insert(0, "protocol", row["protocol"])
        t.insert(0, "model", row["model"])
        t["paper_pct"] = 100.0 * t["a_k"] / t["pairs"].where(t["pairs"] > 0)
        t["intervention_pct"] = 100.0 * t["b_k"] / t["pairs"].where(t["pairs"] > 0)
        parts.append(t)
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    notes += [
        "Each intervention condition against its paper condition (same model, protocol, render, observation; "
        "summary=expert against summary own) on shared task, seed and run: delta = intervention - paper (pp); "
        "per family exact McNemar p, per subset the macro difference with a seed-cluster bootstrap interval.",
        f"No paper condition to compare with (not run): {'; '.join(missing)}" if missing else None,
    ]
    out.attrs = {"kind": "attribution", "title": "Attribution: success under each intervention vs the paper"}
    out.attrs["notes"] = [n for n in notes if n]
    return out


def recovers_most(table: pd.DataFrame) -> pd.DataFrame:
    """Per (model, protocol, family): the intervention with the largest gain over the paper condition
    (ties: the first by name), with the factor it removes."""
    if table.empty:
        return table
    rows = table[table["scope"] == "task"].sort_values(["model", "protocol", "task", "delta_pp", "intervention"],
                                                       ascending=[True, True, True, False, True])  # fmt: skip
    keep = ["model", "protocol", "task", "intervention", "removes", "paper_pct", "intervention_pct", "delta_pp"]
    best = rows.drop_duplicates(["model", "protocol", "task"])[[*keep, "mcnemar_p"]].reset_index(drop=True)
    best.attrs = {"kind": "recovers_most", "title": "The intervention that recovers most, per family", "notes": []}
    return best


def display_attribution(f: pd.DataFrame) -> pd.DataFrame:
    """One line per (condition, family or subset): paper k/n, intervention k/n, the gain and its test."""

    def cell(k, n):
        return f"{100.0 * k / n:.0f} ({k}/{n})" if n else "–"

    rows = []
    for r in f.itertuples(index=False):
        if r.scope == "subset" and not r.pairs:  # a subset the run has no family of
            continue
        interval = f" [{r.ci_low_pp:+.0f}, {r.ci_high_pp:+.0f}]" if r.scope == "subset" and r.pairs else ""
        test = f"{r.mcnemar_p:.3g}" if r.scope == "task" else "–"
        gain = f"{r.delta_pp:+.0f}{interval}" if r.pairs else "–"
        rows.append({"model": r.model, "protocol": r.protocol, "intervention": r.intervention, "removes": r.removes,
                     "family": r.task if r.scope == "task" else f"macro ({r.task})", "paper %": cell(r.a_k, r.pairs),
                     "intervention %": cell(r.b_k, r.pairs), "gain pp": gain, "McNemar p": test})  # fmt: skip
    return pd.DataFrame(rows)
