"""The rows left out of every rate (infra_error, unjudged, superseded), per condition, track and
task: the exclusion summary that accompanies the paper's tables. Shared rules: ``common``."""

from __future__ import annotations

import pandas as pd

from vabench.vocab import Status

from ..load import prepare, privileged_note
from .common import _finish


# ------------------------------------------------------------------------------------------- infra
def infra_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Rows left out of every rate, per condition, track and task (only where some were), and a
    total row: infra_error rows, how many of them were retried and judged (recovered), episodes
    never judged, other unjudged rows, superseded attempts, judged rows from a retry (attempt > 1:
    the driver overwrites an infra_error file with its retry), the provider's behaviour (HTTP
    attempts, retries, seconds of back-off, summed over the rows) and the most common error.
    Provider counts are those of each row's final attempt (earlier attempts' rows are replaced);
    rows written before schema 2 have none and count 0."""
    p, notes = prepare(df)
    p = p[[c for c in _USED if c in p]]  # each group is filtered several times: only what a row needs
    rows = []
    for (c, tr, t), g in p.groupby(["condition", "track", "task"]):
        row = _infra_row(c, tr, t, g)
        if row[4] or row[7] or row[8] or row[9] or row[12]:  # ..., provider_retries
            rows.append(row)
    rows.append(_infra_row("total", "", "", p))
    notes += [
        "An infra_error episode could not be judged: it is excluded from every rate and never counted as a "
        "failure (docs/design.md); the driver retries it as a new attempt.",
        "provider_retries: HTTP attempts that repeated a failed one (rate limit, timeout, 5xx, malformed reply); "
        "backoff_s: seconds spent waiting before them. Rows list where any row was excluded or retried.",
        *privileged_note(p["condition"].unique()),
    ]
    cols = ["condition", "track", "task", "rows", Status.INFRA_ERROR, "recovered", "never_judged", "unjudged"]
    cols += ["superseded", "judged_after_retry", "judged", "provider_attempts", "provider_retries", "backoff_s"]
    cols += ["top_error"]
    title = "Rows excluded from the rates (infra_error and unjudged)"
    return _finish(rows, cols, "infra_summary", title, notes)


_USED = ["experiment", "condition", "track", "task", "seed", "run_index", "state", "recovered", "attempt", "error"]
_USED += ["provider_attempts", "provider_retries", "backoff_s"]


def _infra_row(c, tr, t, g: pd.DataFrame) -> list:
    infra = g[g["state"] == Status.INFRA_ERROR]
    never = infra[~infra["recovered"]].drop_duplicates(
        ["experiment", "condition", "track", "task", "seed", "run_index"]
    )
    errors = infra["error"].dropna().astype(str).str.slice(0, 80)
    top = errors.value_counts().index[0] if len(errors) else ""
    return [
        c,
        tr,
        t,
        len(g),
        len(infra),
        int(infra["recovered"].sum()),
        len(never),
        int((g["state"] == "unjudged").sum()),
        int((g["state"] == "superseded").sum()),
        int(((g["state"] == "judged") & (g["attempt"] > 1)).sum()),
        int((g["state"] == "judged").sum()),
        int(_total(g, "provider_attempts")),
        int(_total(g, "provider_retries")),
        round(float(_total(g, "backoff_s")), 1),
        top,
    ]


def _total(g: pd.DataFrame, column: str) -> float:
    """A provider column's sum (0 for rows written before it existed)."""
    return float(pd.to_numeric(g[column], errors="coerce").fillna(0).sum()) if column in g else 0.0
