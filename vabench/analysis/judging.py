"""A judge against people (beyond the paper): per judge and criterion, the judge's majority label
against the human majority label, the judge's agreement with itself across its samples beside the
humans' agreement with each other (Table 28's statistics), and whether the judge may replace people
for that criterion.

Judges are annotators named ``judge-<model>-<k>`` (``labels.is_judge``; ``python -m vabench.judge``
writes them); every other annotator is a person. Both sides are reduced by the same gates and
majority vote (``diagnostics.episode_labels``); an item counts where both sides have a label.

Trust (docs/judge.md): a judge may replace people for a criterion when Cohen's kappa of its majority
against the human majority is at least :data:`TRUST_KAPPA` on at least :data:`TRUST_ITEMS` items.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from . import labels as L
from .agreement import ac1_pair, cohen_kappa, fleiss_kappa, gwet_ac1
from .diagnostics import _done, episode_labels
from .tally import EPISODE, tallies_from_labels

TRUST_KAPPA = 0.6  # "substantial" agreement (Landis and Koch), at or above Table 28's human kappas
TRUST_ITEMS = 20  # fewer items than this: the kappa is too uncertain to trust, whatever its value
COLUMNS = [
    "judge", "criterion", "n", "agree_pct", "cohen_kappa", "ac1", "j1_h1", "j1_h0", "j0_h1", "j0_h0",
    "judge_self_kappa", "judge_self_ac1", "human_kappa", "human_ac1", "replaces_people",
]  # fmt: skip


def _majority(labels: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    t = episode_labels(tallies_from_labels(labels, rows), "majority")
    return t[t["applicable"]]


def _within(t: pd.DataFrame, c: str) -> tuple[float, float]:
    """Fleiss kappa and AC1 among one side's raters on criterion ``c`` (items of two or more raters)."""
    x = t[(t["criterion"] == c) & (t["raters"] >= 2)]
    return fleiss_kappa(x["raters"], x["positives"]), gwet_ac1(x["raters"], x["positives"])


def _row(judge: str, c: str, tj: pd.DataFrame, th: pd.DataFrame) -> list:
    keep = [*EPISODE, "label"]
    both = tj.loc[tj["criterion"] == c, keep].merge(th.loc[th["criterion"] == c, keep], on=EPISODE, suffixes=("j", "h"))
    both = both[both["labelj"].notna() & both["labelh"].notna()]
    a, b = both["labelj"].astype(int).to_numpy(), both["labelh"].astype(int).to_numpy()
    n, kappa = len(both), cohen_kappa(a, b)
    confusion = [int(((a == x) & (b == y)).sum()) for x, y in ((1, 1), (1, 0), (0, 1), (0, 0))]
    trusted = n >= TRUST_ITEMS and not math.isnan(kappa) and kappa >= TRUST_KAPPA
    return [judge, c, n, 100.0 * (a == b).mean() if n else math.nan, kappa, ac1_pair(a, b), *confusion,
            *_within(tj, c), *_within(th, c), trusted]  # fmt: skip


def judge_agreement(rows: pd.DataFrame, *sources: str | Path) -> pd.DataFrame:
    """One row per judge and criterion (see module docstring); empty when the label files under
    ``sources`` hold no judge or no person."""
    lab = L.latest(*sources)
    judged = lab["annotator"].map(L.is_judge).astype(bool)
    human, out = lab[~judged], []
    if len(human) and judged.any():
        th = _majority(human, rows)
        for judge, labels in lab[judged].groupby(lab.loc[judged, "annotator"].map(L.judge_of), sort=True):
            tj = _majority(labels, rows)
            out += [_row(judge, c, tj, th) for c in L.CRITERIA]
    frame = pd.DataFrame(out, columns=COLUMNS)
    people = human["annotator"].nunique()
    notes = [
        f"Judge majority vs the majority of {people} person(s), on items both label; confusion j<judge>_h<human>.",
        "judge_self_*: the judge's samples with each other; human_*: the people with each other (Table 28's "
        "Fleiss kappa and AC1; NaN with fewer than two raters per item).",
        f"replaces_people: Cohen kappa >= {TRUST_KAPPA} on >= {TRUST_ITEMS} items (docs/judge.md); a judge that "
        "does not is a screening aid, its criterion still needs people.",
    ]
    return _done(frame, "judge_agreement", "Judge vs human labels, per criterion (calibration)", notes)
