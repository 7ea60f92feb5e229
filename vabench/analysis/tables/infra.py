"""The rows left out of every rate (infra_error, unjudged, superseded), per condition, track and
task: the exclusion summary that accompanies the paper's tables. Shared rules: ``common``."""

from __future__ import annotations

import pandas as pd

from vabench.core.vocab import Status

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
    p = _counted(p[[c for c in _USED if c in p]])  # one groupby over indicator columns, no filter per group
    keys = ["condition", "track", "task"]
    per = p.groupby(keys)[_COUNTS].sum().join(p.groupby(keys).size().rename("rows"))
    per = per.join(_never(p, keys)).join(_top_errors(p, keys)).fillna({"never": 0, "top": ""})
    listed = [Status.INFRA_ERROR, "unjudged", "superseded", "after_retry", "provider_retries"]
    shown = per[(per[listed] > 0).any(axis=1)]
    rows = [_infra_row(key, x) for key, x in zip(shown.index, shown.to_dict("records"), strict=True)]
    total = {**p[_COUNTS].sum().to_dict(), "rows": len(p), "never": len(_never(p, []))}
    tops = _top_errors(p, [])
    total["top"] = tops.iloc[0] if len(tops) else ""
    rows.append(_infra_row(("total", "", ""), total))
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
_EPISODE = ["experiment", "condition", "track", "task", "seed", "run_index"]
_PROVIDER = ["provider_attempts", "provider_retries", "backoff_s"]
_COUNTS = [Status.INFRA_ERROR, "recovered", "unjudged", "superseded", "after_retry", "judged", *_PROVIDER]


def _counted(p: pd.DataFrame) -> pd.DataFrame:
    """The rows with a 0/1 column per count and the provider columns as numbers (0 for rows written
    before they existed)."""
    infra, judged = p["state"] == Status.INFRA_ERROR, p["state"] == "judged"
    out = p.assign(**{Status.INFRA_ERROR: infra, "unjudged": p["state"] == "unjudged", "judged": judged})
    out = out.assign(recovered=infra & p["recovered"], superseded=p["state"] == "superseded")
    out["after_retry"] = judged & (p["attempt"] > 1)
    for c in _PROVIDER:
        out[c] = pd.to_numeric(p[c], errors="coerce").fillna(0) if c in p else 0.0
    return out


def _never(p: pd.DataFrame, keys: list[str]) -> pd.Series | pd.DataFrame:
    """Episodes with an infra_error row and no judged attempt, per group (all of them without keys)."""
    never = p[p[Status.INFRA_ERROR] & ~p["recovered"]].drop_duplicates(_EPISODE)
    return never.groupby(keys).size().rename("never") if keys else never


def _top_errors(p: pd.DataFrame, keys: list[str]) -> pd.Series:
    """The most common infra error (first 80 characters) per group; ties go to the first seen."""
    e = p.loc[p[Status.INFRA_ERROR] & p["error"].notna(), keys + ["error"]]
    e = e.assign(error=e["error"].astype(str).str.slice(0, 80), seen=range(len(e)), one=1)
    n = e.groupby([*keys, "error"], sort=False).agg(n=("one", "sum"), seen=("seen", "min")).reset_index()
    n = n.sort_values(["n", "seen"], ascending=[False, True], kind="stable")
    if not keys:
        return n["error"].rename("top")
    return n.drop_duplicates(keys).set_index(keys)["error"].rename("top")


def _infra_row(key: tuple, x: dict) -> list:
    counts = [int(x[c]) for c in (Status.INFRA_ERROR, "recovered", "never", "unjudged", "superseded")]
    counts += [int(x["after_retry"]), int(x["judged"]), int(x["provider_attempts"]), int(x["provider_retries"])]
    return [*key, int(x["rows"]), *counts, round(float(x["backoff_s"]), 1), x["top"]]
