"""Demonstration-summary sources (own | none | shared:<model>) per model, on the tasks and runs
every source has: pooled success and delta vs own (Table 6), per task (Table 18) and as
macro-averages (Table 17). Shared rules: ``common``."""

from __future__ import annotations

import pandas as pd

from vabench.core.paper import PAPER_COUNTS
from vabench.core.vocab import SummaryKind, Track, summary_mode

from ..load import exclusion_note, privileged_note, reused, summary_note
from .common import (
    NAN,
    SUBSETS,
    _coverage,
    _family_rates,
    _finish,
    _judged,
    _macro,
    _pct,
    _pooled,
    _pooled_by,
    _scope,
)


# ---------------------------------------------------------------------------- Tables 6, 17 and 18
def _source_order(sources) -> list[str]:
    return sorted(set(sources), key=lambda s: (s != SummaryKind.OWN, s != SummaryKind.NONE, s))


def _shared_by(source: str) -> str | None:
    """The author of a ``shared:<model>`` source (None for own, none or an unreadable label)."""
    try:
        return summary_mode(source).source
    except ValueError:
        return None


def _authors(j: pd.DataFrame) -> dict[str, str | None]:
    """``shared:<x>`` -> the evaluated model that wrote it: the model named x, or the model whose
    own-summary rows record x as their summary_model."""
    out = {}
    own = j[j["summary_source"] == SummaryKind.OWN]
    for src in (s for s in j["summary_source"].unique() if _shared_by(s)):
        x = _shared_by(src)
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
    shared = _source_order(s for s in j["summary_source"].unique() if s != SummaryKind.OWN)
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
        for s in [SummaryKind.OWN, *shared]:
            rows = g[g["summary_source"] == s]
            filled = False
            if rows.empty and authors.get(s) == model and SummaryKind.OWN in present:
                rows, filled = g[g["summary_source"] == SummaryKind.OWN], True
            if not rows.empty:
                blocks[s] = (rows, filled)
        yield model, protocol, sorted(tasks), sorted(runs), blocks, authors


def summary_sources(df: pd.DataFrame, per_task: bool = False) -> pd.DataFrame:
    """Tables 6 and 18: success under each summary source (own | none | shared:<model>), base track.

    ``per_task=False`` (Table 6): per evaluated model and source, pooled success over the matched
    tasks, own rate, delta = source - own; ``avg`` rows average the rate over all models and the
    delta over models other than the source's author (``author`` marks that cell).
    ``per_task=True`` (Table 18): one rate per model, source and task, plus ``mean`` rows."""
    rows, task_rows, notes = reused("summary_sources", df, lambda: _sources(df))
    notes, task_rows = list(notes), list(task_rows)  # shared with the other layout: extended here, not changed
    cols = ["model", "protocol", "source", "tasks", "runs", "k", "n", "rate_pct", "own_pct", "delta_pp", "author"]
    cols.append("from_own")
    if per_task:
        tf = pd.DataFrame(task_rows, columns=["model", "protocol", "source", "task", "k", "n", "rate_pct", "a", "f"])
        for (s, t), g in tf.groupby(["source", "task"], sort=False):
            task_rows.append(["mean", "", s, t, NAN, NAN, g["rate_pct"].mean(), False, False])
        cols = ["model", "protocol", "source", "task", "k", "n", "rate_pct", "author", "from_own"]
        title = "Per-task success (%) under each demonstration-summary source (Table 18)"
        return _finish(task_rows, cols, "summary_sources_tasks", title, notes)
    title = "Demonstration-summary sources: pooled success (%), delta = source - own (Table 6)"
    return _finish(rows, cols, "summary_sources", title, notes)


def _sources(df: pd.DataFrame) -> tuple[list, list, list[str]]:
    """The rows of Tables 6 (with the avg rows) and 18 (without the mean rows), and their notes."""
    p, notes = _scope(df, Track.BASE)
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
            by_task = _pooled_by(g, "task")  # one groupby, not a filter per task
            for t in tasks:
                kt, nt = by_task.get(t, (0, 0))
                task_rows.append([model, protocol, s, t, kt, nt, _pct(kt, nt), author, filled])
    cols = ["model", "protocol", "source", "tasks", "runs", "k", "n", "rate_pct", "own_pct", "delta_pp", "author"]
    frame = pd.DataFrame(rows, columns=[*cols, "from_own"])
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
        summary_note(p),
        *privileged_note(j["model"].unique()),
    ]
    return rows, task_rows, notes


def summary_source_macro(df: pd.DataFrame) -> pd.DataFrame:
    """Table 17: per model, macro-averages (single / dual / all, mean over matched runs) under each
    summary source, and delta = source - own in pp."""
    p, notes = _scope(df, Track.BASE)
    j = _judged(p)
    rows, cover = [], {}
    for model, protocol, _, runs, blocks, _ in _source_blocks(j, notes):
        macros = {s: _macro(_family_rates(g, [])) for s, (g, filled) in blocks.items() if not filled}
        for src, m in macros.items():
            for s in SUBSETS:
                cover.setdefault(f"{model} ({src})", {})[s] = m[s]["families"]
                own = macros["own"][s]["mean_pct"] if SummaryKind.OWN in macros else NAN
                rows.append([model, protocol, src, s, m[s]["families"], PAPER_COUNTS[s], runs, m[s]["mean_pct"]])
                rows[-1].append(m[s]["mean_pct"] - own)
    if not rows:
        notes.append("No model has judged base-track episodes under a summary source other than its own.")
    notes += _coverage(cover)
    notes += [exclusion_note(p), summary_note(p), *privileged_note(j["model"].unique())]
    cols = ["model", "protocol", "source", "subset", "families", "paper_families", "runs", "mean_pct", "delta_pp"]
    title = "Macro-average success (%) per summary source, delta = source - own (Table 17)"
    return _finish(rows, cols, "summary_source_macro", title, notes)
