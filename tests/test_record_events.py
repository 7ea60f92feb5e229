"""Typed record events (vabench.results.recordfile.FIELDS): every event kind has one dataclass, a call that
leaves out a field or adds an unknown one fails before anything is written, and the written line is
what it always was (the fields in the order given), so existing records keep their digests."""

from __future__ import annotations

import dataclasses
import json

import pytest

from vabench.results.outcomes import COLUMNS, OutcomeRow
from vabench.results.recordfile import FIELDS, Event, read_events
from vabench.results.records import EpisodeRecord


def test_every_event_kind_has_its_fields_declared():
    assert set(FIELDS) == set(Event)
    for kind, cls in FIELDS.items():
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, kind
    assert [f.name for f in dataclasses.fields(FIELDS[Event.RESULT])] == list(COLUMNS)  # the outcome row


def test_a_missing_or_unknown_field_is_refused_before_the_line_is_written(tmp_path):
    record = EpisodeRecord(tmp_path)
    with pytest.raises(TypeError, match="a stop event: .*missing 1 required keyword-only argument: 'reason'"):
        record.event(Event.STOP, step=3)
    with pytest.raises(TypeError, match="a crash event: .*unexpected keyword argument 'traceback'"):
        record.event(Event.CRASH, error="e", traceback="t")
    with pytest.raises(ValueError, match="'replied' is not a valid Event"):
        record.event("replied", step=1)
    record.close()
    assert (tmp_path / "events.jsonl").read_text() == ""


def test_the_line_is_the_fields_in_the_order_given_and_optional_ones_stay_absent(tmp_path):
    record = EpisodeRecord(tmp_path)
    record.event(Event.MODEL_ERROR, step=2, error="boom")  # the crash form: no permanent, attempts, backoff
    record.event(Event.STOP, reason="done", step=4)
    record.event(Event.RESULT, **OutcomeRow(steps=4).row())
    record.close()
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    first, second = json.loads(lines[0]), json.loads(lines[1])
    assert list(first) == ["seq", "time", "type", "step", "error"] and first["type"] == Event.MODEL_ERROR
    assert lines[1] == json.dumps({"seq": 2, "time": second["time"], "type": "stop", "reason": "done", "step": 4})
    assert read_events(tmp_path / "events.jsonl")[-1]["steps"] == 4
