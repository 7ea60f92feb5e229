"""The helpers shared by every table family, and the rules they all follow.

Every table function takes the outcome rows (``load_runs``) and returns one DataFrame: numeric
columns (rates in percent, ``*_pct``; differences in percentage points, ``delta_pp``), and
``frame.attrs`` with ``kind`` (which formatter renders it), ``title`` and ``notes`` (family coverage
against the paper's 11/3/14, excluded infra_error rows, matched runs, privileged rows, episodes run
without the summary their condition names). ``report`` renders them as Markdown and CSV.

Rules shared by all tables (paper line numbers refer to shared/reference/va-bench-paper.txt):
- an episode counts only when judged: status ``infra_error`` rows are excluded from every rate and
  reported (docs/design.md: "episode could not be judged; excluded, retried"); stops and budget
  exhaustion are failures (paper l.146);
- a per-family rate is k/n over judged episodes; a macro-average gives every family present equal
  weight (eq. 3, l.289-291); run-level macro-averages are summarised by mean and sample SD (l.293);
- a controlled comparison (active vs passive, held-out vs base, summary sources) compares like
  with like: the reference side is restricted to the runs and families the other side has.
"""

from __future__ import annotations

import math

import pandas as pd

from vabench.core.condition import KEYS
from vabench.core.paper import PAPER_COUNTS
from vabench.core.vocab import Arms, ObservationProfile, Perturbation, Robot

from ..load import prepare
from ..stats import mean_sd, sign_test

SUBSETS = (Arms.SINGLE, Arms.DUAL, "all")
SUBSET_NAMES = {"single": "single-arm", "dual": "dual-arm", "all": "all"}
NAN = math.nan
# what the rate tables and their notes read (identity, the normalised state and y, and the columns of
# ``exclusion_note``/``summary_note``): a table filters its rows dozens of times, and each filter copies
# every column it carries, so a table carries these (and its ``extra``) instead of the row's 55+
RATE_COLUMNS = ("experiment", "condition", "model", "model_raw", "summary_source", "summary_model")
RATE_COLUMNS += ("summary_learned", "protocol", "track", "task", "base_task", "arms", "seed")
RATE_COLUMNS += ("run_index", "state", "y", "recovered", *KEYS)  # and every condition key (vabench.core.condition)


# ----------------------------------------------------------------------------------------------- helpers
def _finish(rows, columns, kind: str, title: str, notes) -> pd.DataFrame:
    rows = [[", ".join(map(str, v)) if isinstance(v, list) else v for v in r] for r in rows]
    frame = pd.DataFrame(rows, columns=columns)
    frame.attrs = {"kind": kind, "title": title, "notes": [n for n in notes if n]}
    return frame


def _scope(
    df: pd.DataFrame,
    track: str | None,
    observation: str | None = ObservationProfile.PAPER,
    extra: tuple = (),
    look: bool = True,
) -> tuple[pd.DataFrame, list[str]]:
    """Rows of one track (None: all) and one observation profile (None: all), with the columns
    ``RATE_COLUMNS`` and ``extra`` only. The paper's tables compare ``paper`` rows only, so an
    ablation's ``explained`` rows never pool into them (tables per condition keep both: the profile
    is part of the condition label). ``look``: the Panda, unperturbed, only (other robots and
    perturbations have their own tables)."""
    p, notes = prepare(df)
    if look:
        other = (p["robot"] != Robot.PANDA) | (p["perturbation"] != Perturbation.NONE)
        if other.any():
            notes.append(
                f"{int(other.sum())} row(s) of another robot or under a visual perturbation left out: see the "
                "embodiments and robustness tables."
            )
        p = p[~other]
    p = p[list(dict.fromkeys(c for c in (*RATE_COLUMNS, *extra) if c in p.columns))]
    if track is not None:
        p = p[p["track"] == track]
    if observation is not None:
        other = p["observation"] != observation
        if other.any():
            kinds = ", ".join(sorted(set(p.loc[other, "observation"])))
            notes.append(
                f"{int(other.sum())} row(s) of another observation profile ({kinds}) left out: see feedback_ablation."
            )
        p = p[~other]
    return p, notes


def _judged(p: pd.DataFrame) -> pd.DataFrame:
    return p[p["state"] == "judged"]


def _arms_of(p: pd.DataFrame, family: str = "task") -> dict[str, str]:
    """Each family's most frequent arms (ties: the first in sort order, as ``Series.mode``)."""
    counts = p[p["arms"].notna()].groupby([family, "arms"]).size().reset_index(name="n")
    top = counts.sort_values(["n", "arms"], ascending=[False, True], kind="stable").drop_duplicates(family)
    return dict(zip(top[family], top["arms"], strict=True))


def _order(tasks, arms: dict[str, str]) -> list[str]:
    rank = {"single": 0, "dual": 1}
    return sorted(set(tasks), key=lambda t: (rank.get(arms.get(t), 2), t))


def _in_subset(frame: pd.DataFrame, subset: str) -> pd.DataFrame:
    return frame if subset == "all" else frame[frame["arms"] == subset]


def _pct(k, n) -> float:
    return 100.0 * k / n if n else NAN


def _coverage(cover: dict[str, dict[str, int]], what: str = "macro-average") -> list[str]:
    """One note naming every label whose family counts fall below the paper's 11 / 3 / 14."""
    groups: dict[str, list[str]] = {}
    for label, c in cover.items():
        if any(c.get(s, 0) < PAPER_COUNTS[s] for s in SUBSETS):
            groups.setdefault("/".join(str(c.get(s, 0)) for s in SUBSETS), []).append(str(label))
    if not groups:
        return []
    ref = "/".join(str(PAPER_COUNTS[s]) for s in SUBSETS)
    parts = "; ".join(f"{k} for {', '.join(v)}" for k, v in groups.items())
    return [
        f"Fewer families than the paper's {ref} (single/dual/all): {parts}. Each {what} covers the families present."
    ]


def _runs_note(name: str, have: dict[str, list[int]], used: list[int]) -> str | None:
    if all(sorted(v) == used for v in have.values()):
        return None
    sides = ", ".join(f"{side} runs {v}" for side, v in have.items())
    return f"{name}: {sides}; compared on matched run(s) {used}."


def _family_rates(j: pd.DataFrame, by: list[str], family: str = "task") -> pd.DataFrame:
    """One row per (by..., run_index, family): k, n, rate (fraction) over judged episodes."""
    cols = [*by, "run_index", family]
    if j.empty:
        return pd.DataFrame(columns=[*cols, "arms", "k", "n", "rate"])
    g = j.groupby(cols, dropna=False).agg(k=("y", "sum"), n=("y", "size"), arms=("arms", "first")).reset_index()
    g["rate"] = g["k"] / g["n"]
    return g


def _macro(fr: pd.DataFrame, family: str = "task") -> dict[str, dict]:
    """Per subset: macro-average per run (equal family weight), then mean and sample SD across runs."""
    out = {}
    for s in SUBSETS:
        sub = _in_subset(fr, s)
        per_run = sub.groupby("run_index")["rate"].mean() * 100
        fams_per_run = sub.groupby("run_index")[family].nunique()
        mean, sd = mean_sd(per_run.values)
        out[s] = {
            "families": int(sub[family].nunique()),
            "runs": int(len(per_run)),
            "mean_pct": mean,
            "sd_pct": sd,
            "per_run": "; ".join(f"r{r}: {v:.2f}" for r, v in per_run.items()),
            "short_runs": [int(r) for r, f in fams_per_run.items() if f < sub[family].nunique()],
        }
    return out


def _pooled(frame: pd.DataFrame) -> tuple[int, int]:
    return int(frame["y"].sum()), int(len(frame))


def _pooled_by(frame: pd.DataFrame, by) -> dict:
    """``_pooled`` of each group at once (one groupby, not a filter per group): key -> (k, n)."""
    g = frame.groupby(by, sort=False)["y"].agg(["sum", "size"])
    return {key: (int(k), int(n)) for key, k, n in zip(g.index, g["sum"], g["size"], strict=True)}


def _empty_cells(empty: list[tuple[str, str]]) -> str:
    by: dict[str, list[str]] = {}
    for c, t in empty:
        by.setdefault(c, []).append(t)
    return "; ".join(f"{c}: {', '.join(ts) if len(ts) <= 3 else f'{len(ts)} tasks'}" for c, ts in by.items())


def _paired(g: pd.DataFrame, a: pd.DataFrame, b: pd.DataFrame, sides: tuple[str, str], what: str, name: str, notes):
    """One controlled comparison (side a vs side b of ``g``) on matched runs and on the families both
    sides judged: per-family pooled k/n and delta = b - a (pp), or None when no run is matched. Notes
    the matched runs and the families left out."""
    runs = sorted(set(a["run_index"]) & set(b["run_index"]))
    notes.append(_runs_note(name, {sides[0]: sorted(set(a["run_index"])), sides[1]: sorted(set(b["run_index"]))}, runs))
    if not runs:
        return None
    a, b = a[a["run_index"].isin(runs)], b[b["run_index"].isin(runs)]
    fams = set(a["task"]) & set(b["task"])
    dropped = (set(a["task"]) | set(b["task"])) - fams
    if dropped:
        notes.append(f"{name}: left out, judged under one {what} only: {', '.join(sorted(dropped))}.")
    arms = _arms_of(g)
    ca, cb = _pooled_by(a, "task"), _pooled_by(b, "task")
    rows = []
    for t in _order(fams, arms):
        (ka, na), (kb, nb) = ca[t], cb[t]
        rows.append([arms.get(t), t, ka, na, _pct(ka, na), kb, nb, _pct(kb, nb), _pct(kb, nb) - _pct(ka, na)])
    return pd.DataFrame(rows, columns=["arms", "task", "ka", "na", "ra", "kb", "nb", "rb", "d"]), runs


def _paired_subsets(fr: pd.DataFrame):
    """Per subset of a ``_paired`` frame: (subset, families, ka, na, kb, nb, b_worse, b_better, ties, sign-test p)."""
    for s in SUBSETS:
        sub = _in_subset(fr, s)
        ka, na, kb, nb = (int(sub[c].sum()) for c in ("ka", "na", "kb", "nb"))
        worse, better, ties = int((sub["d"] < 0).sum()), int((sub["d"] > 0).sum()), int((sub["d"] == 0).sum())
        yield s, len(sub), ka, na, kb, nb, worse, better, ties, sign_test(worse, better)
