"""A calibration subset: which episodes people should annotate to measure a judge.

The subset is stratified by task and outcome (success or failure): each (task, outcome) stratum gets
its share of ``n`` by the largest remainder, at least one while ``n`` allows. Within a stratum, and
in the list written, the judge's least certain items come first. An item's uncertainty is the mean,
over the criteria its judge samples labelled, of the minority share ``min(k, r - k) / r`` of ``r``
sample labels with ``k`` positive (0: every sample agreed; 0.5: an even split), and 1 for an
episode no judge sample labelled (the judge could not say). Judge samples of every judge in the run
folder count together. The list goes to ``_judge/calibration.csv``.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from vabench.analysis import labels as L
from vabench.analysis.load import load_runs, prepare
from vabench.results.layout import CALIBRATION, JUDGE

from .passes import NothingToJudge, judged_records


def uncertainty(judge_labels: pd.DataFrame) -> pd.Series:
    """Record -> the judge samples' uncertainty (see module docstring)."""
    out = {}
    for record, g in judge_labels.groupby("record"):
        shares = []
        for c in L.CRITERIA:
            v = g[c].dropna().astype(int)
            if len(v):
                shares.append(min(v.sum(), len(v) - v.sum()) / len(v))
        out[record] = sum(shares) / len(shares) if shares else 1.0
    return pd.Series(out, dtype=float)


def _shares(sizes: pd.Series, n: int) -> pd.Series:
    """Items per stratum: proportional by the largest remainder, at least one each while n allows."""
    n = min(n, int(sizes.sum()))
    base = pd.Series(1 if n >= len(sizes) else 0, index=sizes.index).clip(upper=sizes)
    left = n - int(base.sum())
    room = sizes - base
    exact = room / room.sum() * left if room.sum() else room * 0.0
    take = exact.apply(math.floor).astype(int)
    for key in (exact - take).sort_values(ascending=False, kind="stable").index[: left - int(take.sum())]:
        take[key] += 1
    return (base + take).clip(upper=sizes)


def subset(run: Path, n: int = 40) -> pd.DataFrame:
    """The calibration subset of ``run``: ``record, task, outcome, uncertainty, judge_samples``,
    least certain first; also written to ``_judge/calibration.csv``."""
    run = Path(run)
    records = set(judged_records(run))
    p, _ = prepare(load_runs(run))
    eps = p[p["record"].isin(records)].drop_duplicates("record")
    eps = pd.DataFrame({"record": eps["record"], "task": eps["task"],
                        "outcome": eps["y"].map({1.0: "success", 0.0: "failure"})})  # fmt: skip
    lab = L.latest(run) if (run / L.ANNOTATIONS).is_dir() else pd.DataFrame(columns=L.COLUMNS)
    lab = lab[lab["annotator"].map(L.is_judge).astype(bool)] if len(lab) else lab
    eps["uncertainty"] = eps["record"].map(uncertainty(lab)).fillna(1.0)
    eps["judge_samples"] = eps["record"].map(lab.groupby("record")["annotator"].nunique()).fillna(0).astype(int)
    if n < 1:
        raise NothingToJudge(f"--n must be at least 1, got {n}")
    eps = eps.sort_values(["uncertainty", "record"], ascending=[False, True], kind="stable")
    sizes = eps.groupby(["task", "outcome"]).size()
    take = _shares(sizes, n)
    picked = pd.concat([g.head(int(take[key])) for key, g in eps.groupby(["task", "outcome"])])
    picked = picked.sort_values(["uncertainty", "task", "record"], ascending=[False, True, True], kind="stable")
    picked = picked.reset_index(drop=True)
    (run / JUDGE).mkdir(exist_ok=True)
    picked.to_csv(run / JUDGE / CALIBRATION, index=False)
    return picked
