"""The run's spending limits on the driver's side (``model.max_cost_usd``,
``harness.max_episode_cost_usd``; vocab.CostLimit): what becomes of an episode a limit
interrupted. The limits themselves are kept where
requests leave: the run's limiter (vabench.agents.models.ratelimit) and each episode's dialogue
(vabench.agents.chat.dialogue); both raise :class:`~vabench.core.errors.CostCapReached`, which a worker
sends back as :func:`vabench.run.actors.worker.capped` and :func:`stopped` raises again here."""

from __future__ import annotations

import pandas as pd

from vabench.core.errors import CostCapReached
from vabench.core.vocab import CostLimit
from vabench.results.episodes import EpisodeSpec
from vabench.run.config.run import RunConfig
from vabench.run.folder.scratch import land


def stopped(out: dict) -> CostCapReached:
    """The cap a worker's answer says stopped its episode or learning."""
    return CostCapReached(
        out["cost_limit"], float(out.get("spent") or 0.0), float(out.get("cap") or 0.0), out["stopped"]
    )


def interrupted(out: dict, run: RunConfig, spec: EpisodeSpec, attempt: int, capped: list[str]) -> bool:
    """An episode a cost limit interrupted (no row; final for this launch): its partial record is
    kept where a rerun sets it aside. The run's limit stops the run; an episode's lets the others
    go on, and ``capped`` keeps why for the end of the run."""
    if out["files"] is not None:
        land(out["files"], run.run_dir / spec.place(attempt))
    if out.get("cost_limit") == CostLimit.RUN:
        raise stopped(out)
    capped.append(out["stopped"])
    return True


def learning_stopped(out: dict) -> None:
    """Summary learning reached model.max_cost_usd: the run stops."""
    if out.get("stopped"):
        raise stopped(out)


def after_run(capped: list[str], run: RunConfig, rows: pd.DataFrame) -> pd.DataFrame:
    """The run's rows; but episodes that harness.max_episode_cost_usd interrupted have no row yet:
    then the run says so and stops."""
    if capped:
        cap = run.harness.max_episode_cost_usd or 0.0
        raise CostCapReached(CostLimit.EPISODE, 0.0, cap, f"{len(capped)} episode(s) interrupted at {capped[-1]}")
    return rows
