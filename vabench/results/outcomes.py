"""The outcome table: one row per episode (docs/design.md), one Parquet file per episode.

The columns are declared once, as the fields of :class:`OutcomeRow` (the builder every writer uses),
and the Arrow schema is derived from them, so a column is never silently dropped or retyped when a
directory of files is read as one table (pyarrow infers a dataset's schema from the first file it
finds). Columns may be added (nullable), never renamed; bump ``SCHEMA_VERSION`` when adding. This
module depends on pyarrow, pandas, the vocabulary and the condition only: the simulator side writes rows, the
analysis side reads them.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields, make_dataclass
from enum import StrEnum
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from vabench.core.condition import KEYS, default, kind, rule
from vabench.core.vocab import EndReason, ErrorKind, Status, SummaryKind, Track

# 2: provider_attempts, provider_retries, backoff_s; 3: summary_learned, summary_digest, observation; 4: limit_wait_s;
# 5: render, camera_chain_over, reasoning_tokens, error_kind; 6: provenance_digest, record_digest,
# cache_hits, rescored_from; 7: intervention; 8: cached_tokens, cache_write_tokens; 9: robot, perturbation;
# 10: model_latency_s; 11: budget_scale; 12: operator, control; 13: split
SCHEMA_VERSION = 13


def _col(arrow: pa.DataType, default=None, about: str = ""):
    return field(default=default, metadata={"arrow": arrow, "about": about})


STR, INT, FLT, BOOL = pa.string(), pa.int64(), pa.float64(), pa.bool_()
ARROW = {str: STR, int: INT, float: FLT, bool: BOOL}


@dataclass
class _Head:
    """The row's first columns: the run, the condition's label, model and summary (then the
    condition's departure keys, :data:`_Conditions`, then :class:`OutcomeRow`'s own)."""

    run_id: str | None = _col(STR)
    experiment: str | None = _col(STR)
    condition: str | None = _col(STR, about="model | protocol | summary source")
    model: str | None = _col(STR)
    summary_source: str | None = _col(STR, SummaryKind.NONE, "own | none | shared:<model>")
    summary_model: str | None = _col(STR, about="who wrote the summary used (null: none)")
    summary_learned: bool | None = _col(BOOL, about="the episode had the summary its source asked for (null: none)")
    summary_digest: str | None = _col(STR, about="sha256 prefix of the summary text the model received (null: none)")


# the departure keys' columns, declared once as Condition's fields (vabench.core.condition.key): name, type, default
_Conditions = make_dataclass(
    "_Conditions",
    [(k, kind(k), _col(ARROW[kind(k)], default(k), rule(k, "about"))) for k in KEYS],
    bases=(_Head,),
)


@dataclass
class OutcomeRow(_Conditions):
    """One episode's row, the only place its columns are declared (name, Arrow type, default): its
    own here, the condition's departure keys from :class:`vabench.core.condition.Condition`.

    The harness fills one while an episode runs; the driver builds one for an episode that could not
    run (:meth:`infra`). ``row()`` gives the dict :func:`write_row` accepts."""

    protocol: str | None = _col(STR, about="active | passive")
    track: str | None = _col(STR, Track.BASE, " | ".join(Track))
    task: str | None = _col(STR)
    base_task: str | None = _col(STR, about="the base family of a held-out variant (= task on the base track)")
    arms: str | None = _col(STR, about="single | dual")
    seed: int | None = _col(INT)
    run_index: int = _col(INT, 1, "repetition 1..R")
    attempt: int = _col(INT, 1, "infrastructure attempt 1..")
    status: str = _col(STR, Status.INFRA_ERROR, " | ".join(Status) + " (a row the harness never finished is infra)")
    success: bool = _col(BOOL, False)
    end_reason: str = _col(STR, EndReason.INFRA_ERROR, " | ".join(EndReason))
    steps: int = _col(INT, 0)
    budget: int = _col(INT, 0)
    camera_actions: int = _col(INT, 0)
    camera_chain_over: int = _col(INT, 0, "camera actions beyond the instructed 5 in a row (paper C.6); executed")
    robot_actions: int = _col(INT, 0)
    invalid_actions: int = _col(INT, 0)
    planner_failures: int = _col(INT, 0)
    repairs: int = _col(INT, 0)
    tool_calls: int = _col(INT, 0)
    model_calls: int = _col(INT, 0, "model calls the provider answered")
    provider_attempts: int = _col(INT, 0, "HTTP attempts to the provider, failed and retried ones included")
    provider_retries: int = _col(INT, 0, "attempts that repeated a failed one (rate limit, timeout, 5xx, ...)")
    backoff_s: float = _col(FLT, 0.0, "seconds spent waiting before retries (Retry-After honoured)")
    limit_wait_s: float = _col(FLT, 0.0, "seconds waited on the run's rate limits (model.rpm/tpm); never an error")
    checkpoints_done: int = _col(INT, 0)
    checkpoints_total: int = _col(INT, 0)
    objects_placed: int | None = _col(INT, about="long-horizon track only")
    prompt_tokens: int = _col(INT, 0)
    completion_tokens: int = _col(INT, 0, "output tokens, reasoning (thinking) tokens included")
    reasoning_tokens: int = _col(INT, 0, "of completion_tokens: the provider's reasoning / thinking tokens")
    cost_usd: float | None = _col(FLT, about="null: the provider's price is unknown")
    wall_s: float = _col(FLT, 0.0)
    record: str | None = _col(STR, about="the episode's event record, relative to the run folder")
    privileged: bool = _col(BOOL, False, "the agent read simulator state (oracle): never a model score")
    prompt_version: str | None = _col(STR)
    prompt_digest: str | None = _col(STR)
    compactions: int = _col(INT, 0)
    error: str | None = _col(STR)
    error_kind: str | None = _col(STR, about=" | ".join(ErrorKind) + ": why an infra_error row could not be judged")
    provenance_digest: str | None = _col(
        STR, about="digest of the run's provenance manifest (_provenance/<digest>.json)"
    )
    record_digest: str | None = _col(STR, about="sha256 prefix of the record: events (its result aside) and frames")
    cache_hits: int = _col(INT, 0, "replies answered from the response cache (model.cache): never sent, never billed")
    rescored_from: str | None = _col(STR, about="the run folder this row was re-simulated from (vabench.verify)")
    cached_tokens: int = _col(INT, 0, "of prompt_tokens: read from the provider's prompt cache (cached rate)")
    cache_write_tokens: int = _col(INT, 0, "of prompt_tokens: written to the provider's prompt cache (Anthropic)")
    model_latency_s: float = _col(FLT, 0.0, "seconds the answered model calls took, summed (a policy: its inferences)")
    operator: str | None = _col(STR, about="model=human: the operator who played it (human.operators); null: no person")

    @classmethod
    def infra(cls, error: str, kind: ErrorKind = ErrorKind.INFRA, **identity) -> OutcomeRow:
        """The row of an episode that could not run (excluded from every rate, retried): 0 steps, and
        null for what was never measured (budget, counts, usage, time), so no mean counts zeros."""
        unmeasured = {f.name: None for f in fields(cls) if f.metadata["arrow"] in (INT, FLT) and f.default == 0}
        unmeasured.update(steps=0)
        return cls(
            **{**unmeasured, **identity},
            status=Status.INFRA_ERROR,
            success=False,
            end_reason=EndReason.INFRA_ERROR,
            error=error[:2000],
            error_kind=kind,
        )

    def row(self) -> dict:
        """The row as plain values (vocabulary words as their strings)."""
        return {"schema_version": SCHEMA_VERSION, **{k: _plain(v) for k, v in asdict(self).items()}}


def _plain(value):
    return str(value) if isinstance(value, StrEnum) else value


SCHEMA = pa.schema([("schema_version", INT)] + [(f.name, f.metadata["arrow"]) for f in fields(OutcomeRow)])
COLUMNS = tuple(SCHEMA.names)


def write_row(path: Path, row: dict | OutcomeRow) -> Path:
    """Write one episode's row atomically: a hidden temp file in the same folder, then rename.

    The row must have exactly the schema's columns (:meth:`OutcomeRow.row`): an unknown key is a
    typo that would otherwise vanish, a missing one a builder that forgot a column. Readers skip
    names starting with '.', so a crash mid-write leaves nothing half-read."""
    row = row.row() if isinstance(row, OutcomeRow) else {k: _plain(v) for k, v in row.items()}
    unknown, missing = sorted(set(row) - set(COLUMNS)), [c for c in COLUMNS if c not in row]
    if unknown or missing:
        raise ValueError(
            f"an outcome row needs exactly the columns of outcomes.SCHEMA; unknown: {unknown or 'none'}, "
            f"missing: {missing or 'none'} (build rows with OutcomeRow)"
        )
    if row["schema_version"] != SCHEMA_VERSION:
        raise ValueError(f"schema_version is {row['schema_version']!r}, not {SCHEMA_VERSION}")
    if row["status"] not in set(Status) or row["end_reason"] not in set(EndReason):
        raise ValueError(
            f"status {row['status']!r} / end_reason {row['end_reason']!r}: allowed {', '.join(Status)} / "
            f"{', '.join(EndReason)}"
        )
    if (row["status"] == Status.INFRA_ERROR) != (row["end_reason"] == EndReason.INFRA_ERROR):
        raise ValueError(f"status {row['status']!r} contradicts end_reason {row['end_reason']!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist([row], schema=SCHEMA)
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
    fixed schema. An empty result still has every column. Unreadable files are left out and listed
    in ``attrs["unreadable"]`` as (path, why) (:func:`read_outcomes`)."""
    files = sorted(p for f in folders for p in Path(f).rglob("*.parquet") if not p.name.startswith((".", "_")))
    df, unreadable = read_outcomes(files)
    df.attrs["unreadable"] = unreadable
    return df


def read_outcomes(files: list[Path]) -> tuple[pd.DataFrame, list[tuple[Path, str]]]:
    """The rows of these outcome files, and (file, why) for each that cannot be read (a truncated
    or foreign file): one bad file never hides a run. Readers note them; only a driver resuming its
    run folder sets them aside (:func:`set_aside`), so their episodes run again."""
    try:
        table = ds.dataset([str(p) for p in files], schema=SCHEMA, format="parquet").to_table() if files else None
        unreadable = []
    except (pa.ArrowException, OSError):  # find the culprits one by one; the rest read as usual
        unreadable = [(p, why) for p in files if (why := unreadable_why(p))]
        bad = {p for p, _ in unreadable}
        good = [str(p) for p in files if p not in bad]
        table = ds.dataset(good, schema=SCHEMA, format="parquet").to_table() if good else None
    df = (table if table is not None else SCHEMA.empty_table()).to_pandas(types_mapper=_NULLABLE.get)
    return df, unreadable


def unreadable_why(path: Path) -> str | None:
    """Why one outcome file cannot be read as a row of the schema, or None."""
    try:
        ds.dataset(str(path), schema=SCHEMA, format="parquet").to_table()
    except (pa.ArrowException, OSError) as e:
        return why_unreadable(path, e)
    return None


def why_unreadable(path: Path, e: BaseException) -> str:
    """The first sentence of a read error, without the path the caller names anyway."""
    text = " ".join(str(e).replace(f" '{path}'", "").replace(str(path), "").split())
    return text.split(". ")[0].rstrip(".")[:200] or type(e).__name__


def set_aside(path: Path) -> Path:
    """Rename an unreadable outcome file to ``_unreadable-<time>-<name>`` beside it (readers skip
    ``_`` names; kept for inspection), so its episode counts as never run."""
    path = Path(path)
    target = path.with_name(f"_unreadable-{time.strftime('%Y%m%d-%H%M%S')}-{path.name}")
    os.replace(path, target)
    return target


# integers and booleans stay integers and booleans when a column has nulls (objects_placed, ...)
_NULLABLE = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
