"""The paper's tables as tidy pandas DataFrames, computed from outcome rows only.

Every function takes the rows (``load_runs``) and returns one DataFrame: numeric columns (rates in
percent, ``*_pct``; differences in percentage points, ``delta_pp``), and ``frame.attrs`` with
``kind`` (which formatter renders it), ``title`` and ``notes`` (family coverage against the
paper's 11/3/14, excluded infra_error rows, matched runs, privileged rows). ``report`` renders
them as Markdown and CSV.

Rules shared by all tables (paper line numbers refer to shared/reference/va-bench-paper.txt):
- an episode counts only when judged: status ``infra_error`` rows are excluded from every rate and
  reported (DESIGN.md: "episode could not be judged; excluded, retried"); stops and budget
  exhaustion are failures (paper l.146);
- a per-family rate is k/n over judged episodes; a macro-average gives every family present equal
  weight (eq. 3, l.289-291); run-level macro-averages are summarised by mean and sample SD (l.293);
- a controlled comparison (active vs passive, held-out vs base, summary sources) compares like
  with like: the reference side is restricted to the runs and families the other side has.
"""

from __future__ import annotations

import math

import pandas as pd

from .load import (
    PAPER_COUNTS,
    PAPER_MATCHED_TRANSFER,
    PAPER_OBJECTS_PER_EPISODE,
    exclusion_note,
    prepare,
    privileged_note,
)
from .stats import mean_sd, sign_test, wilson_interval

SUBSETS = ("single", "dual", "all")
SUBSET_NAMES = {"single": "single-arm", "dual": "dual-arm", "all": "all"}
NAN = math.nan


# ----------------------------------------------------------------------------------------------- helpers
def _finish(rows, columns, kind: str, title: str, notes) -> pd.DataFrame:
    rows = [[", ".join(map(str, v)) if isinstance(v, list) else v for v in r] for r in rows]
    frame = pd.DataFrame(rows, columns=columns)
    frame.attrs = {"kind": kind, "title": title, "notes": [n for n in notes if n]}
    return frame


def _scope(df: pd.DataFrame, track: str | None) -> tuple[pd.DataFrame, list[str]]:
    p, notes = prepare(df)
    if track is not None:
        p = p[p["track"] == track]
    return p, notes


def _judged(p: pd.DataFrame) -> pd.DataFrame:
    return p[p["state"] == "judged"]


def _arms_of(p: pd.DataFrame, family: str = "task") -> dict[str, str]:
    known = p[p["arms"].notna()]
    return {t: a.mode().iloc[0] for t, a in known.groupby(family)["arms"]}


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


def _empty_cells(empty: list[tuple[str, str]]) -> str:
    by: dict[str, list[str]] = {}
    for c, t in empty:
        by.setdefault(c, []).append(t)
    return "; ".join(f"{c}: {', '.join(ts) if len(ts) <= 3 else f'{len(ts)} tasks'}" for c, ts in by.items())


# ------------------------------------------------------------------------------------ Tables 7-9 (+ 3)
def success_matrix(df: pd.DataFrame, track: str | None = "base") -> pd.DataFrame:
    """Tables 7-9: task x condition. Per cell: mean and sample SD across runs of the per-run
    success rate (%), the number of runs, pooled k/n with its rate and 95% Wilson interval, and
    the infra_error rows excluded. A cell with no judged episode is NaN (k = n = 0), never 0."""
    p, notes = _scope(df, track)
    j = _judged(p)
    arms = _arms_of(p)
    tasks = _order(p["task"].unique(), arms)
    conds = sorted(p["condition"].unique())
    cells = dict(list(j.groupby(["condition", "task"])))
    infra = p[p["state"] == "infra_error"].groupby(["condition", "task"]).size()
    rows, empty, one_run = [], [], False
    for c in conds:
        for t in tasks:
            g = cells.get((c, t))
            per_run = (g.groupby("run_index")["y"].mean() * 100) if g is not None else pd.Series(dtype=float)
            k, n = _pooled(g) if g is not None else (0, 0)
            mean, sd = mean_sd(per_run.values)
            lo, hi = wilson_interval(k, n)
            if n == 0:
                empty.append((c, t))
            one_run |= len(per_run) == 1
            rows.append(
                [
                    c,
                    t,
                    arms.get(t),
                    len(per_run),
                    mean,
                    sd,
                    k,
                    n,
                    _pct(k, n),
                    100 * lo,
                    100 * hi,
                    int(infra.get((c, t), 0)),
                ]
            )
    counts = {s: sum(1 for t in tasks if s == "all" or arms.get(t) == s) for s in SUBSETS}
    notes += [
        f"Tasks present: {counts['all']} ({counts['single']} single-arm, {counts['dual']} dual-arm) of the paper's "
        f"{PAPER_COUNTS['all']} ({PAPER_COUNTS['single']} + {PAPER_COUNTS['dual']})."
        if counts["all"] < PAPER_COUNTS["all"]
        else None,
        f"No judged episode (NaN, not 0): {_empty_cells(empty)}." if empty else None,
        "SD is NaN where a cell has one run." if one_run else None,
        exclusion_note(p),
        *privileged_note(conds),
    ]
    cols = ["condition", "task", "arms", "runs", "mean_pct", "sd_pct", "k", "n", "rate_pct"]
    cols += ["ci_low_pct", "ci_high_pct", "excluded"]
    title = "Per-task success (%): mean ± sample SD across runs; pooled k/n with 95% Wilson interval (Tables 7-9)"
    return _finish(rows, cols, "success_matrix", title, notes)


# ------------------------------------------------------------------------------------- Table 3, eq. 3
def macro_averages(df: pd.DataFrame, track: str | None = "base") -> pd.DataFrame:
    """Table 3 / eq. 3: per condition and run, the single-arm, dual-arm and all-family macro-average
    of per-family success rates (families present); then mean and sample SD across runs (NaN with
    one run). ``families`` is the count covered, ``paper_families`` the paper's 11 / 3 / 14."""
    p, notes = _scope(df, track)
    j = _judged(p)
    rates = _family_rates(j, ["condition"])
    rows, cover, short = [], {}, []
    for c in sorted(p["condition"].unique()):
        m = _macro(rates[rates["condition"] == c])
        pc = p[p["condition"] == c]
        for s in SUBSETS:
            x = m[s]
            cover.setdefault(c, {})[s] = x["families"]
            excluded = int((_in_subset(pc, s)["state"] == "infra_error").sum())
            rows.append(
                [c, s, x["families"], PAPER_COUNTS[s], x["runs"], x["mean_pct"], x["sd_pct"], x["per_run"], excluded]
            )
            if x["short_runs"]:
                short.append(f"{c} ({SUBSET_NAMES[s]}): run(s) {x['short_runs']} cover fewer families")
    notes += _coverage(cover)
    notes += [
        f"Runs covering fewer families than their condition: {'; '.join(short)}." if short else None,
        "SD is the sample SD of run-level macro-averages (NaN with one run); it measures run-to-run variation.",
        exclusion_note(p),
        *privileged_note(p["condition"].unique()),
    ]
    cols = ["condition", "subset", "families", "paper_families", "runs", "mean_pct", "sd_pct", "per_run", "excluded"]
    title = "Macro-average success (%) per condition: mean ± sample SD across runs (Table 3, eq. 3)"
    return _finish(rows, cols, "macro_averages", title, notes)


# ----------------------------------------------------------------------------------- Tables 4 and 10
def active_passive(df: pd.DataFrame, per_task: bool = False) -> pd.DataFrame:
    """Tables 4 and 10: active vs passive camera protocol per (model, summary source), base track,
    on matched runs and on families judged under both protocols.

    ``per_task=False`` (Table 4): per subset, pooled k/n and rate for each protocol,
    delta = passive - active (pp), and a two-sided sign test over the subset's families (p = 0.5
    on the non-tied families; ``ties`` counts the families left out). ``per_task=True`` (Table 10):
    one row per family with its direction."""
    p, notes = _scope(df, "base")
    j = _judged(p)
    rows_t, rows_s, cover = [], [], {}
    for (model, source), g in j.groupby(["model", "summary_source"]):
        a, ps = g[g["protocol"] == "active"], g[g["protocol"] == "passive"]
        if a.empty or ps.empty:
            continue
        runs = sorted(set(a["run_index"]) & set(ps["run_index"]))
        notes.append(
            _runs_note(
                f"{model} ({source})",
                {"active": sorted(set(a["run_index"])), "passive": sorted(set(ps["run_index"]))},
                runs,
            )
        )
        if not runs:
            continue
        a, ps = a[a["run_index"].isin(runs)], ps[ps["run_index"].isin(runs)]
        fams = set(a["task"]) & set(ps["task"])
        dropped = (set(a["task"]) | set(ps["task"])) - fams
        if dropped:
            notes.append(f"{model} ({source}): left out, judged under one protocol only: {', '.join(sorted(dropped))}.")
        arms = _arms_of(g)
        fam_rows = []
        for t in _order(fams, arms):
            ka, na = _pooled(a[a["task"] == t])
            kp, np_ = _pooled(ps[ps["task"] == t])
            ra, rp = _pct(ka, na), _pct(kp, np_)
            direction = "tie" if ra == rp else ("passive worse" if rp < ra else "passive better")
            fam_rows.append([model, source, arms.get(t), t, ka, na, ra, kp, np_, rp, rp - ra, direction])
        rows_t += fam_rows
        fr = pd.DataFrame(fam_rows, columns=["m", "s", "arms", "task", "ka", "na", "ra", "kp", "np", "rp", "d", "dir"])
        for s in SUBSETS:
            sub = _in_subset(fr, s)
            ka, na, kp, np_ = (int(sub[c].sum()) for c in ("ka", "na", "kp", "np"))
            worse, better = int((sub["dir"] == "passive worse").sum()), int((sub["dir"] == "passive better").sum())
            ties = int((sub["dir"] == "tie").sum())
            cover.setdefault(f"{model} ({source})", {})[s] = len(sub)
            rows_s.append(
                [model, source, s, len(sub), PAPER_COUNTS[s], runs, ka, na, _pct(ka, na), kp, np_, _pct(kp, np_)]
                + [_pct(kp, np_) - _pct(ka, na), worse, better, ties, sign_test(worse, better)]
            )
    if not rows_s:
        notes.append("No model has judged base-track episodes under both the active and the passive protocol.")
    notes += _coverage(cover, "total and sign test")
    notes += [
        "Delta = passive - active (pp). Sign test: two-sided binomial test (p = 0.5) over the non-tied families "
        "(paper l.215); a family is tied when both protocols have the same success rate.",
        exclusion_note(p),
        *privileged_note(j["model"].unique()),
    ]
    common = ["active_k", "active_n", "active_pct", "passive_k", "passive_n", "passive_pct", "delta_pp"]
    if per_task:
        cols = ["model", "summary_source", "arms", "task", *common, "direction"]
        title = "Active vs passive per family: successes / judged episodes (Table 10)"
        return _finish(rows_t, cols, "active_passive_tasks", title, notes)
    cols = ["model", "summary_source", "subset", "families", "paper_families", "runs", *common]
    cols += ["passive_worse", "passive_better", "ties", "sign_p"]
    title = "Active vs passive camera protocol: pooled success, delta = passive - active, sign test (Table 4)"
    return _finish(rows_s, cols, "active_passive", title, notes)


# ----------------------------------------------------------------------------------- Tables 5 and 15
def heldout_vs_base(df: pd.DataFrame) -> pd.DataFrame:
    """Tables 5 and 15: held-out (transfer track) vs base on matched families, per condition.

    A transfer row maps to its family through ``base_task``; base rows are restricted to the
    transfer rows' run(s). Rows with scope ``family`` give both rates and delta = held-out - base;
    the ``average`` row averages the matched families' rates (equal weight) and its delta."""
    p, notes = prepare(df)
    p = p[p["track"].isin(["base", "transfer"])]
    j = _judged(p)
    t_all, b_all = j[j["track"] == "transfer"], j[j["track"] == "base"]
    unmapped = t_all["base_task"].isna()
    if unmapped.any():
        notes.append(f"{int(unmapped.sum())} transfer row(s) without base_task could not be matched and were left out.")
    t_all = t_all[~unmapped]
    rows, fewest = [], PAPER_MATCHED_TRANSFER
    for c in sorted(t_all["condition"].unique()):
        t = t_all[t_all["condition"] == c]
        runs = sorted(set(t["run_index"]))
        b_cond = b_all[b_all["condition"] == c]
        b = b_cond[b_cond["run_index"].isin(runs)]
        notes.append(_runs_note(c, {"held-out": runs, "base": sorted(set(b_cond["run_index"]))}, runs))
        fams = sorted(set(t["base_task"]) & set(b["task"]))
        missing = sorted(set(t["base_task"]) - set(b["task"]))
        if missing:
            notes.append(f"{c}: no matched base episodes for {', '.join(missing)}; left out.")
        fewest = min(fewest, len(fams))
        base_rates, held_rates = [], []
        for f in fams:
            kb, nb = _pooled(b[b["task"] == f])
            kh, nh = _pooled(t[t["base_task"] == f])
            base_rates.append(_pct(kb, nb))
            held_rates.append(_pct(kh, nh))
            rows.append([c, "family", f, 1, runs, kb, nb, base_rates[-1], kh, nh, held_rates[-1]])
        if fams:
            mb, mh = sum(base_rates) / len(fams), sum(held_rates) / len(fams)
            rows.append([c, "average", "(average)", len(fams), runs, NAN, NAN, mb, NAN, NAN, mh])
    for r in rows:
        r.append(r[10] - r[7])
    if not rows:
        notes.append("No condition has judged episodes on both the transfer and the base track.")
    if rows and fewest < PAPER_MATCHED_TRANSFER:
        notes.append(f"Fewer matched families than the paper's {PAPER_MATCHED_TRANSFER}: the average covers {fewest}+.")
    notes += [exclusion_note(p), *privileged_note(p["condition"].unique())]
    cols = ["condition", "scope", "family", "families", "runs", "base_k", "base_n", "base_pct"]
    cols += ["heldout_k", "heldout_n", "heldout_pct", "delta_pp"]
    title = "Held-out transfer vs base on matched families (%), delta = held-out - base (Tables 5, 15)"
    return _finish(rows, cols, "heldout_vs_base", title, notes)


# ------------------------------------------------------------------------------ Table 5 (long horizon)
def long_horizon(df: pd.DataFrame, objects_per_episode: int = PAPER_OBJECTS_PER_EPISODE) -> pd.DataFrame:
    """Table 5 "Long": per condition and task on the long_horizon track, objects placed out of
    ``objects_per_episode`` x judged episodes, mean objects per episode, strict success k/n."""
    p, notes = _scope(df, "long_horizon")
    j = _judged(p)
    rows = []
    for (c, t), g in j.groupby(["condition", "task"]):
        placed = pd.to_numeric(g["objects_placed"], errors="coerce")
        if placed.isna().any():
            notes.append(
                f"{c} / {t}: {int(placed.isna().sum())} judged episode(s) without objects_placed, counted as 0."
            )
        placed = placed.fillna(0)
        n = len(g)
        k = int(g["y"].sum())
        total, possible = int(placed.sum()), objects_per_episode * n
        rows.append([c, t, n, total, possible, _pct(total, possible), total / n, k, _pct(k, n)])
    if not rows:
        notes.append("No judged long-horizon episodes.")
    notes += [exclusion_note(p), *privileged_note(p["condition"].unique())]
    cols = ["condition", "task", "episodes", "objects_placed", "objects_possible", "placed_pct"]
    cols += ["mean_placed", "successes", "success_pct"]
    title = "Long-horizon composition: objects placed / possible and strict success (Table 5)"
    return _finish(rows, cols, "long_horizon", title, notes)


# ---------------------------------------------------------------------------- Tables 6, 17 and 18
def _source_order(sources) -> list[str]:
    return sorted(set(sources), key=lambda s: (s != "own", s != "none", s))


def _authors(j: pd.DataFrame) -> dict[str, str | None]:
    """``shared:<x>`` -> the evaluated model that wrote it: the model named x, or the model whose
    own-summary rows record x as their summary_model."""
    out = {}
    own = j[j["summary_source"] == "own"]
    for src in (s for s in j["summary_source"].unique() if s.startswith("shared:")):
        x = src.split(":", 1)[1].strip()
        named = j.loc[j["model_raw"] == x, "model"].unique()
        wrote = own.loc[own["summary_model"] == x, "model"].unique()
        found = named if len(named) else wrote
        out[src] = found[0] if len(found) == 1 else None
    return out


def _source_blocks(j: pd.DataFrame, notes: list[str]):
    """Per (model, protocol) with a summary source besides ``own``: its rows by source, restricted to
    the tasks and runs every present source has; a summary author without rows under its own
    shared source gets its own-summary rows there (the paper's "by construction")."""
    authors = _authors(j)
    for src, who in authors.items():
        if who is None:
            notes.append(f"{src}: its author is not among the evaluated models; no author exclusion applied.")
    shared = _source_order(s for s in j["summary_source"].unique() if s != "own")
    for (model, protocol), g in j.groupby(["model", "protocol"]):
        present = set(g["summary_source"])
        if len(present) < 2:  # nothing to compare (own only, or one control without its own run)
            continue
        tasks = set.intersection(*(set(g.loc[g["summary_source"] == s, "task"]) for s in present))
        runs = set.intersection(*(set(g.loc[g["summary_source"] == s, "run_index"]) for s in present))
        dropped = set(g["task"]) - tasks
        if dropped:
            named = ", ".join(sorted(dropped)) if len(dropped) <= 3 else f"{len(dropped)} tasks"
            notes.append(f"{model}: tasks not run under every summary source left out: {named}.")
        if set(g["run_index"]) - runs:
            notes.append(f"{model}: compared on the run(s) every source has: {sorted(runs)}.")
        g = g[g["task"].isin(tasks) & g["run_index"].isin(runs)]
        blocks = {}
        for s in ["own", *shared]:
            rows = g[g["summary_source"] == s]
            filled = False
            if rows.empty and authors.get(s) == model and "own" in present:
                rows, filled = g[g["summary_source"] == "own"], True
            if not rows.empty:
                blocks[s] = (rows, filled)
        yield model, protocol, sorted(tasks), sorted(runs), blocks, authors


def summary_sources(df: pd.DataFrame, per_task: bool = False) -> pd.DataFrame:
    """Tables 6 and 18: success under each summary source (own | none | shared:<model>), base track.

    ``per_task=False`` (Table 6): per evaluated model and source, pooled success over the matched
    tasks, own rate, delta = source - own; ``avg`` rows average the rate over all models and the
    delta over models other than the source's author (``author`` marks that cell).
    ``per_task=True`` (Table 18): one rate per model, source and task, plus ``mean`` rows."""
    p, notes = _scope(df, "base")
    j = _judged(p)
    rows, task_rows, task_sets = [], [], set()
    for model, protocol, tasks, runs, blocks, authors in _source_blocks(j, notes):
        task_sets.add(len(tasks))
        own = blocks.get("own")
        own_pct = _pct(*_pooled(own[0])) if own else NAN
        for s, (g, filled) in blocks.items():
            k, n = _pooled(g)
            author = authors.get(s) == model
            rows.append([model, protocol, s, len(tasks), runs, k, n, _pct(k, n), own_pct, _pct(k, n) - own_pct, author])
            rows[-1].append(filled)
            for t in tasks:
                kt, nt = _pooled(g[g["task"] == t])
                task_rows.append([model, protocol, s, t, kt, nt, _pct(kt, nt), author, filled])
    cols = ["model", "protocol", "source", "tasks", "runs", "k", "n", "rate_pct", "own_pct", "delta_pp", "author"]
    cols.append("from_own")
    frame = pd.DataFrame(rows, columns=cols)
    for s in _source_order(frame["source"]) if len(frame) else []:
        f = frame[frame["source"] == s]
        others = f[~f["author"]]
        rows.append(
            ["avg", "", s, NAN, [], NAN, NAN, f["rate_pct"].mean(), f["own_pct"].mean(), others["delta_pp"].mean()]
            + [False, False]
        )
    if not rows:
        notes.append("No model has judged base-track episodes under a summary source other than its own.")
    if task_sets and min(task_sets) < 3:
        notes.append(f"Fewer tasks than the paper's three: rates pool over {min(task_sets)}+ task(s).")
    notes += [
        "Delta = source - own (pp). avg: rates average all models; delta averages the models other than the "
        "source's author, whose own-summary cell is its own run (paper l.246).",
        "Cells marked author with from_own reuse the author's own-summary episodes."
        if any(r[-1] for r in rows)
        else None,
        exclusion_note(p),
        *privileged_note(j["model"].unique()),
    ]
    if per_task:
        tf = pd.DataFrame(task_rows, columns=["model", "protocol", "source", "task", "k", "n", "rate_pct", "a", "f"])
        for (s, t), g in tf.groupby(["source", "task"], sort=False):
            task_rows.append(["mean", "", s, t, NAN, NAN, g["rate_pct"].mean(), False, False])
        cols = ["model", "protocol", "source", "task", "k", "n", "rate_pct", "author", "from_own"]
        title = "Per-task success (%) under each demonstration-summary source (Table 18)"
        return _finish(task_rows, cols, "summary_sources_tasks", title, notes)
    title = "Demonstration-summary sources: pooled success (%), delta = source - own (Table 6)"
    return _finish(rows, cols, "summary_sources", title, notes)


def summary_source_macro(df: pd.DataFrame) -> pd.DataFrame:
    """Table 17: per model, macro-averages (single / dual / all, mean over matched runs) under each
    summary source, and delta = source - own in pp."""
    p, notes = _scope(df, "base")
    j = _judged(p)
    rows, cover = [], {}
    for model, protocol, _, runs, blocks, _ in _source_blocks(j, notes):
        macros = {s: _macro(_family_rates(g, [])) for s, (g, filled) in blocks.items() if not filled}
        for src, m in macros.items():
            for s in SUBSETS:
                cover.setdefault(f"{model} ({src})", {})[s] = m[s]["families"]
                own = macros["own"][s]["mean_pct"] if "own" in macros else NAN
                rows.append([model, protocol, src, s, m[s]["families"], PAPER_COUNTS[s], runs, m[s]["mean_pct"]])
                rows[-1].append(m[s]["mean_pct"] - own)
    if not rows:
        notes.append("No model has judged base-track episodes under a summary source other than its own.")
    notes += _coverage(cover)
    notes += [exclusion_note(p), *privileged_note(j["model"].unique())]
    cols = ["model", "protocol", "source", "subset", "families", "paper_families", "runs", "mean_pct", "delta_pp"]
    title = "Macro-average success (%) per summary source, delta = source - own (Table 17)"
    return _finish(rows, cols, "summary_source_macro", title, notes)


# ----------------------------------------------------------------------------------- Tables 19 and 20
def local_models(df: pd.DataFrame, models=None, per_task: bool = False) -> pd.DataFrame:
    """Tables 19 and 20: success count / judged episodes and rate per condition for single-arm,
    dual-arm and all families (base track), with the summary's author. ``models`` restricts to
    those model names (None: every model). ``per_task=True`` gives the per-task rates (Table 20)."""
    p, notes = _scope(df, "base")
    if models is not None:
        wanted = {str(m) for m in models}
        p = p[p["model_raw"].isin(wanted) | p["model"].isin(wanted)]
        if p.empty:
            notes.append(f"No rows for model(s): {', '.join(sorted(wanted))}.")
    j = _judged(p)
    arms = _arms_of(p)
    rows, task_rows, cover = [], [], {}
    for c in sorted(p["condition"].unique()):
        pc, g = p[p["condition"] == c], j[j["condition"] == c]
        summary = _summary_label(pc)
        for s in SUBSETS:
            sub = _in_subset(g, s)
            k, n = _pooled(sub)
            fams = sub["task"].nunique()
            cover.setdefault(c, {})[s] = fams
            excluded = int((_in_subset(pc, s)["state"] == "infra_error").sum())
            rows.append([c, summary, s, fams, PAPER_COUNTS[s], k, n, _pct(k, n), excluded])
        for t in _order(pc["task"].unique(), arms):
            k, n = _pooled(g[g["task"] == t])
            task_rows.append([c, summary, arms.get(t), t, k, n, _pct(k, n)])
    notes += _coverage(cover, "count")
    notes += [
        "Entries pool judged episodes: the denominators are the judged episodes present (paper: 220 / 60 / 280).",
        exclusion_note(p),
        *privileged_note(p["condition"].unique()),
    ]
    if per_task:
        cols = ["condition", "summary", "arms", "task", "k", "n", "rate_pct"]
        title = "Per-task success rates (%) (Table 20)"
        return _finish(task_rows, cols, "local_models_tasks", title, notes)
    cols = ["condition", "summary", "subset", "families", "paper_families", "k", "n", "rate_pct", "excluded"]
    title = "Success count / judged episodes and rate per subset (Table 19)"
    return _finish(rows, cols, "local_models", title, notes)


def _summary_label(pc: pd.DataFrame) -> str:
    models = sorted(set(pc["summary_model"].dropna()))
    if models:
        return ", ".join(models)
    return ", ".join(sorted(set(pc["summary_source"])))


# ------------------------------------------------------------------------------------------- eq. 12
def checkpoint_progress(df: pd.DataFrame, track: str | None = "base", run_index: int | None = None) -> pd.DataFrame:
    """Eq. 12: subtask progress as a checkpoint micro-average, sum(checkpoints_done) /
    sum(checkpoints_total) over judged episodes, per condition and task and per subset.

    A judged episode reporting no checkpoint count (it ended before its first action) is scored
    with its task's checkpoint count and its done count (0), so every episode weighs its checkpoints.
    ``run_index`` restricts to one run (the paper uses one annotated run)."""
    p, notes = _scope(df, track)
    if run_index is not None:
        p = p[p["run_index"] == run_index]
    j = _judged(p).copy()
    done = pd.to_numeric(j["checkpoints_done"], errors="coerce").fillna(0)
    total = pd.to_numeric(j["checkpoints_total"], errors="coerce").fillna(0)
    per_task = total.groupby(j["task"]).max()
    gap = total <= 0
    if gap.any():
        notes.append(
            f"{int(gap.sum())} judged episode(s) reported no checkpoint count; scored with their task's count."
        )
        total = total.where(~gap, j["task"].map(per_task).fillna(0))
    j["done"], j["total"] = done, total
    unscored = sorted(per_task[per_task <= 0].index)
    if unscored:
        notes.append(f"No checkpoint counts at all for: {', '.join(unscored)}; left out.")
    j = j[j["total"] > 0]
    arms = _arms_of(p)
    rows, cover = [], {}
    for c in sorted(j["condition"].unique()):
        g = j[j["condition"] == c]
        for t in _order(g["task"].unique(), arms):
            x = g[g["task"] == t]
            rows.append([c, "task", t, arms.get(t), 1, len(x), int(x["done"].sum()), int(x["total"].sum())])
        for s in SUBSETS:
            x = _in_subset(g, s)
            cover.setdefault(c, {})[s] = x["task"].nunique()
            rows.append([c, "subset", s, s, x["task"].nunique(), len(x), int(x["done"].sum()), int(x["total"].sum())])
    for r in rows:
        r.append(_pct(r[6], r[7]))
    if not rows:
        notes.append("No judged episodes with checkpoints.")
    notes += _coverage(cover, "micro-average")
    notes += [
        "Progress = sum of checkpoints done / sum of checkpoints scored (micro-average, eq. 12): weighted by "
        "checkpoint, not by family; not an upper bound on success.",
        f"Run {run_index} only." if run_index is not None else "All runs pooled.",
        exclusion_note(p),
        *privileged_note(p["condition"].unique()),
    ]
    cols = ["condition", "scope", "task", "arms", "families", "episodes", "done", "total", "progress_pct"]
    title = "Subtask progress (%): checkpoint micro-average (eq. 12)"
    return _finish(rows, cols, "checkpoint_progress", title, notes)


# ------------------------------------------------------------------------------------------- infra
def infra_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Rows left out of every rate, per condition, track and task (only where some were), and a
    total row: infra_error rows, how many of them were retried and judged (recovered), episodes
    never judged, other unjudged rows, superseded attempts, judged rows from a retry (attempt > 1:
    the driver overwrites an infra_error file with its retry), and the most common error."""
    p, notes = prepare(df)
    rows = []
    for (c, tr, t), g in p.groupby(["condition", "track", "task"]):
        row = _infra_row(c, tr, t, g)
        if row[4] or row[7] or row[8] or row[9]:
            rows.append(row)
    rows.append(_infra_row("total", "", "", p))
    notes += [
        "An infra_error episode could not be judged: it is excluded from every rate and never counted as a "
        "failure (DESIGN.md); the driver retries it as a new attempt.",
        *privileged_note(p["condition"].unique()),
    ]
    cols = ["condition", "track", "task", "rows", "infra_error", "recovered", "never_judged", "unjudged"]
    cols += ["superseded", "judged_after_retry", "judged", "top_error"]
    title = "Rows excluded from the rates (infra_error and unjudged)"
    return _finish(rows, cols, "infra_summary", title, notes)


def _infra_row(c, tr, t, g: pd.DataFrame) -> list:
    infra = g[g["state"] == "infra_error"]
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
        top,
    ]
