"""The label files themselves (paper C.9 format, vabench.analysis.labels): what a save may hold,
which line is an annotator's judgment, and how labels find their episode across run folders."""

from __future__ import annotations

import json

import pytest

from vabench.analysis import labels as L
from vabench.analysis import load_runs
from vabench.analysis.tally import annotation_tallies
from vabench.results.layout import RunInfo
from vabench.results.outcomes import write_row

from .test_proxies import outcome

REC = "_records/m/active/own/base/grasp_single_cube/seed1_run1/attempt1/events.jsonl"


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"labels": 0}, "labels must be an object"),  # falsy wrong types are errors, never "no labels"
        ({"gates": []}, "gates must be an object"),
        ({"notes": False}, "notes must be a string"),
        ({"labels": {"TL": 1.0}}, "labels.TL"),
        ({"gates": {"error": "yes"}}, "gates.error"),
    ],
)
def test_a_wrong_type_is_refused_and_never_saved_as_an_empty_judgment(tmp_path, bad, field):
    L.append(tmp_path, {"record": REC, "annotator": "a1", "labels": {"TL": 1}})
    with pytest.raises(L.LabelError, match=field):
        L.append(tmp_path, {"record": REC, "annotator": "a1", **bad})
    assert L.latest(tmp_path).loc[0, "TL"] == 1 and len(L.read(tmp_path)) == 1


def test_the_last_line_counts_even_when_the_clock_went_back(tmp_path):
    folder = tmp_path / L.ANNOTATIONS
    folder.mkdir()
    lines = [
        {"record": REC, "annotator": "a1", "time": "2026-12-02T10:00:00+00:00", "labels": {"TL": 1}},
        {"record": REC, "annotator": "a1", "time": "2026-12-02T09:00:00+00:00", "labels": {"TL": 0}},  # clock set back
    ]
    (folder / "a1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"record": "torn')
    df = L.latest(tmp_path)
    assert len(df) == 1 and df.loc[0, "TL"] == 0 and df.loc[0, "line"] == 2
    assert df.attrs["skipped"] == 1


def test_two_runs_with_the_same_record_path_keep_their_labels_apart(tmp_path):
    """An ablation run under another run_id (here the explained observation profile) has the same
    record paths: each run folder's labels must land on that run's episode, not be merged or
    dropped as ambiguous. (A rerun of the same condition supersedes the earlier run's rows.)"""
    runs = []
    for run_id, success, tl, obs in (("first", True, 1, "paper"), ("second", False, 0, "explained")):
        run = tmp_path / run_id
        end = "success" if success else "stop"
        row = outcome(1, REC) | {"run_id": run_id, "success": success, "end_reason": end, "observation": obs}
        write_row(run / "outcomes" / "1.parquet", row | {"condition": f"{row['condition']} | {obs}"})
        RunInfo(run_id=run_id).write(run)
        for a in ("a", "b", "c"):
            L.append(run, {"record": REC, "annotator": a, "labels": {"TL": tl}})
        runs.append(run)
    tally = annotation_tallies(load_runs(*runs), *runs)
    tl = tally[tally["criterion"] == "TL"].sort_values("positives")
    assert list(tl["raters"]) == [3, 3] and list(tl["positives"]) == [0, 3]
    assert list(tl["success"]) == [False, True]  # each with its own run's checker verdict
    assert not any("left out" in n for n in tally.attrs["notes"])
