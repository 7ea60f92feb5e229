"""The site's numbers, all from ``vabench.analysis``: the leaderboard puts together, per condition
on the base track, the macro-averages (Table 3), the judged episodes pooled over the task cells of
the success matrix with their Wilson interval (``stats.wilson_interval``), the paired difference
from the condition ranked just above on shared seeds (``paired.paired_comparison``: is the gap
between two neighbours real?) and the dollars per episode (``costs.cost_table``)."""

from __future__ import annotations

import math

import pandas as pd

from vabench.analysis import macro_averages, paired_comparison, success_matrix, wilson_interval
from vabench.analysis.cells import DASH, _nan, mean_sd, num, signed
from vabench.analysis.costs import dollars
from vabench.analysis.tables import SUBSETS


def _ranked(macro: pd.DataFrame) -> list[str]:
    """Conditions by their all-family macro-average, best first (no judged episode: last)."""
    alls = macro[macro["subset"] == "all"].set_index("condition")["mean_pct"]
    return sorted(alls.index, key=lambda c: (-alls[c] if not _nan(alls[c]) else math.inf, c))


def _paired_all(df: pd.DataFrame, a: str, b: str) -> dict:
    """B vs A on their shared seeds, the all-family row: difference, interval and pairs."""
    try:
        t = paired_comparison(df, a, b)
    except ValueError:
        return {"pairs": 0}
    r = t[(t["scope"] == "subset") & (t["task"] == "all")].iloc[0]
    return {"pairs": int(r["pairs"]), "delta_pp": r["delta_pp"], "lo": r["ci_low_pp"], "hi": r["ci_high_pp"]}


def leaderboard(df: pd.DataFrame, costs: pd.DataFrame) -> pd.DataFrame:
    """One row per base-track condition, best first: macro-averages, pooled k/n with its 95% Wilson
    interval (%), the paired difference from the row above and the cost per judged episode."""
    macro, matrix = macro_averages(df), success_matrix(df)
    pooled = matrix.groupby("condition")[["k", "n"]].sum()
    cost = costs[costs["scope"] == "condition"].set_index("condition")
    rows, above = [], None
    for rank, c in enumerate(_ranked(macro), start=1):
        m = macro[macro["condition"] == c].set_index("subset")
        k, n = (int(pooled.loc[c, "k"]), int(pooled.loc[c, "n"])) if c in pooled.index else (0, 0)
        lo, hi = wilson_interval(k, n)
        row = {"rank": rank, "condition": c, "k": k, "n": n, "rate_pct": 100 * k / n if n else math.nan}
        row |= {"ci_low_pct": 100 * lo, "ci_high_pct": 100 * hi, "runs": int(m.loc["all", "runs"])}
        for s in SUBSETS:
            row |= {
                f"{s}_pct": m.loc[s, "mean_pct"],
                f"{s}_sd": m.loc[s, "sd_pct"],
                f"{s}_families": m.loc[s, "families"],
            }
        row["excluded"] = int(m.loc["all", "excluded"])
        row |= {"above": above, **(_paired_all(df, above, c) if above else {"pairs": 0})}
        row["usd_per_episode"] = cost.loc[c, "usd_per_episode"] if c in cost.index else math.nan
        row["cost"] = _cost_cell(cost.loc[c]) if c in cost.index else DASH
        rows.append(row)
        above = c
    out = pd.DataFrame(rows)
    out.attrs = {"notes": list(dict.fromkeys(macro.attrs.get("notes", []) + matrix.attrs.get("notes", [])))}
    return out


def _cost_cell(r: pd.Series) -> str:
    if _nan(r["usd_per_episode"]):
        return "unknown" if r["unknown_rows"] else DASH
    return dollars(r["usd_per_episode"])


def shown(board: pd.DataFrame) -> list[dict]:
    """The leaderboard's cells as the page prints them (the analysis's cell wording)."""
    out = []
    for r in board.to_dict("records"):
        cells = {"rank": r["rank"], "condition": r["condition"], "runs": r["runs"], "excluded": r["excluded"]}
        for s in SUBSETS:
            cells[s] = mean_sd(r[f"{s}_pct"], r[f"{s}_sd"]) if r[f"{s}_families"] else DASH
        cells["families"] = "/".join(str(r[f"{s}_families"]) for s in SUBSETS)
        cells["pooled"] = _pooled(r) if r["n"] else DASH
        cells["paired"] = _paired(r)
        cells["cost"] = r["cost"]
        out.append(cells)
    return out


def _pooled(r: dict) -> str:
    return f"{r['k']}/{r['n']} · {num(r['rate_pct'], 1)}% [{num(r['ci_low_pct'], 1)}, {num(r['ci_high_pct'], 1)}]"


def _paired(r: dict) -> str:
    """``+12.5 pp [-3.0, +28.0] (40 pairs)``, or why there is none."""
    if not isinstance(r.get("above"), str):
        return DASH
    if not r.get("pairs"):
        return "no shared seeds"
    return f"{signed(r['delta_pp'], 1)} pp [{signed(r['lo'], 1)}, {signed(r['hi'], 1)}] ({r['pairs']} pairs)"


def _cell(r: dict) -> dict:
    """A success-matrix cell as printed: mean ± SD across runs, pooled k/n, rate and Wilson interval."""
    return {
        "condition": r["condition"],
        "task": r["task"],
        "arms": r["arms"] or "?",
        "runs": r["runs"],
        "mean": mean_sd(r["mean_pct"], r["sd_pct"]),
        "pooled": _pooled(r) if r["n"] else DASH,
        "excluded": r["excluded"],
    }


def task_cells(matrix: pd.DataFrame) -> list[dict]:
    """Per task (the success matrix's order), its conditions best first (Tables 7-9)."""
    out = []
    for task, g in matrix.groupby("task", sort=False):
        g = g.sort_values(["rate_pct", "condition"], ascending=[False, True], na_position="last")
        out.append({"task": task, "arms": g["arms"].iloc[0] or "?", "rows": [_cell(r) for r in g.to_dict("records")]})
    return out


def condition_cells(matrix: pd.DataFrame, condition: str) -> list[dict]:
    """One condition's row of the success matrix, task by task."""
    return [_cell(r) for r in matrix[matrix["condition"] == condition].to_dict("records")]
