"""Paper-style table cells, one wording for every table (report and diagnostic displays): a dash
for a missing number, NA where no episode applies, signed differences without ``-0.00``."""

from __future__ import annotations

import math

import pandas as pd

DASH = "–"
SUBSET_HEAD = {"single": "Single-arm", "dual": "Dual-arm", "all": "All"}


def _nan(x) -> bool:
    try:
        return x is None or x is pd.NA or math.isnan(x)
    except TypeError:
        return False


def _f(x, nd: int = 1, na: str = "NA") -> str:
    return na if _nan(x) else f"{x:.{nd}f}"


def signed(x, nd: int = 2, na: str = DASH) -> str:
    """``+1.25`` / ``-0.50``; a value that rounds to zero is ``0.00``, never ``-0.00``."""
    if _nan(x):
        return na
    return f"{0.0:.{nd}f}" if round(float(x), nd) == 0 else f"{x:+.{nd}f}"


def num(x, nd: int = 2) -> str:
    return DASH if _nan(x) else f"{x:.{nd}f}"


def mean_sd(mean, sd) -> str:
    return DASH if _nan(mean) else f"{mean:.2f} ± {num(sd)}"


def count(k, n, pct) -> str:
    return f"0/0 ({DASH})" if not n or _nan(n) else f"{int(k)}/{int(n)} ({pct:.2f}%)"


def pvalue(p) -> str:
    return DASH if _nan(p) else f"{p:.2g}"


def sign_test(what: str, k, non_tied, tied, p) -> str:
    """The sign-test cell; with no non-tied family there is no test, and the cell says so."""
    if not non_tied:
        return f"no test: no non-tied family ({int(tied)} tied)"
    return f"{what} on {int(k)} of {int(non_tied)} non-tied ({int(tied)} tied), p={pvalue(p)}"
