"""The run folder's one reader and writer (vabench.results.layout): the run info round-trips, an old
one (fewer keys, or keys this code does not know) still reads, and an unreadable one is named."""

from __future__ import annotations

import json

import pytest

from vabench.core.errors import VabenchError
from vabench.results.layout import RUN_INFO, RunInfo, UnreadableRunInfo, read_run_info


def test_the_run_info_round_trips_in_the_files_key_order(tmp_path):
    info = RunInfo(run_id="r", experiment="e", config={"recording": {"fps": 3}}, written_at="2026-01-02T03:04:05+0000")
    info.write(tmp_path)
    data = json.loads((tmp_path / RUN_INFO).read_text())
    assert list(data)[:3] == ["run_id", "experiment", "config"] and "rescored_from" not in data
    assert RunInfo.read(tmp_path) == info and info.fps == 3.0
    assert not list(tmp_path.glob(".*.tmp"))  # written through a temp file, renamed


def test_an_old_run_info_reads_and_keeps_the_keys_this_code_does_not_know(tmp_path):
    old = {"run_id": "old", "config": {}, "git": "abc123", "written_at": "2025-01-01T00:00:00"}  # no provenance yet
    (tmp_path / RUN_INFO).write_text(json.dumps(old))
    info = RunInfo.read(tmp_path)
    assert (info.run_id, info.provenance, info.interventions, info.other) == ("old", None, [], {"git": "abc123"})
    assert info.fps is None
    info.write(tmp_path)
    assert json.loads((tmp_path / RUN_INFO).read_text())["git"] == "abc123"  # written back


@pytest.mark.parametrize(
    ("text", "says"),
    [("{torn", "not readable JSON"), ("[1, 2]", "not a run's info"), ('{"config": {}}', "not a run's info")],
)
def test_an_unreadable_run_info_is_a_vabench_error_naming_the_file(tmp_path, text, says):
    (tmp_path / RUN_INFO).write_text(text)
    with pytest.raises(UnreadableRunInfo, match=says) as caught:
        RunInfo.read(tmp_path)
    assert isinstance(caught.value, VabenchError) and str(tmp_path / RUN_INFO) in str(caught.value)
    assert read_run_info(tmp_path) is None and read_run_info(tmp_path / "absent") is None
