"""Figures as PNG files. Each function takes outcome rows or the matching table and a path, and
returns the path written.

Figures are drawn on ``matplotlib.figure.Figure`` with the Agg canvas directly, so saving works
headless and never switches the backend of a notebook that imports this module.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from vabench.vocab import ACTIVE, PASSIVE, SummaryKind, Track

from . import tables as T
from .load import PRIVILEGED, PRIVILEGED_NOTE


def _table(obj: pd.DataFrame, kind: str, make) -> pd.DataFrame:
    return obj if obj.attrs.get("kind") == kind else make(obj)


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path, labels) -> Path:
    if any(PRIVILEGED in str(x) for x in labels):
        fig.supxlabel(PRIVILEGED_NOTE, fontsize=7)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    return path


def success_bars(rows_or_macro: pd.DataFrame, path: str | Path) -> Path:
    """Macro-average success per condition (single-arm, dual-arm, all) with sample-SD error bars
    across runs (Figure 2a)."""
    m = _table(rows_or_macro, "macro_averages", T.macro_averages)
    conds = list(dict.fromkeys(m.loc[m["subset"] == "all"].sort_values("mean_pct", ascending=False)["condition"]))
    fig = _figure(max(6.0, 1.2 * len(conds) + 2), 4.2)
    ax = fig.add_subplot()
    x, width = np.arange(len(conds)), 0.27
    for i, s in enumerate(T.SUBSETS):
        sub = m[m["subset"] == s].set_index("condition").reindex(conds)
        ax.bar(x + (i - 1) * width, sub["mean_pct"].fillna(0), width, label=T.SUBSET_NAMES[s])
        ax.errorbar(x + (i - 1) * width, sub["mean_pct"], yerr=sub["sd_pct"], fmt="none", ecolor="black", capsize=3)
    fams = m.pivot_table(index="condition", columns="subset", values="families", aggfunc="first")
    labels = [
        c.replace(" | ", "\n") + "\n(" + "/".join(str(int(fams.loc[c, s])) for s in T.SUBSETS) + " fam.)" for c in conds
    ]
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("success (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Macro-average success, mean ± sample SD across runs")
    ax.legend(fontsize=7)
    return _save(fig, path, conds)


def success_heatmap(rows_or_matrix: pd.DataFrame, path: str | Path) -> Path:
    """Task x condition heatmap of mean success (%); cells without judged episodes are grey and
    marked n/a, not drawn as 0."""
    f = _table(rows_or_matrix, "success_matrix", T.success_matrix)
    tasks = list(dict.fromkeys(f["task"]))
    conds = list(dict.fromkeys(f["condition"]))
    grid = f.pivot_table(index="task", columns="condition", values="mean_pct", dropna=False).reindex(tasks)
    grid = grid.reindex(columns=conds)
    fig = _figure(max(5.0, 1.3 * len(conds) + 3), max(3.0, 0.4 * len(tasks) + 1.5))
    ax = fig.add_subplot()
    values = np.ma.masked_invalid(grid.to_numpy(dtype=float))
    from matplotlib import colormaps

    cmap = colormaps["viridis"].with_extremes(bad="lightgrey")
    image = ax.imshow(values, vmin=0, vmax=100, cmap=cmap, aspect="auto")
    for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
        ax.text(j, i, "n/a" if np.isnan(v) else f"{v:.0f}", ha="center", va="center", fontsize=7,
                color="black" if np.isnan(v) or v > 60 else "white")  # fmt: skip
    ax.set_xticks(range(len(conds)), [c.replace(" | ", "\n") for c in conds], fontsize=7)
    ax.set_yticks(range(len(tasks)), tasks, fontsize=7)
    fig.colorbar(image, ax=ax, label="success (%)")
    ax.set_title("Per-task success (mean across runs)")
    return _save(fig, path, conds)


def active_passive_bars(rows_or_table: pd.DataFrame, path: str | Path) -> Path:
    """Paired bars per model, active vs passive pooled success, one panel per subset with families."""
    f = _table(rows_or_table, "active_passive", T.active_passive)
    subsets = [s for s in T.SUBSETS if (f.loc[f["subset"] == s, "families"] > 0).any()] or ["all"]
    fig = _figure(max(6.0, 3.2 * len(subsets)), 4.0)
    axes = fig.subplots(1, len(subsets), squeeze=False)[0]
    for ax, s in zip(axes, subsets, strict=True):
        sub = f[f["subset"] == s]
        labels = [
            m if src == SummaryKind.OWN else f"{m}\n(summary {src})"
            for m, src in zip(sub["model"], sub["summary_source"], strict=True)
        ]
        x, width = np.arange(len(sub)), 0.38
        for offset, side in ((-width / 2, ACTIVE.name), (width / 2, PASSIVE.name)):
            bars = ax.bar(x + offset, sub[f"{side}_pct"].fillna(0), width, label=side)
            ax.bar_label(
                bars, [f"{k}/{n}" for k, n in zip(sub[f"{side}_k"], sub[f"{side}_n"], strict=True)], fontsize=6
            )
        ax.set_xticks(x, labels, fontsize=7)
        ax.set_ylim(0, 105)
        ax.set_title(f"{T.SUBSET_NAMES[s]} ({', '.join(str(v) for v in sub['families'].unique())} families)")
        ax.set_ylabel("success (%)")
    axes[0].legend(fontsize=7)
    return _save(fig, path, f["model"])


def save_figures(df: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """Every figure the rows support, as PNG files under out_dir; returns their paths."""
    out_dir = Path(out_dir)
    paths = []
    base = df[df["track"].fillna(Track.BASE) == Track.BASE] if "track" in df else df
    if len(base):
        paths.append(success_bars(T.macro_averages(df), out_dir / "success_bars.png"))
        paths.append(success_heatmap(T.success_matrix(df), out_dir / "success_heatmap.png"))
    ap = T.active_passive(df)
    if len(ap):
        paths.append(active_passive_bars(ap, out_dir / "active_passive.png"))
    return paths
