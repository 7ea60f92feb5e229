"""Figures 2b and 2c as PNG files, drawn like ``plots`` (a ``Figure`` on the Agg canvas, never
switching a notebook's backend): subtask progress per condition, and the nine-criterion diagnostic
profile of the strongest conditions (a radar chart; NA criteria are gaps, not zeros)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import labels as L
from . import tables as T
from .plots import _figure, _save, _table


def subtask_progress_bars(rows_or_progress: pd.DataFrame, path: str | Path, run_index: int | None = None) -> Path:
    """Figure 2b: checkpoint micro-average progress (%) per condition over all families (eq. 12),
    with done/total checkpoints on each bar."""
    f = _table(rows_or_progress, "checkpoint_progress", lambda d: T.checkpoint_progress(d, run_index=run_index))
    f = f[(f["scope"] == "subset") & (f["task"] == "all")].sort_values("progress_pct", ascending=False)
    fig = _figure(max(5.0, 0.9 * len(f) + 2), 4.0)
    ax = fig.add_subplot()
    x = np.arange(len(f))
    bars = ax.bar(x, f["progress_pct"].fillna(0), 0.6)
    ax.bar_label(bars, [f"{d}/{t}" for d, t in zip(f["done"], f["total"], strict=True)], fontsize=6)
    ax.set_xticks(x, [c.replace(" | ", "\n") for c in f["condition"]], fontsize=7)
    ax.set_ylim(0, 105)
    ax.set_ylabel("checkpoints completed (%)")
    ax.set_title("Subtask progress: checkpoint micro-average (Figure 2b)")
    return _save(fig, path, f["condition"])


def diagnostic_profile_radar(profile: pd.DataFrame, path: str | Path) -> Path:
    """Figure 2c: one polygon per condition over the nine criteria (pooled majority-vote %), from
    ``diagnostics.diagnostic_profile``."""
    conds = list(dict.fromkeys(profile.sort_values("rank")["condition"]))
    angles = np.linspace(0, 2 * np.pi, len(L.CRITERIA), endpoint=False)
    fig = _figure(6.0, 5.4)
    ax = fig.add_subplot(projection="polar")
    for c in conds:
        s = profile[profile["condition"] == c].set_index("criterion")["score_pct"].reindex(L.CRITERIA)
        values = np.append(s.to_numpy(dtype=float), s.iloc[0])
        ax.plot(np.append(angles, angles[0]), values, marker="o", markersize=3, label=c)
    ax.set_xticks(angles, list(L.CRITERIA))
    ax.set_ylim(0, 100)
    ax.set_title("Diagnostic profile, majority vote (%) (Figure 2c)", fontsize=9)
    ax.legend(fontsize=6, loc="upper right", bbox_to_anchor=(1.35, 1.12))
    return _save(fig, path, conds)


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
