"""The run's spending limits on the driver's side (``model.max_cost_usd``,
``harness.max_episode_cost_usd``; vocab.CostLimit): what becomes of an episode a limit
interrupted, and the progress bar's spend against the limit. The limits themselves
are kept where requests leave: the run's limiter (vabench.agents.ratelimit) and each episode's
dialogue (vabench.agents.dialogue)."""

from __future__ import annotations

import pandas as pd

from vabench.config.run import RunConfig
from vabench.episodes import EpisodeSpec
from vabench.runfolder.scratch import land
from vabench.vocab import CostLimit


class CostStop(RuntimeError):
    """A spending limit was reached: the run stops as interrupted; a rerun with a higher limit resumes."""

    def __init__(self, why: str, run_id: str):
        super().__init__(f"stopped: {why}; rerun with run_id={run_id} and a higher limit to resume")


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
