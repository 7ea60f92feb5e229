"""The outcome row: declared once (OutcomeRow), written strictly, read back with its declared types."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pyarrow as pa
import pytest

from vabench.outcomes import COLUMNS, SCHEMA, SCHEMA_VERSION, OutcomeRow, read_rows, write_row
from vabench.vocab import END_REASONS


def test_the_schema_is_the_builder():
    fields = dataclasses.fields(OutcomeRow)
    assert COLUMNS == ("schema_version", *(f.name for f in fields))
    assert all(SCHEMA.field(f.name).type == f.metadata["arrow"] for f in fields)
    assert set(OutcomeRow().row()) == set(COLUMNS) and OutcomeRow().row()["schema_version"] == SCHEMA_VERSION
    assert set(END_REASONS) >= {"success", "stop", "budget", "infra_error"}


def test_write_row_refuses_unknown_and_missing_columns(tmp_path):
    good = OutcomeRow(model="m", task="t", seed=3).row()
    with pytest.raises(ValueError, match=r"unknown: \['sucess'\], missing: none"):
        write_row(tmp_path / "a.parquet", {**good, "sucess": True})
    partial = {k: v for k, v in good.items() if k not in ("steps", "record")}
    with pytest.raises(ValueError, match=r"unknown: none, missing: \['steps', 'record'\]"):
        write_row(tmp_path / "b.parquet", partial)
    with pytest.raises(ValueError, match="schema_version"):
        write_row(tmp_path / "c.parquet", {**good, "schema_version": 99})
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_rows_round_trip_with_their_declared_types(tmp_path):
    judged = OutcomeRow(
        run_id="r", model="m", protocol="active", track="base", task="t", seed=1000, success=True, end_reason="success",
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
    assert len(df.loc[1, "error"]) == 2000 and not bool(df.loc[1, "success"])
    assert pa.types.is_string(SCHEMA.field("error").type)
