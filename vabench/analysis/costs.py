"""What a study cost: per model and condition, the episodes, model calls, tokens and dollars, and
the dollars per judged episode and per success (beyond the paper; issue 42).

Every row is billed, whatever its state: an infra_error attempt or a superseded one spent its calls
too, so the dollars are the study's real spend, and the per-episode and per-success figures charge
that spend to the judged episodes (the ones a rate counts). Tokens as the outcome rows count them:
``input`` is ``prompt_tokens`` (the ``cached`` part included), ``output`` is ``completion_tokens``
(the ``reasoning`` part included).

A row whose ``cost_usd`` is null has an unknown price (the provider's price is not in LiteLLM's
map, or the episode never reported its usage): it is never read as $0. A group with such rows
keeps the sum of its known dollars (``known_usd``) and counts the rest (``unknown_rows``); its
``cost_usd``, ``usd_per_episode`` and ``usd_per_success`` are NaN, shown as unknown or as a lower
bound (``>= $x``)."""

from __future__ import annotations

import math

import pandas as pd

from .cells import DASH, _nan
from .load import prepare, privileged_note

TOKENS = {"prompt_tokens": "input", "cached_tokens": "cached", "completion_tokens": "output"}
TOKENS |= {"reasoning_tokens": "reasoning"}
USAGE = ("model_calls", *TOKENS)
ALL = "all"


def _sum(values: pd.Series) -> int:
    return int(pd.to_numeric(values, errors="coerce").fillna(0).sum())


def _cost_row(scope: str, model: str, condition: str, g: pd.DataFrame) -> dict:
    judged = g[g["state"] == "judged"]
    cost = pd.to_numeric(g["cost_usd"], errors="coerce").astype(float)
    unknown, known = int(cost.isna().sum()), float(cost.sum())
    total = known if unknown == 0 else math.nan
    episodes, successes = len(judged), int((judged["y"] == 1.0).sum())
    row = {"scope": scope, "model": model, "condition": condition, "episodes": episodes, "successes": successes}
    row["rows"] = len(g)
    row |= {c: _sum(g[c]) for c in USAGE}
    row |= {"cost_usd": total, "known_usd": known, "unknown_rows": unknown}
    row["usd_per_episode"] = total / episodes if episodes else math.nan
    row["usd_per_success"] = total / successes if successes else math.nan
    return row


def cost_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, condition) (``scope`` condition), a total per model with more than one
    condition (``scope`` model) and one over everything (``scope`` all) when there is more than one
    condition: episodes (judged) and successes, ``rows`` (every attempt billed), ``model_calls``,
    the four token counts, ``cost_usd`` (NaN when any row's price is unknown), ``known_usd``,
    ``unknown_rows``, ``usd_per_episode`` and ``usd_per_success`` (NaN without a known total, or
    without an episode / a success)."""
    p, notes = prepare(df)
    rows = []
    for model, by_model in p.groupby("model", sort=True):
        conditions = list(by_model.groupby("condition", sort=True))
        rows += [_cost_row("condition", model, c, g) for c, g in conditions]
        if len(conditions) > 1:
            rows.append(_cost_row("model", model, ALL, by_model))
    if len(rows) > 1:
        rows.append(_cost_row(ALL, ALL, ALL, p))
    columns = ["scope", "model", "condition", "episodes", "successes", "rows", *USAGE, "cost_usd", "known_usd"]
    columns += ["unknown_rows", "usd_per_episode", "usd_per_success"]
    out = pd.DataFrame(rows, columns=columns)
    unknown = int(out.loc[out["scope"] == "condition", "unknown_rows"].sum()) if len(out) else 0
    notes += [
        "Every attempt is billed (infra_error and superseded rows included); per episode and per success "
        "divide that spend by the judged episodes and their successes. Input tokens include the cached ones, "
        "output tokens the reasoning ones.",
        f"{unknown} row(s) with an unknown price (cost_usd null): never counted as $0; their groups show the "
        "known dollars as a lower bound (>=) and no per-episode or per-success figure."
        if unknown
        else None,
        *privileged_note(out["condition"]),
    ]
    out.attrs = {"kind": "costs", "title": "Cost per model and condition", "notes": [n for n in notes if n]}
    return out


def dollars(x, unknown: int = 0, known: float = 0.0) -> str:
    """A dollar cell: the amount, or ``unknown`` / ``>= $known`` where some price is unknown."""
    if _nan(x):
        if unknown and known > 0:
            return f">= {_usd(known)} ({unknown} unknown)"
        return "unknown" if unknown else DASH
    return _usd(x)


def _usd(x: float) -> str:
    return f"${x:,.2f}" if abs(x) >= 100 else f"${x:.4f}"


def display_costs(f: pd.DataFrame) -> pd.DataFrame:
    """The cost table as printed: thousands separators for counts, dollars or unknown."""
    rows = []
    for r in f.itertuples(index=False):
        who = {"condition": r.condition, "model": f"{r.model} (all conditions)", ALL: "all"}[r.scope]
        row = {"model": r.model if r.scope == "condition" else "", "condition": who}
        row |= {"episodes": f"{r.episodes:,}", "successes": f"{r.successes:,}", "calls": f"{r.model_calls:,}"}
        row |= {f"{name} tokens": f"{getattr(r, c):,}" for c, name in TOKENS.items()}
        row["$"] = dollars(r.cost_usd, r.unknown_rows, r.known_usd)
        unknown = "unknown" if r.unknown_rows else DASH
        row["$/episode"] = unknown if _nan(r.usd_per_episode) and r.episodes else dollars(r.usd_per_episode)
        row["$/success"] = unknown if _nan(r.usd_per_success) and r.successes else dollars(r.usd_per_success)
        rows.append(row)
    return pd.DataFrame(rows)
