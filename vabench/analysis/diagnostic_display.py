"""Paper-style cells for the diagnostic, agreement, paired, power, proxy and seed-yield tables;
``report.display`` dispatches to :data:`DISPLAY` by ``frame.attrs['kind']``. Scores print with one
decimal and NA (not a dash, never 0) where no episode applies, as the paper's Tables 11-16."""

from __future__ import annotations

import math

import pandas as pd

from .cells import DASH, SUBSET_HEAD, _f, _nan, signed


def _order(f: pd.DataFrame, value: str = "score_pct") -> list[str]:
    means = f.groupby("condition", sort=False)[value].mean()
    return sorted(means.index, key=lambda c: (-means[c] if not _nan(means[c]) else math.inf, c))


def _pivot(f: pd.DataFrame, col, order: list[str], value: str = "score_pct", nd: int = 1) -> pd.DataFrame:
    wide = f.assign(col=col, cell=f[value].map(lambda x: _f(x, nd)))
    cols = list(dict.fromkeys(wide["col"]))
    out = wide.pivot_table(index="condition", columns="col", values="cell", aggfunc="first", sort=False)
    return out.reindex(index=order, columns=cols).fillna("NA").rename_axis(columns=None).reset_index()


def _scores(f):  # conditions in name order, the same in Tables 11-14 and 16
    return _pivot(f, f["criterion"], sorted(f["condition"].unique()))


def _components(f):
    return _pivot(f, f["subset"].map(SUBSET_HEAD) + " " + f["criterion"], sorted(f["condition"].unique()))


def _modules(f):
    return _pivot(f, f["module"], sorted(f["condition"].unique()))


def _profile(f):
    return _pivot(f, f["criterion"], list(dict.fromkeys(f.sort_values("rank")["condition"])))


def _agreement(f):
    return pd.DataFrame(
        {
            "module": f["module"],
            "criterion": f["criterion"],
            "n": f["n"].map(lambda n: f"{n:,}"),
            "raters": f["raters"],
            "unanimity": f["unanimity_pct"].map(lambda x: DASH if _nan(x) else f"{x:.2f}%"),
            "splits": f["splits"],
            "pos. rate": f["positive_rate"].map(lambda x: _f(x, 3, DASH)),
            "Fleiss κ": f["fleiss_kappa"].map(lambda x: _f(x, 3, DASH)),
            "Gwet AC1": f["ac1"].map(lambda x: _f(x, 3, DASH)),
        }
    )


def _vote_rules(f):
    out = pd.DataFrame({"condition": f["condition"]})
    for r in ("strict", "majority", "permissive"):
        out[r] = f[f"{r}_pct"].map(lambda x: _f(x, 2))
    out["range (pp)"] = f["range_pp"].map(lambda x: _f(x, 2))
    out["strict − majority"] = f["strict_delta_pp"].map(lambda x: signed(x, na="NA"))
    out["permissive − majority"] = f["permissive_delta_pp"].map(lambda x: signed(x, na="NA"))
    return out.iloc[[list(f["condition"]).index(c) for c in _order(f, "majority_pct")]]


def _orderings(f):
    return pd.DataFrame(
        {
            "rules": f["rule_a"] + " vs " + f["rule_b"],
            "conditions": f["conditions"],
            "Spearman ρ": f["spearman"].map(lambda x: _f(x, 3, DASH)),
            "Kendall τ": f["kendall"].map(lambda x: _f(x, 3, DASH)),
            "same top 3": f["same_top3"].map({True: "yes", False: "no"}),
        }
    )


def _concordance(f):
    out = f.copy()
    out["agree_pct"] = f["agree_pct"].map(lambda x: _f(x, 2, DASH))
    return out.astype(str)


def _paired(f):
    label = f["task"].where(f["scope"] == "task", f["task"].map(lambda s: f"{SUBSET_HEAD.get(s, s)} (macro)"))
    bounds = zip(f["ci_low_pp"], f["ci_high_pp"], strict=True)
    ci = ["" if _nan(lo) else f"[{signed(lo)}, {signed(hi)}]" for lo, hi in bounds]
    return pd.DataFrame(
        {
            "family": label,
            "pairs (seeds)": [f"{p} ({s})" for p, s in zip(f["pairs"], f["seeds"], strict=True)],
            "A": [f"{k}/{n}" for k, n in zip(f["a_k"], f["pairs"], strict=True)],
            "B": [f"{k}/{n}" for k, n in zip(f["b_k"], f["pairs"], strict=True)],
            "only A / only B": [f"{a} / {b}" for a, b in zip(f["a_only"], f["b_only"], strict=True)],
            "Δ (pp)": f["delta_pp"].map(signed),
            "bootstrap CI": ci,
            "McNemar p": [
                "" if scope != "task" else DASH if _nan(p) else f"{p:.3g}"
                for scope, p in zip(f["scope"], f["mcnemar_p"], strict=True)
            ],
        }
    )


def _power(f):
    return pd.DataFrame(
        {
            "solved": f["solved"],
            "runs": f["runs"],
            "seeds per task": f["seeds_per_task"].map(lambda x: "unreachable" if _nan(x) else f"{int(x)}"),
            "episodes per run": f["episodes_per_run"].map(lambda x: DASH if _nan(x) else str(x)),
            "episodes per condition": f["episodes_per_condition"].map(lambda x: DASH if _nan(x) else str(x)),
            "power": f["power"].map(lambda x: _f(x, 3, DASH)),
            "simulated": f["sim_power"].map(lambda x: _f(x, 3, DASH)),
        }
    )


def _seed_yield(f):
    out = f.drop(columns=["track"]).copy()
    out["yield_pct"] = f["yield_pct"].map(lambda x: _f(x, 1, DASH))
    out["paper_probed"] = f["paper_probed"].map(lambda x: DASH if _nan(x) else str(x))
    return out.fillna(DASH).astype(str)


def _proxy_scores(f):
    return _pivot(f, f["criterion"] + " (proxy)", sorted(f["condition"].unique()))


def _proxy_agreement(f):
    out = f.copy()
    for c, nd in (("agree_pct", 1), ("cohen_kappa", 3), ("ac1", 3), ("proxy_pos_pct", 1), ("human_pos_pct", 1)):
        out[c] = f[c].map(lambda x, nd=nd: _f(x, nd, DASH))
    return out.astype(str)


DISPLAY = {
    "diagnostic_scores": _scores,
    "diagnostic_components": _components,
    "module_overview": _modules,
    "profile": _profile,
    "agreement": _agreement,
    "vote_rules": _vote_rules,
    "vote_orderings": _orderings,
    "concordance": _concordance,
    "paired": _paired,
    "power": _power,
    "seed_yield": _seed_yield,
    "proxy_scores": _proxy_scores,
    "proxy_agreement": _proxy_agreement,
}
