"""Figures as PNG files. Each function takes outcome rows or the matching table and a path, and
returns the path written.

Figures are drawn on ``matplotlib.figure.Figure`` with the Agg canvas directly, so saving works
headless and never switches the backend of a notebook that imports this module.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from vabench.core.vocab import ACTIVE, PASSIVE, RIGHT, Intervention, SummaryKind, Track

from . import tables as T
from .attribution import attribution
from .load import PRIVILEGED, PRIVILEGED_NOTE

# Okabe & Ito's colour-blind-safe palette (blue, orange, bluish green, vermillion, reddish purple, sky blue,
# yellow, black): every series of every figure takes its colours from here, in this order
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")


def short_labels(labels) -> tuple[list[str], str]:
    """Condition labels without the parts every one shares (``summary none``, ``render fast``), one
    part per line, and the shared parts (for the title), so tick labels stay short enough not to
    collide."""
    marked = [str(c).endswith(PRIVILEGED) for c in labels]
    parts = [str(c).removesuffix(PRIVILEGED).split(" | ") for c in labels]
    shared = [x for x in parts[0] if all(x in p for p in parts)] if len(parts) > 1 else []
    names = ["\n".join(x for x in p if x not in shared) or " | ".join(p) for p in parts]
    names = [n + ("\n" + PRIVILEGED.strip() if m else "") for n, m in zip(names, marked, strict=True)]
    return names, " | ".join(shared)


def _titled(ax, title: str, shared: str) -> None:
    ax.set_title(title + (f"\n(all: {shared})" if shared else ""), fontsize=9)


def _bar_values(ax, bars, values, texts=None, above=None) -> None:
    """A value on every bar, so a zero bar is seen as 0 (and a missing one as n/a), not as nothing;
    ``above``: per bar, how far its whisker reaches above the bar (the label goes over it)."""
    if texts is None:
        texts = ["n/a" if pd.isna(v) else f"{v:.0f}" for v in values]
    above = [0.0] * len(texts) if above is None else [0.0 if pd.isna(a) else float(a) for a in above]
    for bar, text, extra in zip(bars, texts, above, strict=True):
        top = (bar.get_y() + bar.get_height()) + extra
        ax.annotate(text, (bar.get_x() + bar.get_width() / 2, top), xytext=(0, 2), textcoords="offset points",
                    ha="center", va="bottom", fontsize=6)  # fmt: skip


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
    across runs (Figure 2a); with one run there is no SD, and the title says so instead."""
    m = _table(rows_or_macro, "macro_averages", T.macro_averages)
    conds = list(dict.fromkeys(m.loc[m["subset"] == "all"].sort_values("mean_pct", ascending=False)["condition"]))
    fig = _figure(max(6.0, 1.5 * len(conds) + 2), 4.6)
    ax = fig.add_subplot()
    x, width = np.arange(len(conds)), 0.27
    has_sd = bool(m["sd_pct"].notna().any())
    for i, s in enumerate(T.SUBSETS):
        sub = m[m["subset"] == s].set_index("condition").reindex(conds)
        bars = ax.bar(x + (i - 1) * width, sub["mean_pct"].fillna(0), width, label=T.SUBSET_NAMES[s], color=PALETTE[i])
        if has_sd:
            ax.errorbar(x + (i - 1) * width, sub["mean_pct"], yerr=sub["sd_pct"], fmt="none", ecolor="black", capsize=3)
        _bar_values(ax, bars, sub["mean_pct"], above=sub["sd_pct"] if has_sd else None)
    fams = m.pivot_table(index="condition", columns="subset", values="families", aggfunc="first")
    names, shared = short_labels(conds)
    fam = ["/".join(str(int(fams.loc[c, s])) for s in T.SUBSETS) for c in conds]
    labels = [f"{n}\n({f} fam.)" for n, f in zip(names, fam, strict=True)]
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("success (%)")
    reach = (m["mean_pct"] + m["sd_pct"].fillna(0)).max() if has_sd else 100.0
    ax.set_ylim(0, max(110.0, float(reach) + 12.0))  # whiskers and their labels stay in view
    runs = int(m["runs"].max()) if "runs" in m and m["runs"].notna().any() else 1
    spread = "mean ± sample SD across runs" if has_sd else f"mean of {runs} run (no SD with one run)"
    _titled(ax, f"Macro-average success, {spread}", shared)
    ax.legend(fontsize=7, ncols=3, loc="best")
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
    names, shared = short_labels(conds)
    ax.set_xticks(range(len(conds)), names, fontsize=7)
    ax.set_yticks(range(len(tasks)), tasks, fontsize=7)
    fig.colorbar(image, ax=ax, label="success (%)")
    _titled(ax, "Per-task success (mean across runs; grey n/a: no judged episode)", shared)
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
        for k, (offset, side) in enumerate(((-width / 2, ACTIVE.name), (width / 2, PASSIVE.name))):
            bars = ax.bar(x + offset, sub[f"{side}_pct"].fillna(0), width, label=side, color=PALETTE[k])
            ax.bar_label(
                bars, [f"{k}/{n}" for k, n in zip(sub[f"{side}_k"], sub[f"{side}_n"], strict=True)], fontsize=6
            )
        ax.set_xticks(x, labels, fontsize=7)
        ax.set_ylim(0, 110)
        fams = ", ".join(str(v) for v in sub["families"].unique())
        ax.set_title(f"{T.SUBSET_NAMES[s]} ({fams} {'family' if fams == '1' else 'families'})", fontsize=9)
        ax.set_ylabel("success (%)")
    axes[0].legend(fontsize=7)
    return _save(fig, path, f["model"])


def attribution_bars(table: pd.DataFrame, path: str | Path) -> Path:
    """Per family, the gain (pp) of each (model, protocol, intervention) over its paper condition
    (:func:`vabench.analysis.attribution.attribution`)."""
    rows = table[table["scope"] == "task"]
    families = list(dict.fromkeys(rows["task"]))
    series = list(dict.fromkeys(zip(rows["model"], rows["protocol"], rows["intervention"], strict=True)))
    fig = _figure(max(6.0, 0.6 * len(families) * max(1, len(series)) / 2), 3.6)
    ax = fig.subplots()
    width = 0.8 / max(1, len(series))
    for i, key in enumerate(series):
        s = rows[(rows["model"] == key[0]) & (rows["protocol"] == key[1]) & (rows["intervention"] == key[2])]
        values = [s.loc[s["task"] == f, "delta_pp"].mean() for f in families]
        x = [j + (i - (len(series) - 1) / 2) * width for j in range(len(families))]
        ax.bar(x, [0 if pd.isna(v) else v for v in values], width, label=" | ".join(key), color=PALETTE[i % 8])
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks(range(len(families)))
    ax.set_xticklabels(families, rotation=40, ha=RIGHT, fontsize=7)
    ax.set_ylabel("success gain over the paper condition (pp)")
    ax.set_title("Attribution: what each intervention recovers, per family", fontsize=9)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(fig, path, families)


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
    named = df["intervention"].fillna(Intervention.NONE) if "intervention" in df else pd.Series(dtype=str)
    att = attribution(df) if (named != Intervention.NONE).any() else None
    if att is not None and len(att):
        paths.append(attribution_bars(att, out_dir / "attribution.png"))
    return paths
