"""The outcome table: one row per episode (DESIGN.md), one Parquet file per episode.

The schema is fixed here and every file is written with it, so a column is never silently
dropped or retyped when a directory of files is read as one table (pyarrow infers a dataset's
schema from the first file it finds). Columns may be added (nullable), never renamed; bump
``SCHEMA_VERSION`` when adding. This module depends on pyarrow and pandas only: the simulator
side writes rows, the analysis side reads them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

SCHEMA_VERSION = 1
SCHEMA = pa.schema(
    [
        ("schema_version", pa.int64()),
        ("run_id", pa.string()),
        ("experiment", pa.string()),
        ("condition", pa.string()),  # model | protocol | summary source
        ("model", pa.string()),
        ("summary_source", pa.string()),  # own | none | shared:<model>
        ("summary_model", pa.string()),  # who wrote the summary used (null: none)
        ("protocol", pa.string()),  # active | passive
        ("track", pa.string()),  # base | transfer | long_horizon
        ("task", pa.string()),
        ("base_task", pa.string()),  # the base family of a held-out variant (= task on the base track)
        ("arms", pa.string()),  # single | dual
        ("seed", pa.int64()),
        ("run_index", pa.int64()),  # repetition 1..R
        ("attempt", pa.int64()),  # infrastructure attempt 1..
        ("status", pa.string()),  # ok | infra_error
        ("success", pa.bool_()),
        ("end_reason", pa.string()),  # success | stop | budget | repairs_exhausted | call_limit | infra_error
        ("steps", pa.int64()),
        ("budget", pa.int64()),
        ("camera_actions", pa.int64()),
        ("robot_actions", pa.int64()),
        ("invalid_actions", pa.int64()),
        ("planner_failures", pa.int64()),
        ("repairs", pa.int64()),
        ("tool_calls", pa.int64()),
        ("model_calls", pa.int64()),
        ("checkpoints_done", pa.int64()),
        ("checkpoints_total", pa.int64()),
        ("objects_placed", pa.int64()),  # long-horizon track only
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("cost_usd", pa.float64()),  # null: the provider's price is unknown
        ("wall_s", pa.float64()),
        ("record", pa.string()),  # the episode's event record, relative to the run folder
        ("privileged", pa.bool_()),  # the agent read simulator state (oracle): never a model score
        ("prompt_version", pa.string()),
        ("prompt_digest", pa.string()),
        ("compactions", pa.int64()),
        ("error", pa.string()),
    ]
)
COLUMNS = tuple(SCHEMA.names)


def write_row(path: Path, row: dict) -> Path:
    """Write one episode's row atomically: a hidden temp file in the same folder, then rename.

    Readers skip names starting with '.', so a crash mid-write leaves nothing half-read."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    full = {name: row.get(name) for name in COLUMNS}
    full["schema_version"] = SCHEMA_VERSION
    table = pa.Table.from_pylist([full], schema=SCHEMA)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_rows(*folders: Path | str) -> pd.DataFrame:
    """Every episode row under the given run folders (recursively), as one DataFrame with the
    fixed schema. An empty result still has every column."""
    files = sorted(p for f in folders for p in Path(f).rglob("*.parquet") if not p.name.startswith((".", "_")))
    table = ds.dataset([str(p) for p in files], schema=SCHEMA, format="parquet").to_table() if files else None
    return (table if table is not None else SCHEMA.empty_table()).to_pandas(types_mapper=_NULLABLE.get)


# integers and booleans stay integers and booleans when a column has nulls (objects_placed, ...)
_NULLABLE = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
