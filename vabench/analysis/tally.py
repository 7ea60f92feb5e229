"""Label input for the trajectory diagnostics (paper C.9): both forms reduce to one *tally*, one row
per (episode, criterion) with ``raters`` (0/1 judgments given), ``positives`` (of them, 1) and the
criterion's gate counts (``gate_raters``, ``gate_positives``: raters who answered the gate, and of
them yes), so aggregation and agreement (``diagnostics``, ``agreement``) are written once.

- per-annotator files ``RUN/_annotations/<annotator>.jsonl`` (:func:`annotation_tallies`; the
  latest line per annotator and record counts, ``labels.latest``), joined to judged outcome rows by
  their ``record`` column; a label left null is not counted as a judgment (nor a gate left null);
- a tally CSV (:func:`read_tallies`), the form the paper's own records survive in:
  ``model, task, arms, seed, run_index, criterion, raters, positives`` and optionally
  ``protocol`` (default active), ``summary_source`` (own), ``track`` (base), ``gate_raters`` with
  ``gate_positives`` (a row without them is applicable), and ``success`` (the checker verdict, for
  the concordance; :func:`attach_success` fills it from the run's outcome rows).

An episode is identified by ``EPISODE`` (condition, track, task, seed, run_index), the condition
label built as in the outcome rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from vabench.core.condition import condition_label
from vabench.core.errors import ConfigError, VabenchError
from vabench.core.vocab import ACTIVE, Arms, SummaryKind, Track
from vabench.results.layout import read_run_info

from . import labels as L
from .load import prepare

EPISODE = ["condition", "track", "task", "seed", "run_index"]
TALLY_REQUIRED = ("model", "task", "arms", "seed", "run_index", "criterion", "raters", "positives")
TALLY_OPTIONAL = ("protocol", "summary_source", "track", "gate_raters", "gate_positives", "success")
COLUMNS = [
    *EPISODE,
    "model",
    "protocol",
    "summary_source",
    "arms",
    "record",
    "success",
    "criterion",
    "module",
    "raters",
    "positives",
    "gate",
    "gate_raters",
    "gate_positives",
    "source",
]
MODULE_OF = {c: m for m, cs in L.MODULES.items() for c in cs}
_TRUE, _FALSE = {"true", "1", "yes", "y", "t"}, {"false", "0", "no", "n", "f"}


class TallyError(VabenchError, ValueError):
    """A tally CSV that does not follow the format; the message names the file, line and column."""


# ------------------------------------------------------------------------------------------- input
def _tally(frame: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    t = frame.reindex(columns=COLUMNS).reset_index(drop=True)
    for c in ("seed", "run_index", "raters", "positives"):
        t[c] = t[c].astype("int64")
    for c in ("gate_raters", "gate_positives"):
        t[c] = t[c].astype("Int64")
    t["success"] = t["success"].astype("boolean")
    t["record"] = t["record"].astype(object).where(t["record"].notna(), None)
    t["module"] = t["criterion"].map(MODULE_OF)
    t["gate"] = t["criterion"].map(L.GATED)
    t.attrs["notes"] = [n for n in notes if n]
    return t


def read_tallies(*paths: str | Path) -> pd.DataFrame:
    """The tally CSV(s) as one tally table; :class:`TallyError` names the file, line and column of
    the first problem (missing or unknown column, bad value, duplicate item)."""
    if not paths:
        raise TallyError("no tally CSV given")
    parts, notes = [], []
    for path in paths:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
        raw.columns = [str(c).strip() for c in raw.columns]
        part, ignored = _parse_tally(raw, str(path))
        parts.append(part)
        if ignored:
            notes.append(f"{path}: gate counts on {ignored} row(s) of ungated criteria (TL, SR, MS, MP, FG) ignored.")
    t = _tally(pd.concat(parts, ignore_index=True), notes)
    dup = t.duplicated([*EPISODE, "criterion"], keep=False)
    if dup.any():
        first = t[dup].iloc[0]
        key = ", ".join(f"{c}={first[c]}" for c in [*EPISODE, "criterion"])
        raise TallyError(f"{int(dup.sum())} duplicate tally rows (one row per episode and criterion), e.g. {key}")
    t.attrs["notes"].insert(0, f"Labels: tally CSV ({len(t)} episode-criterion items; no annotator identity).")
    return t


def _columns_text() -> str:
    return f"required: {', '.join(TALLY_REQUIRED)}; optional: {', '.join(TALLY_OPTIONAL)}"


def _parse_tally(raw: pd.DataFrame, where: str) -> tuple[pd.DataFrame, int]:
    missing = [c for c in TALLY_REQUIRED if c not in raw.columns]
    if missing:
        raise TallyError(f"{where}: missing column(s) {', '.join(missing)}; {_columns_text()}")
    unknown = [c for c in raw.columns if c not in TALLY_REQUIRED + TALLY_OPTIONAL]
    if unknown:
        raise TallyError(f"{where}: unknown column(s) {', '.join(unknown)}; {_columns_text()}")
    if ("gate_raters" in raw.columns) != ("gate_positives" in raw.columns):
        raise TallyError(f"{where}: gate_raters and gate_positives come together; {_columns_text()}")
    s = raw.apply(lambda c: c.str.strip())

    def bad(mask, col, what):
        if mask.any():
            i = int(np.flatnonzero(mask.to_numpy())[0])
            raise TallyError(f"{where} line {i + 2}: {col} {what}, got {s[col].iloc[i]!r}")

    out = pd.DataFrame({"model": s["model"], "task": s["task"], "arms": s["arms"], "criterion": s["criterion"]})
    for c in ("model", "task"):
        bad(s[c] == "", c, "must not be empty")
    bad(~s["arms"].isin([Arms.SINGLE, Arms.DUAL]), "arms", "must be single or dual")
    bad(~s["criterion"].isin(L.CRITERIA), "criterion", f"must be one of {', '.join(L.CRITERIA)}")
    for c in ("seed", "run_index", "raters", "positives", "gate_raters", "gate_positives"):
        if c not in s.columns:
            continue
        v = pd.to_numeric(s[c], errors="coerce")
        blank = (s[c] == "") & c.startswith("gate")
        bad(~blank & (v.isna() | (v % 1 != 0) | (v < 0)), c, "must be a whole number >= 0")
        out[c] = v.astype("Int64")
    bad(out["positives"] > out["raters"], "positives", f"must not exceed raters ({_columns_text()})")
    ignored = 0
    if "gate_raters" in out.columns:
        bad(out["gate_raters"].isna() != out["gate_positives"].isna(), "gate_positives", "needs gate_raters too")
        bad((out["gate_positives"] > out["gate_raters"]).fillna(False), "gate_positives", "must not exceed gate_raters")
        ungated = ~out["criterion"].isin(L.GATED.keys()) & out["gate_raters"].notna()
        ignored = int(ungated.sum())
        out.loc[ungated, ["gate_raters", "gate_positives"]] = pd.NA
    out["success"] = pd.Series(pd.NA, index=out.index, dtype="boolean")
    if "success" in s.columns:
        low = s["success"].str.lower()
        bad(~low.isin(_TRUE | _FALSE | {""}), "success", "must be true/false, 1/0 or empty")
        out["success"] = low.map(lambda x: True if x in _TRUE else False if x in _FALSE else pd.NA).astype("boolean")
    for c, default in (("protocol", ACTIVE.name), ("summary_source", SummaryKind.OWN), ("track", Track.BASE)):
        out[c] = s[c].replace("", default) if c in s.columns else default
    out["condition"] = [
        condition_label(*x) for x in zip(out["model"], out["protocol"], out["summary_source"], strict=True)
    ]
    out["source"] = "tally"
    return out, ignored


def tallies_from_labels(labels: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """The tally of per-annotator labels (``labels.latest`` rows: one per run, annotator and record),
    joined to the judged outcome rows by (run_id, record): a label file in a run folder's
    ``_annotations/`` belongs to that run (its run info), so two runs' episodes with the same
    record path stay apart; a loose label file joins by record alone where that is unambiguous.
    Labels without exactly one judged row are left out and noted; the checker verdict comes with the
    row (``success``)."""
    notes = []
    p, _ = prepare(rows)
    j = p[(p["state"] == "judged") & p["record"].notna()]
    twice = j.duplicated(["run_id", "record"], keep=False)
    if twice.any():
        notes.append(f"{j.loc[twice, 'record'].nunique()} record path(s) on more than one judged row: left out.")
        j = j[~twice]
    runs = {r: _run_id(r) for r in labels["run"].unique()} if "run" in labels else {}
    lab = labels.assign(run_id=labels["run"].map(runs) if "run" in labels else None)
    loose = lab["run_id"].isna()
    if loose.any():  # not in a run folder: the record path alone, when it names one episode
        unique = j.drop_duplicates("record", keep=False).set_index("record")["run_id"]
        lab.loc[loose, "run_id"] = lab.loc[loose, "record"].map(unique)
    info = j.set_index(["run_id", "record"])
    known = pd.MultiIndex.from_frame(lab[["run_id", "record"]].astype(object)).isin(info.index)
    if (~known).any():
        notes.append(
            f"Labels of {lab.loc[~known, 'record'].nunique()} record(s) without a judged outcome row left out."
        )
    lab = lab[known]
    g = lab.groupby(["run_id", "record"], sort=True)
    parts = []
    for c in L.CRITERIA:
        part = pd.DataFrame({"raters": g[c].count(), "positives": g[c].sum().astype("int64")})
        if c in L.GATED:
            col = f"gate_{L.GATED[c]}"
            part["gate_raters"], part["gate_positives"] = g[col].count(), g[col].sum().astype("int64")
        parts.append(part.assign(criterion=c))
    t = pd.concat(parts).reset_index() if parts and len(lab) else pd.DataFrame(columns=COLUMNS)
    if len(t):
        keys = pd.MultiIndex.from_frame(t[["run_id", "record"]])
        ep = info.loc[keys, [*EPISODE, "model", "protocol", "summary_source", "arms", "y"]]
        t = pd.concat([t.drop(columns="run_id").reset_index(drop=True), ep.reset_index(drop=True)], axis=1)
        t["success"] = t["y"].map({1.0: True, 0.0: False}).astype("boolean")
        t["source"] = "annotations"
    annotators = lab["annotator"].nunique()
    episodes = len(lab.drop_duplicates(["run_id", "record"]))
    notes.insert(0, f"Labels: {annotators} annotator(s) on {episodes} episode(s) (latest save counts).")
    return _tally(t, notes)


def _run_id(run: str) -> str | None:
    """The run_id of a run folder (its run info), or None for "" or a folder without one."""
    info = read_run_info(Path(run)) if run else None
    return str(info.run_id) if info else None


LABELLERS = ("both", "human", "judge")  # whose labels a tally counts: people's, judges' (labels.is_judge), or both


def annotation_tallies(rows: pd.DataFrame, *sources: str | Path, who: str = "both") -> pd.DataFrame:
    """The tally of the label files under ``sources`` (run folders, ``_annotations`` folders or
    files; see ``labels.files``) joined to ``rows`` (``load_runs``); ``who`` keeps people's labels,
    judges' or both (:data:`LABELLERS`). A line that breaks the format is named, file and line."""
    if who not in LABELLERS:
        raise ConfigError(f"'labels' must be one of {', '.join(LABELLERS)}, not {who!r}")
    lab = L.latest(*sources)
    if who != "both":
        lab = lab[lab["annotator"].map(L.is_judge) == (who == "judge")]
    t = tallies_from_labels(lab, rows)
    if lab.attrs.get("skipped"):
        t.attrs["notes"].append(f"{lab.attrs['skipped']} invalid or torn label line(s) skipped.")
    t.attrs["notes"] += [f"Invalid label line left out: {where}" for where in lab.attrs.get("invalid", [])]
    return t


def attach_success(tally: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """Fill ``success`` of tally items that lack it from judged outcome rows of the same episode
    (condition, track, task, seed, run_index): a tally CSV joined to the run it annotates."""
    p, _ = prepare(rows)
    j = p[p["state"] == "judged"].drop_duplicates(EPISODE, keep=False)
    verdict = j.set_index(EPISODE)["y"].map({1.0: True, 0.0: False})
    t = tally.copy()
    found = pd.Series(list(zip(*(t[c] for c in EPISODE), strict=True)), index=t.index).map(verdict.to_dict())
    t["success"] = t["success"].fillna(found.astype("boolean"))
    t.attrs = {"notes": list(tally.attrs.get("notes", []))}
    return t


def combine_tallies(*tallies: pd.DataFrame) -> pd.DataFrame:
    """Several tallies as one (their notes kept); an item present twice is an error."""
    parts = [t for t in tallies if t is not None]
    notes = [n for t in parts for n in t.attrs.get("notes", [])]
    t = _tally(pd.concat(parts, ignore_index=True), notes) if parts else _tally(pd.DataFrame(columns=COLUMNS), [])
    dup = t.duplicated([*EPISODE, "criterion"])
    if dup.any():
        raise TallyError(f"{int(dup.sum())} episode-criterion item(s) labelled in more than one input")
    return t
