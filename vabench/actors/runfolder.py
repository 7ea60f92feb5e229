"""The run folder's bookkeeping: which episodes are still to run (and with which attempt), the
row of an episode that could not run, and ``_run.json`` (the resolved config, versions, prompts)."""

from __future__ import annotations

import json
import os
import time
from importlib import metadata

from vabench.agents import prompts
from vabench.episodes import EpisodeSpec
from vabench.outcomes import OutcomeRow
from vabench.outcometable import OUTCOMES, statuses
from vabench.vocab import Status

from .config import RunConfig
from .specs import expand


def plan(run: RunConfig) -> tuple[list[tuple[EpisodeSpec, int]], int]:
    """Episodes still to run, with their attempt number, and how many are already done.

    An ``infra_error`` row is retried on every rerun with a fresh budget of ``max_attempts``
    (attempt numbers count on), unless ``retry_infra`` is false: a provider outage needs a rerun,
    not surgery on the run folder. The states come from the run's outcome table (one file read,
    kept true to the episode files by :mod:`vabench.outcometable`), not from every file."""
    todo, done = [], 0
    known = statuses(run.run_dir)
    outdir = run.run_dir / OUTCOMES
    for spec in expand(run):
        state = known.get(spec.outcome_path(run.run_dir).relative_to(outdir).as_posix())
        if state is None:
            todo.append((spec, 1))
        elif state[0] == Status.OK or not run.retry_infra:
            done += 1
        else:
            todo.append((spec, state[1] + 1))
    return todo, done


def infra_row(run: RunConfig, spec: EpisodeSpec, attempt: int, error: str) -> OutcomeRow:
    """The row of an episode that could not be judged (0 steps; excluded from rates; retried)."""
    return OutcomeRow.infra(error, **run.identity, **spec.identity(), attempt=attempt, privileged=run.privileged)


def _versions() -> dict:
    out = {}
    for pkg in ("vabench", "sapien", "mplib", "litellm", "ray", "hydra-core"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def write_run_info(run: RunConfig, log=print) -> None:
    """The resolved config (no secrets: validated), versions and prompt version, per run folder. A
    rerun under other prompts says so: its new rows would differ from the old in what the model saw."""
    run.run_dir.mkdir(parents=True, exist_ok=True)
    try:
        before = json.loads((run.run_dir / "_run.json").read_text()).get("prompt_version")
    except (OSError, ValueError):
        before = None
    if before and before != prompts.PROMPT_VERSION:
        log(
            f"warning: run {run.run_id} was started with prompts {before}; episodes run now use "
            f"{prompts.PROMPT_VERSION}, and their rows say so (prompt_version). Use a new run_id to keep them apart."
        )
    info = {
        "run_id": run.run_id,
        "experiment": run.experiment,
        "config": run.resolved,
        "summary_root": str(run.summary_root),  # the store this run read (shared by default: <results_dir>/_summaries)
        "versions": _versions(),
        "prompt_version": prompts.PROMPT_VERSION,
        "prompt_digest": prompts.prompt_digest(),
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    tmp = run.run_dir / ".run.json.tmp"
    tmp.write_text(json.dumps(info, indent=2, default=str) + "\n")
    os.replace(tmp, run.run_dir / "_run.json")
