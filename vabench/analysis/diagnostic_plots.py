"""Figures 2b and 2c as PNG files, drawn like ``plots`` (a ``Figure`` on the Agg canvas, never
switching a notebook's backend): subtask progress per condition, and the nine-criterion diagnostic
profile of the strongest conditions (a radar chart; NA criteria are gaps, not zeros)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import labels as L
from . import tables as T
from .plots import PALETTE, _bar_values, _figure, _save, _table, _titled, short_labels


def subtask_progress_bars(rows_or_progress: pd.DataFrame, path: str | Path, run_index: int | None = None) -> Path:
    """Figure 2b: checkpoint micro-average progress (%) per condition over all families (eq. 12),
    with done/total checkpoints on each bar."""
    f = _table(rows_or_progress, "checkpoint_progress", lambda d: T.checkpoint_progress(d, run_index=run_index))
    f = f[(f["scope"] == "subset") & (f["task"] == "all")].sort_values("progress_pct", ascending=False)
    fig = _figure(max(5.0, 0.9 * len(f) + 2), 4.0)
    ax = fig.add_subplot()
    x = np.arange(len(f))
    bars = ax.bar(x, f["progress_pct"].fillna(0), 0.6, color=PALETTE[0])
    texts = [f"{p:.0f}% ({d}/{t})" for p, d, t in zip(f["progress_pct"].fillna(0), f["done"], f["total"], strict=True)]
    _bar_values(ax, bars, f["progress_pct"], texts)
    names, shared = short_labels(f["condition"])
    ax.set_xticks(x, names, fontsize=7)
    ax.set_ylim(0, 110)
    ax.set_ylabel("checkpoints completed (%)")
    _titled(ax, "Subtask progress: checkpoint micro-average (Figure 2b)", shared)
    return _save(fig, path, f["condition"])


def diagnostic_profile_radar(profile: pd.DataFrame, path: str | Path) -> Path:
    """Figure 2c: one polygon per condition over the nine criteria (pooled majority-vote %), from
    ``diagnostics.diagnostic_profile``."""
    conds = list(dict.fromkeys(profile.sort_values("rank")["condition"]))
    angles = np.linspace(0, 2 * np.pi, len(L.CRITERIA), endpoint=False)
    fig = _figure(6.4, 6.6)
    ax = fig.add_subplot(projection="polar")
    names, shared = short_labels(conds)
    by = profile.set_index("criterion")
    scores = {c: by.loc[by["condition"] == c, "score_pct"].reindex(L.CRITERIA) for c in conds}
    for i, (c, name) in enumerate(zip(conds, names, strict=True)):
        s = scores[c].to_numpy(dtype=float)
        closed = np.append(s, s[0])  # NaN breaks the line: an NA criterion is a gap, never a point at 0
        ax.plot(np.append(angles, angles[0]), closed, marker="o", markersize=3, color=PALETTE[i % len(PALETTE)],
                label=name.replace("\n", " | ") + _na_text(scores[c]))  # fmt: skip
    everywhere_na = [all(np.isnan(scores[c][k]) for c in conds) for k in L.CRITERIA]
    ax.set_xticks(angles, [f"{k}\n(NA)" if na else k for k, na in zip(L.CRITERIA, everywhere_na, strict=True)])
    ax.tick_params(axis="x", pad=6, labelsize=8)
    ax.set_ylim(0, 100)
    ax.set_yticks([25, 50, 75, 100], ["25", "50", "75", "100%"], fontsize=6)
    _titled(ax, "Diagnostic profile, majority vote (%) (Figure 2c); NA criteria are gaps", shared)
    fig.legend(fontsize=6, loc="outside lower center", ncols=1)
    return _save(fig, path, conds)


def _na_text(scores: pd.Series) -> str:
    na = [k for k, v in scores.items() if pd.isna(v)]
    return f" (NA: {', '.join(na)})" if na else ""


def save_diagnostic_figures(
    out_dir: str | Path, rows: pd.DataFrame | None = None, profile: pd.DataFrame | None = None
) -> list[Path]:
    """Figure 2b from outcome rows (when they have checkpoints) and Figure 2c from a profile table."""
    out_dir, paths = Path(out_dir), []
    if rows is not None:
        progress = T.checkpoint_progress(rows)
        if len(progress):
            paths.append(subtask_progress_bars(progress, out_dir / "subtask_progress.png"))
    if profile is not None and len(profile):
        paths.append(diagnostic_profile_radar(profile, out_dir / "diagnostic_profile.png"))
    return paths
