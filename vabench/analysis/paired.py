"""Paired comparison of two conditions run on the same seeds (beyond the paper).

Two conditions' judged episodes form a pair when they share task, seed and run_index (and track).
Per task: the pairs, each side's successes, the discordant pairs (only A succeeded, only B
succeeded), the difference B - A in percentage points and an exact McNemar test (a two-sided
binomial test of the discordant pairs against 1/2, exact: ``stats.sign_test``). Per subset
(single-arm, dual-arm, all): the macro-average difference (equal family weight, as eq. 3) with a
cluster-bootstrap percentile interval that resamples seeds within each family, a seed carrying all
its runs' pairs (episodes of one scene are not independent), from a seeded ``numpy`` Generator.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from vabench.core.vocab import Track

from .load import NoOutcomesError, exclusion_note, privileged_note
from .stats import mcnemar_exact
from .tables.common import SUBSETS, _arms_of, _judged, _order, _scope

PAIR = ["track", "task", "seed", "run_index"]


def condition_named(name: str, conditions) -> str:
    """The condition a short name means: the full label, or words that together pick one label
    (``servo active``, ``oracle/passive``: each word a part of it, case-insensitive); ValueError
    lists the conditions when none or several match."""
    conditions = sorted(set(conditions))
    if name in conditions:
        return name
    words = _words(name)
    hits = [c for c in conditions if words and words <= _words(c)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        return _raise(f"{len(hits)} conditions match {name!r}; add a word (protocol, summary ...): {'; '.join(hits)}")
    return _raise(f"no rows of condition {name!r}; conditions: {'; '.join(conditions)}")


def _words(label: str) -> set[str]:
    return {w for w in re.split(r"[\s|/,:()]+", str(label).lower()) if w}


def _raise(message: str):
    raise NoOutcomesError(message)


def paired_outcomes(df: pd.DataFrame, a: str, b: str, track: str | None = Track.BASE) -> pd.DataFrame:
    """One row per matched pair: the pair key, ``arms``, ``ya`` and ``yb`` (1/0 success). ``a`` and
    ``b`` may be short names (:func:`condition_named`)."""
    p, _ = _scope(df, track, observation=None, look=False)
    j = _judged(p)
    a, b = condition_named(a, p["condition"]), condition_named(b, p["condition"])
    side = {c: j[j["condition"] == c].drop_duplicates(PAIR, keep="last").set_index(PAIR) for c in (a, b)}
    both = side[a].index.intersection(side[b].index)
    out = pd.DataFrame(index=both).reset_index()
    out["arms"] = side[a].loc[both, "arms"].to_numpy()
    out["ya"] = side[a].loc[both, "y"].to_numpy(dtype=float).astype(int)
    out["yb"] = side[b].loc[both, "y"].to_numpy(dtype=float).astype(int)
    out.attrs["unmatched"] = {c: len(side[c]) - len(both) for c in (a, b)}
    return out


def _bootstrap(pairs: pd.DataFrame, tasks: list[str], rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """Per task, ``n_boot`` resampled differences (fraction): seeds drawn with replacement within the
    task, each seed bringing all its pairs; returns an (n_boot, len(tasks)) array."""
    out = np.empty((n_boot, len(tasks)))
    for i, t in enumerate(tasks):
        g = pairs[pairs["task"] == t].groupby("seed")
        d = (g["yb"].sum() - g["ya"].sum()).to_numpy(dtype=float)
        m = g.size().to_numpy(dtype=float)
        idx = rng.integers(0, len(d), size=(n_boot, len(d)))
        out[:, i] = d[idx].sum(axis=1) / m[idx].sum(axis=1)
    return out


_COLUMNS = ["scope", "task", "arms", "families", "seeds", "pairs", "a_k", "b_k", "a_only", "b_only", "delta_pp"]
_COLUMNS += ["ci_low_pp", "ci_high_pp", "mcnemar_p"]


def paired_comparison(
    df: pd.DataFrame,
    a: str,
    b: str,
    track: str | None = Track.BASE,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """Condition ``b`` against condition ``a`` on their matched pairs: per task (exact McNemar) and
    per subset (macro-average difference with a seed-cluster bootstrap interval)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    p, notes = _scope(df, track, observation=None, look=False)
    a, b = condition_named(a, p["condition"]), condition_named(b, p["condition"])
    pairs = paired_outcomes(df, a, b, track)
    arms = _arms_of(p)
    tasks = _order(pairs["task"].unique(), arms)
    rng = np.random.default_rng(seed)
    boot = _bootstrap(pairs, tasks, rng, n_boot) if tasks else np.empty((n_boot, 0))
    rows = [_task_row(pairs[pairs["task"] == t], t, arms.get(t)) for t in tasks]
    rows += [_subset_row(s, rows, pairs, tasks, arms, boot, level) for s in SUBSETS]
    out = pd.DataFrame(rows, columns=_COLUMNS)
    notes += _notes(a, b, pairs.attrs["unmatched"], n_boot, seed, level, p)
    out.attrs = {
        "kind": "paired",
        "title": f"Paired difference on shared seeds: {b} vs {a}",
        "notes": [n for n in notes if n],
    }
    return out


def _task_row(x: pd.DataFrame, task: str, arms: str | None) -> list:
    """One task's pairs: successes of each side, discordant pairs, B - A (pp) and the exact McNemar p."""
    a_only, b_only = int(((x["ya"] == 1) & (x["yb"] == 0)).sum()), int(((x["ya"] == 0) & (x["yb"] == 1)).sum())
    n, ka, kb = len(x), int(x["ya"].sum()), int(x["yb"].sum())
    delta = 100.0 * (kb - ka) / n
    return ["task", task, arms, 1, x["seed"].nunique(), n, ka, kb, a_only, b_only, delta,
            math.nan, math.nan, mcnemar_exact(a_only, b_only)]  # fmt: skip


def _subset_row(subset: str, task_rows: list[list], pairs, tasks: list[str], arms: dict, boot, level: float) -> list:
    """A subset's macro-average of its tasks' differences (pp), with the bootstrap's percentile interval."""
    cols = [i for i, t in enumerate(tasks) if subset == "all" or arms.get(t) == subset]
    sub = pairs[pairs["task"].isin([tasks[i] for i in cols])]
    if not cols:
        return ["subset", subset, subset, 0, 0, 0, 0, 0, 0, 0, math.nan, math.nan, math.nan, math.nan]
    mine = [r for r in task_rows if r[1] in {tasks[i] for i in cols}]
    macro = float(np.mean([r[10] for r in mine]))
    lo, hi = np.quantile(100.0 * boot[:, cols].mean(axis=1), [(1 - level) / 2, 1 - (1 - level) / 2])
    a_only, b_only = sum(r[8] for r in mine), sum(r[9] for r in mine)
    return ["subset", subset, subset, len(cols), int(sub.groupby("task")["seed"].nunique().sum()), len(sub),
            int(sub["ya"].sum()), int(sub["yb"].sum()), a_only, b_only, macro, float(lo), float(hi),
            math.nan]  # fmt: skip


def _notes(a: str, b: str, unmatched: dict, n_boot: int, seed: int, level: float, p: pd.DataFrame) -> list:
    """What the table compares and how (None where there is nothing to say)."""
    return [
        f"A = {a}; B = {b}; delta = B - A (pp). Pairs share track, task, seed and run_index.",
        f"Judged episodes without a partner left out: A {unmatched[a]}, B {unmatched[b]}."
        if any(unmatched.values())
        else None,
        "Per task: exact McNemar p (two-sided binomial test of the discordant pairs, H0 1/2). Per subset: "
        f"macro-average of the per-task differences with a {100 * level:g}% percentile interval from {n_boot} "
        f"cluster-bootstrap resamples of seeds within each family (Generator seed {seed}).",
        exclusion_note(p),
        *privileged_note([a, b]),
    ]
