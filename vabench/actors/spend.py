"""The run's spending limits on the driver's side (``model.max_cost_usd``,
``harness.max_episode_cost_usd``; vocab.CostLimit): where a rerun's count starts, what becomes of an
episode a limit interrupted, and the progress bar's spend against the limit. The limits themselves
are kept where requests leave: the run's limiter (vabench.agents.ratelimit) and each episode's
dialogue (vabench.agents.dialogue)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from vabench.agents.cache import CACHE
from vabench.episodes import EpisodeSpec
from vabench.outcometable import OUTCOMES, load, statuses
from vabench.vocab import CostLimit

from .config import RunConfig
from .scratch import land
from .specs import expand


class CostStop(RuntimeError):
    """A spending limit was reached: the run stops as interrupted; a rerun with a higher limit resumes."""

    def __init__(self, why: str, run_id: str):
        super().__init__(f"stopped: {why}; rerun with run_id={run_id} and a higher limit to resume")


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


def interrupted(out: dict, run: RunConfig, spec: EpisodeSpec, attempt: int, capped: list[str]) -> bool:
    """An episode a cost limit interrupted (no row; final for this launch): its partial record is
    kept where a rerun sets it aside. The run's limit stops the run (:class:`CostStop`); an
    episode's lets the others go on, and ``capped`` keeps why for the end of the run."""
    if out["files"] is not None:
        land(out["files"], spec.record_dir(run.run_dir) / f"attempt{attempt}")
    if out.get("cost_limit") == CostLimit.RUN:
        raise CostStop(out["stopped"], run.run_id)
    capped.append(out["stopped"])
    return True


def learning_stopped(out: dict, run: RunConfig) -> None:
    """Summary learning reached model.max_cost_usd: the run stops."""
    if out.get("stopped"):
        raise CostStop(out["stopped"], run.run_id)


def after_run(capped: list[str], run: RunConfig, rows: pd.DataFrame) -> pd.DataFrame:
    """The run's rows; but episodes that harness.max_episode_cost_usd interrupted have no row yet:
    then the run says so and stops (:class:`CostStop`)."""
    if capped:
        raise CostStop(f"{len(capped)} episode(s) interrupted at {capped[-1]}", run.run_id)
    return rows


def spend_shown(stats: dict, cap: float | None) -> dict:
    """The progress bar's spend against model.max_cost_usd (nothing without a limit)."""
    return {} if cap is None else {"spent": f"${stats.get('spent_usd', 0.0):.2f}/{cap:g}"}
