"""The few statistics the paper's tables use."""

from __future__ import annotations

import math

import numpy as np


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for k successes out of n (fractions, not %); n = 0 gives (nan, nan)."""
    if n <= 0:
        return (math.nan, math.nan)
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    p, z2 = k / n, z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean_sd(values) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1); SD is nan with fewer than two values."""
    a = np.asarray([v for v in values if not _isnan(v)], dtype=float)
    if a.size == 0:
        return (math.nan, math.nan)
    return (float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else math.nan)


def sign_test(worse: int, better: int) -> float:
    """Two-sided sign test: ``worse`` of ``worse + better`` non-tied pairs went one way, H0 p = 0.5.

    Ties are left out before calling (the paper counts "non-tied families"); no pairs gives nan.
    Exact in integers (the binomial at 1/2 is symmetric: twice the smaller tail), so the tables need
    not import scipy.stats (most of the analysis CLI's start-up); equal to ``scipy.stats.binomtest``."""
    n = worse + better
    if n == 0:
        return math.nan
    k = min(worse, better)
    if 2 * k == n:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def _isnan(v) -> bool:
    try:
        return math.isnan(v)
    except TypeError:
        return v is None


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Exact McNemar test of paired binary outcomes: two-sided binomial test of the discordant pairs
    (``a_only`` went one way, ``b_only`` the other) against 1/2; no discordant pair gives nan."""
    return sign_test(a_only, b_only)
