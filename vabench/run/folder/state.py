"""The run folder's bookkeeping: which episodes are still to run (and with which attempt), the
row of an episode that could not run, and the run info (:class:`vabench.results.layout.RunInfo`: the
resolved config, versions, prompts)."""

from __future__ import annotations

import json
import time
from importlib import metadata
from pathlib import Path

import pandas as pd

from vabench.agents.chat import prompts
from vabench.agents.models.kinds import reads_no_summary
from vabench.core.interventions import in_force
from vabench.core.vocab import ErrorKind, Status, SummaryKind, counted
from vabench.results.episodes import EpisodeSpec
from vabench.results.layout import CACHE, OUTCOMES, PROVENANCE, RunInfo, read_run_info, write_json
from vabench.results.outcomes import OutcomeRow, set_aside
from vabench.results.outcometable import load, refresh, statuses
from vabench.run.config.run import RunConfig
from vabench.run.config.specs import expand
from vabench.run.folder import provenance


def _set_aside_unreadable(run_dir: Path, log=print) -> None:
    """Unreadable outcome files are set aside (one line naming each) so their episodes run again;
    those a reader set aside already (:mod:`vabench.results.unreadable`) are named too."""
    got = refresh(run_dir)
    for rel, note in got.set_aside:
        log(f"unreadable outcome file {run_dir / rel} ({note}); its episode runs again")
    for rel, why in got.unreadable:
        path = run_dir / rel
        log(
            f"unreadable outcome file {path} ({why}): set aside as {set_aside(path).name}; its episode runs again "
            "(or takes its row from its record, where that attempt completed)"
        )


def todo(run: RunConfig, log=print) -> tuple[list[tuple[EpisodeSpec, int]], int]:
    """Episodes still to run, with their attempt number, and how many are already done.

    An ``infra_error`` row is retried on every rerun with a fresh budget of ``max_attempts``
    (attempt numbers count on), unless ``retry_infra`` is false: a provider outage needs a rerun,
    not surgery on the run folder. The states come from the run's outcome table (one file read,
    kept true to the episode files by :mod:`vabench.results.outcometable`), not from every file."""
    todo, done = [], 0
    _set_aside_unreadable(run.run_dir, log)
    known = statuses(run.run_dir)
    outdir = run.run_dir / OUTCOMES
    for spec in expand(run):
        state = known.get(spec.outcome_path(run.run_dir).relative_to(outdir).as_posix())
        if state is None:
            todo.append((spec, 1))
        elif state[0] == Status.OK or not run.options.retry_infra:
            done += 1
        else:
            todo.append((spec, state[1] + 1))
    return todo, done


def infra_row(run: RunConfig, spec: EpisodeSpec, attempt: int, error: str, provenance_digest=None) -> OutcomeRow:
    """The row of an episode that could not be judged (0 steps; excluded from rates; retried)."""
    identity = {**run.identity, **spec.identity(), "provenance_digest": provenance_digest}
    return OutcomeRow.infra(error, **identity, attempt=attempt, privileged=run.privileged)


def _versions() -> dict:
    out = {}
    for pkg in ("vabench", "sapien", "mplib", "litellm", "ray", "hydra-core"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def run_manifest(run: RunConfig) -> dict:
    """The run's provenance manifest (:mod:`vabench.run.folder.provenance`)."""
    learns = not reads_no_summary(run.model.id) and run.summary.kind == SummaryKind.OWN
    return provenance.manifest(run.tasks, run.render, run.demo_root, learns, run.condition.robot, run.split)


def write_run_info(run: RunConfig, log=print) -> str:
    """The resolved config (no secrets: validated), versions, prompt version and the provenance
    manifest, per run folder; returns the manifest's digest, which every row of this driver carries.
    Each manifest is also kept as ``_provenance/<digest>.json``: a resumed run's earlier rows name
    theirs. A rerun under other prompts says so: its new rows would differ from the old in what the
    model saw."""
    run.run_dir.mkdir(parents=True, exist_ok=True)
    earlier = read_run_info(run.run_dir)
    before = earlier.prompt_version if earlier else None
    if before and before != prompts.PROMPT_VERSION:
        log(
            f"warning: run {run.run_id} was started with prompts {before}; episodes run now use "
            f"{prompts.PROMPT_VERSION}, and their rows say so (prompt_version). Use a new run_id to keep them apart."
        )
    manifest = run_manifest(run)
    key = provenance.digest(manifest)
    write_json(run.run_dir / PROVENANCE / f"{key}.json", manifest)
    RunInfo(
        run_id=run.run_id,
        experiment=run.experiment,
        config=run.resolved,
        summary_root=str(run.summary_root),  # the store this run read (shared by default: <results_dir>/_summaries)
        versions=_versions(),
        prompt_version=prompts.PROMPT_VERSION,
        prompt_digest=prompts.prompt_digest(),
        # every intervention in force, with its input manifest (empty: the paper's boundary)
        interventions=[m.record() for m in in_force(run.condition.intervention, run.condition.summary_source)],
        written_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        provenance=manifest,
        provenance_digest=key,
    ).write(run.run_dir)
    return key


def unjudged_summary(rows: pd.DataFrame) -> str | None:
    """The end of a run: its rows that are not judged, grouped by kind (infra: retried on a rerun;
    permanent: fix the cause first) and cause, with counts; None when every episode was judged."""
    bad = rows[rows["status"] != Status.OK]
    if bad.empty:
        return None
    lines = [f"{len(bad)} of {counted(len(rows), 'episode')} not judged (infra_error rows, excluded from every rate):"]
    kinds = bad["error_kind"].fillna(ErrorKind.INFRA)
    for kind, group in bad.groupby(kinds, sort=True):
        todo = "rerun the same run_id to retry" if kind == ErrorKind.INFRA else "retrying cannot help: fix the cause"
        lines.append(f"  {kind} ({len(group)}; {todo}):")
        causes = group["error"].fillna("(no error text)").map(_cause).value_counts()
        lines += [f"    {n} x {cause}" for cause, n in causes.items()]
    return "\n".join(lines)


def _cause(error: str) -> str:
    """An error text without what varies per episode (attempt counts, request ids), one line."""
    import re

    text = " ".join(str(error).split())
    text = re.sub(r"after \d+ attempts", "after N attempts", text)
    return text if len(text) <= 160 else text[:157] + "..."


def spent_before(run: RunConfig) -> float:
    """US dollars the run folder already records as spent on the model, which ``model.max_cost_usd``
    counts on from: its rows' ``cost_usd``, and the replies kept in the response cache of episodes
    with no row yet (attempts a cost limit or Ctrl-C interrupted, which a rerun replays free). Read
    only when the run has a limit."""
    if run.model.max_cost_usd is None or not run.run_dir.is_dir():
        return 0.0
    known = statuses(run.run_dir)
    spent = 0.0
    if known:
        rows = load(run.run_dir / OUTCOMES)
        spent += float(pd.to_numeric(rows["cost_usd"], errors="coerce").fillna(0.0).sum())
    outdir = run.run_dir / OUTCOMES
    for spec in expand(run):
        folder = run.run_dir / CACHE / spec.key
        if folder.is_dir() and spec.outcome_path(run.run_dir).relative_to(outdir).as_posix() not in known:
            spent += _cached_cost(folder)
    return spent


def _cached_cost(folder: Path) -> float:
    total = 0.0
    for entry in folder.glob("*.json"):
        try:
            total += float(json.loads(entry.read_text(encoding="utf-8")).get("cost_usd") or 0.0)
        except (OSError, ValueError):  # a reply being written: counted by the next launch
            continue
    return total
