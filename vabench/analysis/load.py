"""Reading outcome rows and the one normalisation every table starts from.

``load_runs`` reads run folders (``vabench.results.outcometable.load``: each run's outcome table) and
refuses an empty result with a clear message. ``prepare`` gives each row a ``state``: ``judged`` (counted in rates),
``infra_error`` (the episode could not be judged: excluded from every rate, never a failure),
``unjudged`` (no status/success to count: excluded) or ``superseded`` (an earlier attempt of an
episode that has a later judged row). Privileged rows (the offline oracle) get a visible
``(privileged)`` suffix on their model and condition labels, so no output can pass them off as a
model score.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import pandas as pd

from vabench.core.condition import KEYS, Condition, default, rule
from vabench.core.errors import VabenchError
from vabench.core.vocab import Arms, Status, Track
from vabench.results.layout import RUN_INFO, read_run_info
from vabench.results.outcomes import COLUMNS
from vabench.results.outcometable import gather, to_pandas

PRIVILEGED = " (privileged)"
PRIVILEGED_NOTE = (
    "(privileged) marks the offline oracle, which reads simulator state: a reference, never a model score."
)
# one episode, whatever its attempt: a later judged attempt replaces an earlier one
EPISODE_KEY = ["experiment", "condition", "track", "task", "seed", "run_index"]
# rows before schema 11 (no budget_scale column) said a policy's budget in its model: ``policy`` was
# played at 10x the task's budget, ``policy-budget-x0.1`` at 0.1x
OLD_POLICY, OLD_POLICY_SCALE = "policy", 10.0
OLD_BUDGET_NAME = r"^(?P<model>.+)-budget-x(?P<scale>[0-9.]+)$"
_STRINGS = [
    "run_id",
    "experiment",
    "condition",
    "model",
    "summary_source",
    "summary_model",
    "protocol",
    "track",
    "task",
    "base_task",
    "arms",
    "status",
    "end_reason",
    "error",
    "operator",
]


class NoOutcomesError(VabenchError, ValueError):
    """No outcome rows where the caller pointed (an empty or missing run folder)."""


def load_runs(*folders: str | Path) -> pd.DataFrame:
    """Every outcome row under the given run folders (recursively), one row per episode file.

    Raises NoOutcomesError, with the folders in the message, when a folder is missing or no row is
    found: an analysis of nothing is a mistake worth saying so, not an empty table."""
    if not folders:
        raise NoOutcomesError("no run folder given")
    missing = [str(f) for f in folders if not Path(f).is_dir()]
    if missing:
        raise NoOutcomesError(f"not a folder: {', '.join(missing)}")
    got = gather(*folders)  # through each run's outcome table; unreadable files are named in a note
    rows = to_pandas(got.rows)
    rows.attrs["unreadable"] = [(Path(path), why) for path, why in got.unreadable + got.set_aside]
    _split_of_old_rows(rows, folders)
    if rows.empty:
        where = ", ".join(str(f) for f in folders)
        raise NoOutcomesError(
            f"no outcome rows (*.parquet) under {where}; point at a run folder that holds episode "
            "outcomes (its outcomes/ subfolder is written as episodes finish)"
        )
    return rows


def _split_of_old_rows(rows: pd.DataFrame, folders) -> None:
    """Rows before schema 13 name no split; their run's info does (a ``split=train`` run's rows
    must not read as scored ones)."""
    if rows.empty or "run_id" not in rows or ("split" in rows and rows["split"].notna().all()):
        return
    runs = {p.parent for f in folders for p in Path(f).rglob(RUN_INFO)} | {Path(f) for f in folders}
    splits = {info.run_id: info.split for info in map(read_run_info, runs) if info is not None}
    known = rows["run_id"].map(splits)
    rows["split"] = known if "split" not in rows else rows["split"].where(rows["split"].notna(), known)


def _strings(s: pd.Series) -> pd.Series:
    s = s.astype(object)
    return s.where(s.notna() & (s != ""), None)


_REUSE: ContextVar[list | None] = ContextVar("vabench_prepare_reuse", default=None)


@contextmanager
def prepared_once(df: pd.DataFrame):
    """Within the block, :func:`prepare` normalises ``df`` once and gives each caller its own
    shallow copy (pandas copy-on-write keeps their changes apart): a report's dozen tables share
    the work instead of repeating it on every row."""
    token = _REUSE.set([df, None, {}])
    try:
        yield
    finally:
        _REUSE.reset(token)


def reused(key: str, df: pd.DataFrame, make):
    """``make()`` once per key within :func:`prepared_once` over ``df`` (a table printed in two
    layouts, such as Tables 4 and 10, computes its rows once); outside it, every call computes."""
    memo = _REUSE.get()
    if memo is None or memo[0] is not df:
        return make()
    if key not in memo[2]:
        memo[2][key] = make()
    return memo[2][key]


def prepare(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """A normalised copy of outcome rows plus notes on what was assumed (see :func:`_prepare`)."""
    memo = _REUSE.get()
    if memo is None or memo[0] is not df:
        return _prepare(df)
    if memo[1] is None:
        memo[1] = _prepare(df)
    p, notes = memo[1]
    return p.copy(deep=False), list(notes)


def _prepare(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """A normalised copy of outcome rows plus notes on what was assumed.

    Adds ``state`` (judged | infra_error | unjudged | superseded), ``y`` (1.0/0.0 success for judged
    rows), ``model_raw`` (the model name as written), and ``recovered`` (an infra_error row whose
    episode was later judged). Works on hand-built frames with only some columns. Each step reads
    the columns the steps before it made, and adds its notes in that order."""
    notes: list[str] = [
        f"unreadable outcome file {path} ({why}) left out; rerunning its run_id runs the episode again."
        for path, why in df.attrs.get("unreadable", [])
    ]
    p = _every_column(df)
    _fill_defaults(p, notes)
    _label_conditions(p)
    _operators_as_runs(p, notes)
    _judge(p, notes)
    _supersede_earlier_attempts(p, notes)
    _note_episodes_of_two_experiments(p, notes)
    _mark_recovered(p)
    _assign_arms(p, notes)
    return p, notes


def _every_column(df: pd.DataFrame) -> pd.DataFrame:
    """A copy with every outcome column (missing ones empty), plain object strings and a fresh index."""
    p = df.copy()
    for c in COLUMNS:
        if c not in p.columns:
            p[c] = None
    for c in p.columns:  # Arrow-backed strings (pandas 3) make every row filter of the tables 3x slower
        if isinstance(p[c].dtype, pd.StringDtype):
            p[c] = p[c].astype(object).where(p[c].notna(), None)
    p = p.reset_index(drop=True)
    for c in _STRINGS:
        p[c] = _strings(p[c])
    return p


def _fill_defaults(p: pd.DataFrame, notes: list[str]) -> None:
    """What older or hand-built rows leave out: the base track, "?" names, prompts v1, and each
    condition key's paper value (vabench.core.condition.KEYS; a key whose ``fill`` rule is False stays
    empty), a policy's budget scale from its old model name."""
    if p["track"].isna().any():
        notes.append(f"{int(p['track'].isna().sum())} row(s) had no track; read as base.")
        p["track"] = p["track"].fillna(Track.BASE)
    p["base_task"] = p["base_task"].where(p["base_task"].notna() | (p["track"] != Track.BASE), p["task"])
    for c in ("model", "protocol", "summary_source", "task"):
        p[c] = p[c].fillna("?")
    _mark_prompts_v1(p, notes)
    _budget_of_old_names(p, notes)
    for k in KEYS:
        if rule(k, "fill", True):
            p[k] = p[k].fillna(default(k))


def _budget_of_old_names(p: pd.DataFrame, notes: list[str]) -> None:
    """Rows before schema 11 of a policy: its budget scale from the model name (:data:`OLD_POLICY`),
    the model plain and the label made again, so they pool with the rows of today."""
    old = p["budget_scale"].isna()
    named = p.loc[old, "model"].astype(str).str.extract(OLD_BUDGET_NAME)
    scale = pd.to_numeric(named["scale"], errors="coerce")
    scale = scale.where(scale.notna() | (p.loc[old, "model"] != OLD_POLICY), OLD_POLICY_SCALE)
    found = scale.dropna().index
    if found.empty:
        return
    p.loc[found, "budget_scale"] = scale[found]
    p.loc[found, "model"] = named.loc[found, "model"].fillna(OLD_POLICY)
    p.loc[found, "condition"] = None  # labelled again from the columns (_label_conditions)
    notes.append(
        f"{len(found)} policy row(s) written before the budget_scale column: their budget scale read from the "
        f"model name ('{OLD_POLICY}': {OLD_POLICY_SCALE:g}x; '{OLD_POLICY}-budget-x<scale>'), their model "
        f"'{OLD_POLICY}', their label made again."
    )


def _mark_prompts_v1(p: pd.DataFrame, notes: list[str]) -> None:
    """Rows from before observation profiles form their own conditions."""
    old = p["observation"].isna() & (p["prompt_version"] == "vabench-prompts-v1")
    if old.any():  # before observation profiles the model also saw the budget, reasons and earlier images
        notes.append(
            f"{int(old.sum())} row(s) predate observation profiles (prompts v1: the model also saw the budget, the "
            "env's reason texts, the table height and up to 4 images); they form their own conditions "
            "('| observation prompts-v1') and stay out of the paper's comparisons."
        )
        p.loc[old, "observation"] = "prompts-v1"
        p.loc[old & p["condition"].notna(), "condition"] = (
            p.loc[old & p["condition"].notna(), "condition"] + " | observation prompts-v1"
        )


def _label_conditions(p: pd.DataFrame) -> None:
    """A condition label for rows without one, whole-number run and attempt, and the visible
    privileged suffix on model and condition (``model_raw`` keeps the name as written)."""
    no_cond = p["condition"].isna()
    rows = p.loc[no_cond, list(Condition.__dataclass_fields__)].to_dict("records")
    p.loc[no_cond, "condition"] = [Condition.of_row(r).label for r in rows]
    for c in ("run_index", "attempt"):
        p[c] = pd.to_numeric(p[c], errors="coerce").fillna(1).astype(int)
    p["seed"] = pd.to_numeric(p["seed"], errors="coerce").astype("Int64")
    p["privileged"] = p["privileged"].astype("boolean").fillna(False).astype(bool)
    p["model_raw"] = p["model"]
    priv = p["privileged"]
    p.loc[priv, "model"] = p.loc[priv, "model"] + PRIVILEGED
    p.loc[priv, "condition"] = p.loc[priv, "condition"] + PRIVILEGED


def _operators_as_runs(p: pd.DataFrame, notes: list[str]) -> None:
    """Rows people played (model=human: an ``operator``) take their operator as their run: each
    operator's episodes are one run of the condition, as a model's repetitions are, so every table's
    per-run rates and spread are across operators. With ``runs`` > 1 each (operator, repetition) is
    a run. ``run_index_played`` keeps the repetition as written."""
    p["run_index_played"] = p["run_index"]
    played = p["operator"].notna()
    if not played.any():
        return
    names = sorted(set(p.loc[played, "operator"]))
    order = p.loc[played, "operator"].map({n: i for i, n in enumerate(names, 1)})
    p.loc[played, "run_index"] = (p.loc[played, "run_index"] - 1) * len(names) + order
    notes.append(
        f"{int(played.sum())} row(s) played by {len(names)} operator(s) ({', '.join(names)}): each operator's "
        "episodes are one run (run_index), as a model's repetitions are."
    )


def _judge(p: pd.DataFrame, notes: list[str]) -> None:
    """Each row's ``state`` and, for judged rows, ``y``."""
    success = p["success"].astype("boolean")
    infra = p["status"] == Status.INFRA_ERROR
    judged = ~infra & (p["status"].isna() | (p["status"] == Status.OK)) & success.notna()
    p["state"] = "unjudged"
    p.loc[judged, "state"] = "judged"
    p.loc[infra, "state"] = Status.INFRA_ERROR
    p["y"] = success.astype("Float64").astype(float).where(judged)
    unjudged = p["state"] == "unjudged"
    if unjudged.any():
        notes.append(
            f"{int(unjudged.sum())} row(s) with neither status 'ok' nor 'infra_error', or without success, "
            "were excluded from every rate."
        )


def _supersede_earlier_attempts(p: pd.DataFrame, notes: list[str]) -> None:
    """One judged row per episode: the latest attempt wins."""
    order = p.sort_values("attempt", kind="stable").index
    dup = p.loc[order].loc[lambda x: x["state"] == "judged"].duplicated(EPISODE_KEY, keep="last")
    dup_idx = dup[dup].index
    if len(dup_idx):
        p.loc[dup_idx, "state"] = "superseded"
        notes.append(f"{len(dup_idx)} judged row(s) superseded by a later attempt of the same episode.")


def _note_episodes_of_two_experiments(p: pd.DataFrame, notes: list[str]) -> None:
    """Judged rows of different experiments on the same condition and episode are all counted: say so."""
    same = ["condition", "track", "task", "seed", "run_index"]
    judged_rows = p[p["state"] == "judged"]
    twice = judged_rows.duplicated(same, keep=False)
    if twice.any():
        names = ", ".join(sorted(map(str, set(judged_rows.loc[twice, "experiment"]))))
        notes.append(
            f"{int(twice.sum())} judged rows share condition, track, task, seed and run with a row of another "
            f"experiment ({names}) and are all counted; filter by experiment to avoid counting an episode twice."
        )


def _mark_recovered(p: pd.DataFrame) -> None:
    """``recovered``: an infra_error row whose episode has a judged row."""
    judged_keys = set(map(tuple, p.loc[p["state"] == "judged", EPISODE_KEY].astype(object).values.tolist()))
    keys = map(tuple, p[EPISODE_KEY].astype(object).values.tolist())
    p["recovered"] = [s == Status.INFRA_ERROR and k in judged_keys for s, k in zip(p["state"], keys, strict=True)]


def _assign_arms(p: pd.DataFrame, notes: list[str]) -> None:
    """A task's arms from its judged rows (an infra row may predate the scene reset)."""
    arms = _arms_map(p)
    p["arms"] = p["task"].map(arms).where(p["task"].isin(arms.keys()), p["arms"])
    no_arms = (p["state"] == "judged") & ~p["arms"].isin(list(Arms))
    if no_arms.any():
        tasks = ", ".join(sorted(set(p.loc[no_arms, "task"])))
        notes.append(f"No single/dual arms for task(s) {tasks}: counted in 'all' only.")


def _arms_map(p: pd.DataFrame) -> dict[str, str]:
    out: dict[str, str] = {}
    for source in (p[p["state"] != "judged"], p[p["state"] == "judged"]):  # judged rows win
        known = source[source["arms"].notna()]
        for task, arms in known.groupby("task")["arms"]:
            out[task] = arms.mode().iloc[0]
    return out


def exclusion_note(p: pd.DataFrame) -> str:
    """How many rows in this table's scope were left out of its rates, and why."""
    infra = p["state"] == Status.INFRA_ERROR
    n, rec = int(infra.sum()), int((infra & p["recovered"]).sum())
    text = f"infra_error rows excluded from every rate (never counted as failures): {n}"
    if n:
        text += f" ({rec} retried and judged later, {n - rec} never judged)"
    other = int((p["state"] == "unjudged").sum())
    if other:
        text += f"; rows without a judged outcome excluded: {other}"
    return text + "."


def summary_note(p: pd.DataFrame) -> str | None:
    """Judged episodes that ran without the summary their condition names (``summary_learned``
    false: the model's learning ended without one), per cell: they are counted in their condition's
    rates, so a reader must see where a condition is not what its label says."""
    lacking = p[(p["state"] == "judged") & p["summary_learned"].astype("boolean").eq(False).fillna(False)]
    if lacking.empty:
        return None
    judged = p[p["state"] == "judged"].groupby(["condition", "task"]).size()
    cells = []
    for c, g in lacking.groupby("condition", sort=True):
        tasks = ", ".join(f"{t} {len(x)}/{judged[(c, t)]}" for t, x in g.groupby("task", sort=True))
        cells.append(f"{c}: {tasks}")
    return (
        f"Judged episodes that ran without the summary their condition names (summary_learned false; counted "
        f"in the rates): {len(lacking)} ({'; '.join(cells)})."
    )


def privileged_note(labels) -> list[str]:
    return [PRIVILEGED_NOTE] if any(PRIVILEGED in str(x) for x in labels) else []
