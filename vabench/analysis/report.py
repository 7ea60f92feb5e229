"""Rendering the tables: Markdown (paper-style cells, title, notes) and CSV (the tidy numbers).

No dependency beyond pandas: the Markdown pipe-table writer is here (``tabulate`` is not needed).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from vabench.core.vocab import SummaryKind, Track

from . import tables as T
from .attribution import attribution, display_attribution, recovers_most
from .cells import DASH, SUBSET_HEAD, _nan, count, mean_sd, num, sign_test, signed
from .costs import cost_table, display_costs
from .diagnostic_display import DISPLAY as _DIAGNOSTIC_DISPLAY
from .load import prepared_once


# ----------------------------------------------------------------------------------- display frames
def display(frame: pd.DataFrame) -> pd.DataFrame:
    """The table as the paper prints it: strings, one cell per comparison."""
    fn = _DISPLAY.get(frame.attrs.get("kind"), _generic)
    return fn(frame) if len(frame) else pd.DataFrame({"": ["(no rows)"]})


def _generic(f: pd.DataFrame) -> pd.DataFrame:
    out = f.copy()
    for c in out.columns:
        if pd.api.types.is_float_dtype(out[c]):
            out[c] = out[c].map(num)
    return out.astype(str)


def _cond_order(f: pd.DataFrame, value: str, by: str = "condition") -> list[str]:
    means = f.groupby(by, sort=False)[value].mean()
    return sorted(means.index, key=lambda c: (-means[c] if not _nan(means[c]) else math.inf, c))


def _success_matrix(f):
    conds = _cond_order(f, "mean_pct")
    cells = {}
    for r in f.itertuples(index=False):
        text = f"{mean_sd(r.mean_pct, r.sd_pct)} ({r.k}/{r.n}; {r.ci_low_pct:.1f}–{r.ci_high_pct:.1f})"
        cells[(r.task, r.condition)] = text if r.n else DASH
    tasks = list(dict.fromkeys(zip(f["task"], f["arms"], strict=True)))
    rows = [{"arms": a or "?", "task": t, **{c: cells.get((t, c), DASH) for c in conds}} for t, a in tasks]
    return pd.DataFrame(rows)


def _macro_averages(f):
    conds = _cond_order(f[f["subset"] == "all"], "mean_pct")
    rows = []
    for c in conds:
        g = f[f["condition"] == c].set_index("subset")
        row = {"condition": c}
        for s in T.SUBSETS:
            row[SUBSET_HEAD[s]] = mean_sd(g.loc[s, "mean_pct"], g.loc[s, "sd_pct"])
        row["families (single/dual/all)"] = "/".join(str(g.loc[s, "families"]) for s in T.SUBSETS)
        row["runs"] = str(g.loc["all", "runs"])
        row["excluded"] = str(g.loc["all", "excluded"])
        rows.append(row)
    return pd.DataFrame(rows)


def _active_passive(f):
    return pd.DataFrame(
        {
            "model": f["model"],
            "summary": f["summary_source"],
            "subset": f["subset"].map(SUBSET_HEAD),
            "families": f["families"].astype(str) + "/" + f["paper_families"].astype(str),
            "active": [count(*x) for x in zip(f["active_k"], f["active_n"], f["active_pct"], strict=True)],
            "passive": [count(*x) for x in zip(f["passive_k"], f["passive_n"], f["passive_pct"], strict=True)],
            "Δ (pp)": f["delta_pp"].map(signed),
            "sign test": [
                sign_test("passive worse", w, w + b, t, p)
                for w, b, t, p in zip(f["passive_worse"], f["passive_better"], f["ties"], f["sign_p"], strict=True)
            ],
        }
    )


def _feedback(f):
    return pd.DataFrame(
        {
            "model": f["model"],
            "protocol": f["protocol"],
            "summary": f["summary_source"],
            "subset": f["subset"].map(SUBSET_HEAD),
            "families": f["families"].astype(str) + "/" + f["paper_families"].astype(str),
            "paper": [count(*x) for x in zip(f["paper_k"], f["paper_n"], f["paper_pct"], strict=True)],
            "explained": [count(*x) for x in zip(f["explained_k"], f["explained_n"], f["explained_pct"], strict=True)],
            "Δ (pp)": f["delta_pp"].map(signed),
            "sign test": [
                sign_test("explained better", b, w + b, t, p)
                for w, b, t, p in zip(f["explained_worse"], f["explained_better"], f["ties"], f["sign_p"], strict=True)
            ],
        }
    )


def _active_passive_tasks(f):
    return pd.DataFrame(
        {
            "model": f["model"],
            "summary": f["summary_source"],
            "arms": f["arms"],
            "task": f["task"],
            "A": f["active_k"].astype(str) + "/" + f["active_n"].astype(str),
            "P": f["passive_k"].astype(str) + "/" + f["passive_n"].astype(str),
            "Δ (pp)": f["delta_pp"].map(signed),
            "direction": f["direction"],
        }
    )


def _heldout(f):
    fam = f["scope"] == "family"
    return pd.DataFrame(
        {
            "condition": f["condition"],
            "family": f["family"].where(fam, "average (" + f["families"].astype(str) + " families)"),
            "base": [
                count(k, n, p) if s else num(p)
                for s, k, n, p in zip(fam, f["base_k"], f["base_n"], f["base_pct"], strict=True)
            ],
            "held-out": [
                count(k, n, p) if s else num(p)
                for s, k, n, p in zip(fam, f["heldout_k"], f["heldout_n"], f["heldout_pct"], strict=True)
            ],
            "Δ (pp)": f["delta_pp"].map(signed),
            "runs": f["runs"],
        }
    )


def _long_horizon(f):
    return pd.DataFrame(
        {
            "condition": f["condition"],
            "task": f["task"],
            "objects": [f"{a}/{b}" for a, b in zip(f["objects_placed"], f["objects_possible"], strict=True)],
            "placed %": f["placed_pct"].map(num),
            "mean per episode": f["mean_placed"].map(num),
            "strict success": [count(*x) for x in zip(f["successes"], f["episodes"], f["success_pct"], strict=True)],
        }
    )


def _summary_sources(f):
    sources = [s for s in dict.fromkeys(f["source"]) if s != SummaryKind.OWN]
    rows = []
    f = _by_protocol(f)
    for m in dict.fromkeys(f["model"]):
        g = f[f["model"] == m].set_index("source")
        row = {"evaluated model": m, "own": num(g["rate_pct"].get("own", math.nan))}
        if m == "avg":
            row["own"] = num(g["own_pct"].iloc[0]) if len(g) else DASH
        for s in sources:
            if s in g.index:
                row[f"{s} rate"] = num(g.loc[s, "rate_pct"])
                mark = " (author)" if g.loc[s, "author"] else ""
                row[f"{s} Δ"] = signed(g.loc[s, "delta_pp"]) + mark
            else:
                row[f"{s} rate"] = row[f"{s} Δ"] = DASH
        rows.append(row)
    return pd.DataFrame(rows)


def _by_protocol(f):
    """Model labels that name the protocol when the table holds both (one row per model and protocol)."""
    if "protocol" not in f or f.loc[f["model"] != "avg", "protocol"].nunique() < 2:
        return f
    own = f["model"] != "avg"
    return f.assign(model=f["model"].where(~own, f["model"] + " (" + f["protocol"].astype(str) + ")"))


def _summary_sources_tasks(f):
    f = _by_protocol(f)
    wide = f.assign(col=f["source"] + ": " + f["task"], cell=f["rate_pct"].map(num))
    out = wide.pivot_table(index="model", columns="col", values="cell", aggfunc="first", sort=False)
    return out.reindex(list(dict.fromkeys(f["model"]))).fillna(DASH).reset_index()


def _summary_source_macro(f):
    f = _by_protocol(f)
    rows = []
    for (m, s), g in f.groupby(["model", "source"], sort=False):
        g = g.set_index("subset")
        row = {"model": m, "source": s}
        for sub in T.SUBSETS:
            row[SUBSET_HEAD[sub]] = f"{num(g.loc[sub, 'mean_pct'])} (Δ {signed(g.loc[sub, 'delta_pp'])})"
        row["families (single/dual/all)"] = "/".join(str(g.loc[x, "families"]) for x in T.SUBSETS)
        rows.append(row)
    return pd.DataFrame(rows)


def _local_models(f):
    rows = []
    for c, g in f.groupby("condition", sort=False):
        g = g.set_index("subset")
        row = {"condition": c, "summary": g["summary"].iloc[0]}
        for s in T.SUBSETS:
            row[SUBSET_HEAD[s]] = count(g.loc[s, "k"], g.loc[s, "n"], g.loc[s, "rate_pct"])
        row["families (single/dual/all)"] = "/".join(str(g.loc[x, "families"]) for x in T.SUBSETS)
        rows.append(row)
    return pd.DataFrame(rows)


def _local_models_tasks(f):
    wide = f.assign(cell=[DASH if not n else num(p) for n, p in zip(f["n"], f["rate_pct"], strict=True)])
    out = wide.pivot_table(index=["arms", "task"], columns="condition", values="cell", aggfunc="first", sort=False)
    return out.fillna(DASH).reset_index()


def _checkpoints(f):
    label = f["task"].where(f["scope"] == "task", f["task"].map(lambda s: f"{SUBSET_HEAD.get(s, s)} (micro)"))
    cell = [f"{num(p)} ({d}/{t})" for p, d, t in zip(f["progress_pct"], f["done"], f["total"], strict=True)]
    wide = f.assign(row=label, cell=cell)
    out = wide.pivot_table(index="row", columns="condition", values="cell", aggfunc="first", sort=False)
    return out.reindex(list(dict.fromkeys(label))).fillna(DASH).reset_index()


_DISPLAY = {
    "attribution": display_attribution,
    "costs": display_costs,
    "success_matrix": _success_matrix,
    "macro_averages": _macro_averages,
    "active_passive": _active_passive,
    "active_passive_tasks": _active_passive_tasks,
    "feedback_ablation": _feedback,
    "heldout_vs_base": _heldout,
    "long_horizon": _long_horizon,
    "summary_sources": _summary_sources,
    "summary_sources_tasks": _summary_sources_tasks,
    "summary_source_macro": _summary_source_macro,
    "local_models": _local_models,
    "local_models_tasks": _local_models_tasks,
    "checkpoint_progress": _checkpoints,
    **_DIAGNOSTIC_DISPLAY,
}


# ------------------------------------------------------------------------------------------ writers
def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub pipe table of a frame's cells as strings."""
    cols = [str(c) for c in frame.columns]
    body = [[_md_cell(v) for v in row] for row in frame.astype(object).itertuples(index=False)]
    lines = ["| " + " | ".join(_md_cell(c) for c in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def _md_cell(v) -> str:
    text = DASH if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(frame: pd.DataFrame, said: set[str] | None = None) -> str:
    """Title, the paper-style table, and the notes as a list. ``said``: notes printed already with an
    earlier table of the same output (they are said once there; a table file keeps all its notes)."""
    parts = [f"### {frame.attrs.get('title', 'Table')}", "", markdown_table(display(frame))]
    notes = frame.attrs.get("notes", [])
    fresh = [n for n in notes if said is None or n not in said]
    if fresh:
        parts += ["", "Notes:", *[f"- {n}" for n in fresh]]
    if len(fresh) < len(notes):
        parts += ["", f"({len(notes) - len(fresh)} note(s) as above.)"]
    if said is not None:
        said.update(notes)
    return "\n".join(parts) + "\n"


def to_csv(frame: pd.DataFrame, path: str | Path) -> Path:
    """The tidy numbers (not the display strings); notes go with the Markdown file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


def write_table(frame: pd.DataFrame, out_dir: str | Path, name: str, fmt: str = "both") -> list[Path]:
    """``name.md`` and/or ``name.csv`` under out_dir; returns the paths written."""
    if fmt not in ("md", "csv", "both"):
        raise ValueError(f"format must be md, csv or both, not {fmt!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    if fmt in ("md", "both"):
        path = out_dir / f"{name}.md"
        path.write_text(to_markdown(frame))
        paths.append(path)
    if fmt in ("csv", "both"):
        paths.append(to_csv(frame, out_dir / f"{name}.csv"))
    return paths


def write_tables(tables: dict[str, pd.DataFrame], out_dir: str | Path, fmt: str = "both") -> list[Path]:
    return [p for name, frame in tables.items() for p in write_table(frame, out_dir, name, fmt)]


def available_tables(df: pd.DataFrame, local: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """The tables the rows support, by file name: the success matrix and macro-averages always (base
    track; the success matrix over every track when there is no base track), every other table only
    when it has rows (e.g. active vs passive only when a model has both protocols), local-model
    tables only for the models named in ``local``, then the cost table and the exclusion summary."""
    with prepared_once(df):  # every table starts from the same normalised rows
        return _available_tables(df, local)


def _available_tables(df: pd.DataFrame, local: list[str] | None) -> dict[str, pd.DataFrame]:
    has_base = (df["track"].fillna(Track.BASE) == Track.BASE).any() if "track" in df else True
    out = {"success_matrix": T.success_matrix(df, track=Track.BASE if has_base else None)}
    if has_base:
        out["macro_averages"] = T.macro_averages(df)
    candidates = {
        "active_passive": lambda: T.active_passive(df),
        "active_passive_tasks": lambda: T.active_passive(df, per_task=True),
        "feedback_ablation": lambda: T.feedback_ablation(df),
        "heldout_vs_base": lambda: T.heldout_vs_base(df),
        "long_horizon": lambda: T.long_horizon(df),
        "summary_sources": lambda: T.summary_sources(df),
        "summary_sources_tasks": lambda: T.summary_sources(df, per_task=True),
        "summary_source_macro": lambda: T.summary_source_macro(df),
        "checkpoint_progress": lambda: T.checkpoint_progress(df),
        "attribution": lambda: attribution(df),
        "recovers_most": lambda: recovers_most(attribution(df)),
        "robustness": lambda: T.robustness(df),
        "embodiments": lambda: T.embodiments(df),
    }
    if local:
        candidates["local_models"] = lambda: T.local_models(df, local)
        candidates["local_models_tasks"] = lambda: T.local_models(df, local, per_task=True)
    for name, make in candidates.items():
        frame = make()
        if len(frame):
            out[name] = frame
    out["costs"] = cost_table(df)
    out["infra_summary"] = T.infra_summary(df)
    return out


def available_diagnostics(
    tally: pd.DataFrame | None = None,
    rows: pd.DataFrame | None = None,
    proxies: pd.DataFrame | None = None,
    rule: str = "majority",
) -> dict[str, pd.DataFrame]:
    """The diagnostic tables the labels support, by file name: on the base track Tables 11-14, the
    module overview, Table 28, the vote-rule sensitivity and orderings, the Figure 2c profile and
    (with checker verdicts) the label-outcome concordance; on every other track its module overview
    (Table 16 for transfer); automatic proxy scores, and their agreement with the labels."""
    from . import agreement as A
    from . import diagnostics as D
    from . import proxies as P

    out: dict[str, pd.DataFrame] = {}
    if tally is not None and len(tally):
        tracks = sorted(set(tally["track"]))
        if Track.BASE in tracks:
            out["diagnostics_pooled"] = D.diagnostic_scores(tally, rule)
            for module in ("SPU", "RM", "ER"):
                out[f"diagnostics_{module.lower()}"] = D.diagnostic_components(tally, module, rule)
            out["annotation_agreement"] = A.agreement_table(tally)
            out["vote_rule_sensitivity"] = A.vote_rule_sensitivity(tally)
            out["vote_rule_orderings"] = A.vote_rule_orderings(tally)
            out["diagnostic_profile"] = D.diagnostic_profile(tally, rows=rows)
            if tally.loc[tally["track"] == Track.BASE, "success"].notna().any():
                out["label_concordance"] = D.label_concordance(tally, rule)
        for track in tracks:
            out[f"module_overview_{track}"] = D.module_overview(tally, rule, track)
    if proxies is not None and len(proxies):
        out["proxy_scores"] = P.proxy_scores(proxies)
        if tally is not None and len(tally):
            out["proxy_agreement"] = P.proxy_agreement(proxies, tally)
    return out
