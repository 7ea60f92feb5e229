"""Attempts that completed without their row: a driver stopped between an attempt's result and its
row (Ctrl-C while the row was on its way, a kill, a row it could not write) leaves a complete
record (its ``result`` event is the row) and no outcome file. The next launch writes the row from
the record instead of running the attempt again: the record keeps its name (it was never
interrupted: :func:`vabench.results.records.set_aside` refuses it), the row points at it, and no
model call is paid twice.
"""

from __future__ import annotations

from vabench.core.vocab import Status
from vabench.results.episodes import EpisodeSpec
from vabench.results.outcomes import COLUMNS
from vabench.results.records import result_of
from vabench.run.config.run import RunConfig
from vabench.run.folder.writer import RunWriter


def recover(run: RunConfig, pending: list[tuple[EpisodeSpec, int]], writer: RunWriter, log=print):
    """``pending`` (spec, attempt) less the attempts whose record completed, each of whose row is
    written from its record: (what is left to run, how many are now done). A recovered infra_error
    row is retried as its next attempt (``retry_infra``), like one the driver had written."""
    left, done, recovered = [], 0, 0
    for spec, attempt in pending:
        row = recorded_row(run, spec, attempt)
        if row is None:
            left.append((spec, attempt))
            continue
        writer.row(spec, row)
        recovered += 1
        if row["status"] == Status.OK or not run.options.retry_infra:
            done += 1
        else:
            left.append((spec, attempt + 1))
    if recovered:
        log(
            f"{recovered} attempt(s) had completed without their row being written (the driver stopped "
            "between the two): their rows are written from their records, which keep their names"
        )
    return left, done


def recorded_row(run: RunConfig, spec: EpisodeSpec, attempt: int) -> dict | None:
    """The row an attempt's complete record holds (its place in the run folder put in, as the
    worker does), or None: no record, an incomplete one, or one written by a vabench whose rows had
    other columns (that attempt then runs again as the next one: its record stays as it is)."""
    result = result_of(run.run_dir / spec.place(attempt))
    if result is None or any(c not in result for c in COLUMNS) or result.get("attempt") != attempt:
        return None
    row = {c: result[c] for c in COLUMNS}
    row["record"] = f"{spec.place(attempt)}/{row['record']}"
    return row
