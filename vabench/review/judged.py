"""Judges beside people, for adjudication: per judge, episode and criterion, the judge's majority
label and the steps its samples cite, beside each person's label and the people's majority.

Both sides are reduced as the analysis's agreement table reduces them (``vabench.analysis.judging``:
``tallies_from_labels``, then ``episode_labels``'s gates and majority vote), so the disagreements
listed here are that table's off-diagonal confusion counts. A judge's item (one it labels 0 or 1) is:

- ``disagree``: the people label it too, and their majority differs;
- ``to label``: no person has labelled the episode, and the calibration subset
  (``_judge/calibration.csv``, ``python -m vabench.judge calibrate``) picked it;
- ``agree``: the people's majority is the judge's;
- ``judge only``: no person's label to compare (the episode is unlabelled and not in the subset, or
  the people's gate closes the criterion).

Items come in that order; within it, the calibration subset's order (the judge's least certain
first), then task, seed and criterion. Read-only: an adjudication is the person's own label, saved
as any other (``labels.append``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from vabench.analysis import labels as L
from vabench.analysis.diagnostics import episode_labels
from vabench.analysis.tally import tallies_from_labels
from vabench.core.vocab import LEFT
from vabench.results.layout import CALIBRATION, JUDGE

STATUSES = ("disagree", "to label", "agree", "judge only")
SHOWN = ["record", "model", "protocol", "task", "seed", "run_index", "criterion"]
COLUMNS = [
    "judge", *SHOWN, "judge_label", "judge_votes", "steps", "people_label", "people_votes", "people", "status", "rank",
]  # fmt: skip


def card(step: int) -> int:
    """The episode page's card (``#step-<card>``) of env step ``step``: the card of action N is N - 1
    (it shows the observation before it, the action and the recording view after it); step 0, the
    reset, is the first card."""
    return max(int(step) - 1, 0)


def calibration(root: Path) -> list[str]:
    """The records of the run's calibration subset, in its order ([] when there is none)."""
    path = Path(root) / JUDGE / CALIBRATION
    if not path.is_file():
        return []
    try:
        return list(dict.fromkeys(pd.read_csv(path, usecols=["record"])["record"].astype(str)))
    except (ValueError, pd.errors.ParserError):
        return []  # a subset file in another shape is no subset: nothing is "to label"


def _majority(lab: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    t = episode_labels(tallies_from_labels(lab, rows), "majority")
    votes = t["positives"].astype(str) + "/" + t["raters"].astype(str)
    return t.assign(votes=votes)[[*SHOWN, "label", "votes"]]


def _each(lab: pd.DataFrame, what) -> dict:
    """(record, criterion) -> [what(row, criterion)] over the annotators' rows that label it."""
    out: dict = {}
    for row in lab.to_dict(orient="records"):
        for c in L.CRITERIA:
            if row[c] is not pd.NA and row[c] is not None:
                out.setdefault((row["record"], c), []).append(what(row, c))
    return out


def _status(item: pd.Series, labelled: set, subset: set) -> str:
    if pd.notna(item["people_label"]):
        return "agree" if item["people_label"] == item["judge_label"] else "disagree"
    if item["record"] not in labelled and item["record"] in subset:
        return "to label"
    return "judge only"


def items(root: Path, rows: pd.DataFrame) -> pd.DataFrame:
    """Every judge's items in the run folder ``root`` (``rows``: its outcome table), in order (above)."""
    lab = L.latest(root) if (Path(root) / L.ANNOTATIONS).is_dir() else pd.DataFrame(columns=L.COLUMNS)
    judged = lab["annotator"].map(L.is_judge).astype(bool)
    people, out = lab[~judged], []
    th = _majority(people, rows) if len(people) else pd.DataFrame(columns=[*SHOWN, "label", "votes"])
    th = th[th["label"].notna()][["record", "criterion", "label", "votes"]]
    who = _each(people, lambda r, c: (r["annotator"], int(r[c])))
    order = calibration(root)
    rank = {r: k for k, r in enumerate(order)}
    for judge, jl in lab[judged].groupby(lab.loc[judged, "annotator"].map(L.judge_of), sort=True):
        tj = _majority(jl, rows)
        tj = tj[tj["label"].notna()].merge(th, on=["record", "criterion"], how=LEFT, suffixes=("", "_p"))
        cited = _each(jl, lambda r, c: (int(r[c]), r["steps"].get(c)))
        part = pd.DataFrame({
            "judge": judge, **{k: tj[k] for k in SHOWN}, "judge_label": tj["label"].astype(int),
            "judge_votes": tj["votes"], "people_label": tj["label_p"].astype("Int8"), "people_votes": tj["votes_p"],
        })  # fmt: skip
        keys = list(zip(part["record"], part["criterion"], strict=True))
        part["steps"] = [
            sorted({s for v, s in cited.get(k, []) if v == lab_ and s is not None})
            for k, lab_ in zip(keys, part["judge_label"], strict=True)
        ]
        part["people"] = [dict(who.get(k, [])) for k in keys]
        out.append(part)
    frame = pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=COLUMNS)
    labelled, subset = set(people["record"]), set(order)
    frame["status"] = [_status(x, labelled, subset) for _, x in frame.iterrows()]
    frame["rank"] = frame["record"].map(rank).astype("Int64")
    sort = frame.assign(
        _s=frame["status"].map(STATUSES.index), _c=frame["criterion"].map(L.CRITERIA.index)
    ).sort_values(["_s", "rank", "task", "seed", "run_index", "record", "_c", "judge"], kind="stable",
                  na_position="last")  # fmt: skip
    return sort[COLUMNS].reset_index(drop=True)


def _jsonable(item: dict) -> dict:
    def clean(v):
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            return None
        return v.item() if hasattr(v, "item") else v

    out = {k: clean(v) for k, v in item.items() if k not in ("steps", "people")}
    out["steps"] = [{"step": int(s), "card": card(s)} for s in item["steps"]]
    out["people"] = {k: int(v) for k, v in item["people"].items()}
    return out


def listing(frame: pd.DataFrame, status: str = "", judge: str = "", offset: int = 0, limit: int = 100) -> dict:
    """One page of the items (of one status and judge, when given) with the counts per status."""
    keep = frame
    if judge:
        keep = keep[keep["judge"] == judge]
    counts = {s: int((keep["status"] == s).sum()) for s in STATUSES}
    if status:
        keep = keep[keep["status"] == status]
    part = keep.iloc[offset : offset + limit]
    return {
        "counts": counts,
        "shown": len(keep),
        "offset": offset,
        "limit": limit,
        "judges": sorted(set(frame["judge"])),
        "items": [_jsonable(x) for x in part.to_dict(orient="records")],
    }


def of_record(frame: pd.DataFrame, record: str) -> list[dict]:
    """Every judge's items of one episode (the episode page's panel shows them beside its criteria)."""
    return [_jsonable(x) for x in frame[frame["record"] == record].to_dict(orient="records")]
