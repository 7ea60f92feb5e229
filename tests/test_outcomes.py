"""The outcome row: declared once (OutcomeRow), written strictly, read back with its declared types."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pyarrow as pa
import pyarrow.parquet  # noqa: F401 (pa.parquet)
import pytest

from vabench.results.outcomes import COLUMNS, SCHEMA, SCHEMA_VERSION, OutcomeRow, read_rows, write_row

# docs/design.md, the run folder: columns may be added, never renamed or dropped
DESIGN_COLUMNS = (
    "run_id experiment condition model summary_source protocol track task base_task arms seed run_index attempt "
    "status success privileged end_reason steps budget camera_actions robot_actions invalid_actions "
    "planner_failures repairs tool_calls model_calls checkpoints_done checkpoints_total objects_placed "
    "prompt_tokens completion_tokens cost_usd wall_s prompt_version prompt_digest schema_version error record"
).split()


def test_the_schema_is_the_builder_and_keeps_the_design_columns():
    fields = dataclasses.fields(OutcomeRow)
    assert COLUMNS == ("schema_version", *(f.name for f in fields))
    assert all(SCHEMA.field(f.name).type == f.metadata["arrow"] for f in fields)
    assert set(DESIGN_COLUMNS) <= set(COLUMNS)
    assert set(OutcomeRow().row()) == set(COLUMNS) and OutcomeRow().row()["schema_version"] == SCHEMA_VERSION


def test_write_row_refuses_unknown_and_missing_columns(tmp_path):
    good = OutcomeRow(model="m", task="t", seed=3).row()
    with pytest.raises(ValueError, match=r"unknown: \['sucess'\], missing: none"):
        write_row(tmp_path / "a.parquet", {**good, "sucess": True})
    partial = {k: v for k, v in good.items() if k not in ("steps", "record")}
    with pytest.raises(ValueError, match=r"unknown: none, missing: \['steps', 'record'\]"):
        write_row(tmp_path / "b.parquet", partial)
    with pytest.raises(ValueError, match="schema_version"):
        write_row(tmp_path / "c.parquet", {**good, "schema_version": 99})
    with pytest.raises(ValueError, match="status 'done' / end_reason 'infra_error': allowed ok, infra_error"):
        write_row(tmp_path / "d.parquet", {**good, "status": "done"})
    with pytest.raises(ValueError, match="status 'ok' contradicts end_reason 'infra_error'"):
        write_row(tmp_path / "e.parquet", {**good, "status": "ok"})
    with pytest.raises(ValueError, match="status 'infra_error' contradicts end_reason 'stop'"):
        write_row(tmp_path / "f.parquet", {**good, "end_reason": "stop"})
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_rows_round_trip_with_their_declared_types(tmp_path):
    judged = OutcomeRow(
        run_id="r", model="m", protocol="active", track="base", task="t", seed=1000, success=True, status="ok",
        end_reason="success",
        steps=12, budget=50, cost_usd=None, wall_s=1.5, objects_placed=None,
    )  # fmt: skip
    infra = OutcomeRow.infra("x" * 5000, run_id="r", model="m", task="t", seed=1001, attempt=3)
    write_row(tmp_path / "outcomes" / "a.parquet", judged)
    write_row(tmp_path / "outcomes" / "b.parquet", infra.row())
    df = read_rows(tmp_path).sort_values("seed").reset_index(drop=True)
    assert list(df.columns) == list(COLUMNS)
    assert df["seed"].dtype == pd.Int64Dtype() and df["success"].dtype == pd.BooleanDtype()
    assert df["objects_placed"].isna().all() and df["cost_usd"].isna().all()
    assert (df.loc[0, "status"], bool(df.loc[0, "success"]), int(df.loc[0, "steps"])) == ("ok", True, 12)
    assert (df.loc[1, "status"], df.loc[1, "end_reason"], int(df.loc[1, "attempt"])) == (
        "infra_error",
        "infra_error",
        3,
    )
    assert len(df.loc[1, "error"]) == 2000 and not bool(df.loc[1, "success"]) and int(df.loc[1, "steps"]) == 0
    never_measured = ["budget", "model_calls", "robot_actions", "prompt_tokens", "wall_s", "compactions"]
    assert df.loc[1, never_measured].isna().all()  # an infra row adds no zeros to a mean
    assert pa.types.is_string(SCHEMA.field("error").type)


def test_a_row_written_before_the_schema_6_columns_reads_with_them_null(tmp_path):
    """Schema 6 added provenance_digest, record_digest, cache_hits and rescored_from: an older
    run folder still loads as one table with the new schema, its new columns null."""
    added = ("provenance_digest", "record_digest", "cache_hits", "rescored_from")
    old = {k: v for k, v in OutcomeRow(run_id="old", task="t", seed=1).row().items() if k not in added}
    pa.parquet.write_table(pa.Table.from_pylist([{**old, "schema_version": 5}]), tmp_path / "old.parquet")
    write_row(tmp_path / "new.parquet", OutcomeRow(run_id="new", task="t", seed=2, record_digest="ab", cache_hits=3))
    df = read_rows(tmp_path).set_index("run_id")
    assert list(df.columns) == [c for c in COLUMNS if c != "run_id"]
    assert df.loc["old", list(added)].isna().all() and df.loc["new", "cache_hits"] == 3
