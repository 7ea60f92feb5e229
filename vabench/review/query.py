"""The run page's questions, answered on the server: filter, sort and page a run's outcome table
(14,000 rows stay on the server; the browser gets one page), the counts and success of the
filter, and an episode's neighbours in that order (the episode page's n / p)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from vabench.core.errors import VabenchError

from .runs import TABLE_COLUMNS

FILTERS = ["model", "protocol", "summary_source", "task", "status", "success", "end_reason"]
LABELS = ("labelled", "unlabelled")
DEFAULT_ORDER = ["model", "protocol", "task", "seed", "run_index"]
PAGE = 100
MAX_PAGE = 1000


class BadQuery(VabenchError, ValueError):
    """A query parameter the run page never sends (named, with what is allowed)."""


@dataclass
class Query:
    filters: dict[str, str] = field(default_factory=dict)  # column -> value as shown ("" = all)
    seed: str = ""
    labels: str = ""
    sort: str = "task"
    desc: bool = False
    offset: int = 0
    limit: int = PAGE

    @classmethod
    def parse(cls, params) -> Query:
        """From request parameters: ``model=...`` (each of FILTERS), ``seed``, ``labels``,
        ``sort``, ``dir`` (1 | -1), ``offset``, ``limit``."""
        q = cls(filters={k: params[k] for k in FILTERS if params.get(k)})
        q.seed, q.labels = params.get("seed", "").strip(), params.get("labels", "")
        q.sort, q.desc = params.get("sort", "task"), params.get("dir", "1") == "-1"
        if q.labels not in ("", *LABELS):
            raise BadQuery(f"labels must be one of {', '.join(LABELS)} (or empty), not {q.labels!r}")
        if q.sort not in (*TABLE_COLUMNS, "labels"):
            raise BadQuery(f"sort must be a column of the run table, not {q.sort!r}")
        try:
            q.offset, q.limit = int(params.get("offset", 0)), int(params.get("limit", PAGE))
        except ValueError:
            raise BadQuery("offset and limit must be whole numbers") from None
        if q.offset < 0 or not 1 <= q.limit <= MAX_PAGE:
            raise BadQuery(f"offset must be >= 0 and limit in 1..{MAX_PAGE}")
        return q


def shown(v) -> str:
    """A cell as the page shows it (and as a filter value names it)."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool | np.bool_):
        return "true" if v else "false"
    return str(v)


def _text(col: pd.Series) -> pd.Series:
    return col.map(shown) if col.dtype == object or str(col.dtype) == "boolean" else col.astype(object).map(shown)


def select(df: pd.DataFrame, labelled: dict[str, list[str]], q: Query) -> pd.DataFrame:
    """The rows the filter keeps, in the asked order (nulls last; ties in the run's order)."""
    keep = pd.Series(True, index=df.index)
    for key, want in q.filters.items():
        keep &= _text(df[key]) == want
    if q.seed:
        keep &= _text(df["seed"]) == q.seed
    if q.labels:
        has = df["record"].map(lambda r: bool(labelled.get(r)))
        keep &= has if q.labels == "labelled" else ~has
    out = df[keep]
    key = out["record"].map(lambda r: " ".join(labelled.get(r, []))) if q.sort == "labels" else out[q.sort]
    numeric = pd.api.types.is_numeric_dtype(key) and not pd.api.types.is_bool_dtype(key)
    key = (pd.to_numeric(key, errors="coerce") if numeric else _text(key).where(key.notna(), None)).rename("_key")
    order = key.sort_values(ascending=not q.desc, kind="stable", na_position="last").index
    return out.loc[order]


def counts(rows: pd.DataFrame, labelled: dict[str, list[str]]) -> dict:
    judged = rows["status"] == "ok"
    return {
        "shown": len(rows),
        "judged": int(judged.sum()),
        "wins": int((judged & rows["success"].astype("boolean").fillna(False)).sum()),
        "labelled": int(rows["record"].map(lambda r: bool(labelled.get(r))).sum()),
    }


def page(df: pd.DataFrame, labelled: dict[str, list[str]], q: Query) -> dict:
    """One page of the filtered, sorted table with the filter's counts and the filters' choices."""
    from .runs import jsonable_rows

    rows = select(df, labelled, q)
    part = rows.iloc[q.offset : q.offset + q.limit]
    out = jsonable_rows(part)
    for row in out:
        row["labels"] = labelled.get(row["record"], [])
    return {
        "total": len(df),
        **counts(rows, labelled),
        "offset": q.offset,
        "limit": q.limit,
        "rows": out,
        "choices": {k: sorted(set(_text(df[k]))) for k in FILTERS},
    }


def neighbour(df: pd.DataFrame, labelled: dict[str, list[str]], q: Query, record: str, step: int) -> str | None:
    """The record ``step`` places from ``record`` in the filtered order (None past either end or
    when the filter no longer holds it)."""
    records = list(select(df, labelled, q)["record"])
    try:
        at = records.index(record) + step
    except ValueError:
        return None
    return records[at] if 0 <= at < len(records) else None
