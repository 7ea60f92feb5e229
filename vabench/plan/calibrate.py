"""The plan calibrated from a pilot: a previous run folder (``plan.calibrate=RUN``) replaces the
priors wherever it can (docs/plan.md, "A calibration run").

- **A task and protocol the pilot played**: its rows' own calls (cache hits included), tokens,
  wall time and success, per episode.
- **Another task of a protocol the pilot played**: the priors' episode of that task
  (:func:`vabench.plan.estimate.prior_episode`), corrected by what the pilot showed about this
  model against the priors (:class:`Pilot`): its strength, the pilot's successes over the paper's
  success rate on the same tasks; and its calls, tokens and seconds over what the priors predict for
  episodes of the same tasks, lengths and outcomes. So a pilot of a few tasks carries over to a
  study's other tasks, budgets and success rates.
- **A protocol the pilot never played**: the priors.

The pilot's looks per step and repairs per call come from its rows (the priors' are the synthetic
failing replies'), and the plan prints them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import pandas as pd

from vabench.agents.models.kinds import is_offline
from vabench.core.vocab import PromptCache, Status
from vabench.envs.tasks import episode_budget
from vabench.plan.estimate import Estimate, arm_episode, cache_kind, in_flight, prior_episode
from vabench.plan.free import offline_episode
from vabench.plan.priors import cell
from vabench.results.layout import OUTCOMES, RunInfo
from vabench.results.outcometable import load
from vabench.run.config.run import RunConfig, from_config

_COLUMNS = {"input": "prompt_tokens", "cached": "cached_tokens", "written": "cache_write_tokens"}
_COLUMNS |= {"output": "completion_tokens", "reasoning": "reasoning_tokens"}
_RATIOS = ("calls", *_COLUMNS, "wall_s")  # what the pilot corrects, as measured over predicted


def calibration(folder: str | None) -> pd.DataFrame | None:
    """The judged rows of a previous run folder (every job of a sweep folder), or None. Their
    ``attrs["overhead"]`` scales an episode's ``wall_s`` to the time its slot was really held
    (writing its video and record, handing it over), measured over one launch (see :func:`_overhead`)."""
    if folder is None:
        return None
    rows = load(Path(folder))
    rows = rows[rows["status"] == Status.OK]
    rows.attrs["overhead"] = _overhead(Path(folder), rows)
    return rows


def _overhead(folder: Path, rows: pd.DataFrame) -> float:
    """Slot time per episode over its ``wall_s``: from the driver's start (``RunInfo.written_at``) to the
    last outcome file, times the episodes in flight, over the episodes' summed ``wall_s``. 1 when
    the folder is a sweep or its rows came from several launches (a span that long is not work)."""
    try:
        info = RunInfo.read(folder)
        began = datetime.strptime(info.written_at, "%Y-%m-%dT%H:%M:%S%z").timestamp()  # its own zone
        run = from_config(info.config, folder, log=lambda *_: None)  # as verify reads a run folder
    except (OSError, ValueError, KeyError):  # ConfigError and UnreadableRunInfo are ValueErrors
        return 1.0
    flight = max(1, min(in_flight(run), len(rows)))
    last = max((p.stat().st_mtime for p in (folder / OUTCOMES).rglob("*.parquet")), default=began)
    work = float(rows["wall_s"].sum())
    factor = (last - began) * flight / work if work > 0 else 1.0
    return factor if 1.0 <= factor <= 2.0 else 1.0


def _measured(rows: pd.DataFrame) -> Estimate:
    """The rows' summed usage: calls (cache hits included), tokens (a resumed run's cache hits
    carried no tokens: scaled up to every call), wall time (with the slot's overhead), successes."""
    answered = float(rows["model_calls"].fillna(0).sum())
    calls = answered + float(rows["cache_hits"].fillna(0).sum())
    per_call = max(1.0, calls) / max(1.0, answered)
    est = Estimate(len(rows), calls, wall_s=float(rows["wall_s"].sum()) * rows.attrs.get("overhead", 1.0))
    for key, column in _COLUMNS.items():
        setattr(est, key, float(rows[column].fillna(0).sum()) * per_call)
    est.success = float(rows["success"].astype(float).sum())
    return est


@dataclass(frozen=True)
class Pilot:
    """What a pilot's rows of one protocol say about its model against the priors."""

    episodes: int
    strength: float  # its successes over the paper's rate summed over its episodes (1: the paper expects none)
    ratios: dict  # per _RATIOS: the rows' sum over the priors' prediction for the same episodes
    looks: float  # camera actions per step
    repairs: float  # repairs per model call

    def describe(self, protocol: str) -> str:
        ratios = ", ".join(f"{k} x{v:.2f}" for k, v in self.ratios.items() if k in ("calls", "input", "output"))
        return (
            f"{protocol}: {self.episodes} episodes, success {self.strength:.2f} x the paper's rate, "
            f"{ratios} of the priors; looks {self.looks:.2f} per step, repairs {self.repairs:.2f} per call"
        )


def pilot(run: RunConfig, protocol: str, rows: pd.DataFrame) -> Pilot:
    """The :class:`Pilot` of ``rows`` (one protocol's): each episode predicted by the priors' cohort of its
    outcome at its own length, against what it measured."""
    kind, predicted, expected = cache_kind(run), Estimate(), 0.0
    for task, steps, won in rows[["task", "steps", "success"]].itertuples(index=False):
        c = cell(task, protocol)
        arm = c.success if won else c.failure
        # the share of this run's budget that makes arm_episode play the pilot episode's own steps
        share = max(float(steps), 1.0) / episode_budget(run.condition, task)
        predicted = predicted + arm_episode(run, task, protocol, replace(arm, share=share), kind)
        expected += c.success_rate
    measured = _measured(rows)
    ratios = {k: _ratio(getattr(measured, k), getattr(predicted, k)) for k in _RATIOS}
    steps = max(1.0, float(rows["steps"].sum()))
    return Pilot(
        len(rows),
        measured.success / expected if expected > 0 else 1.0,
        ratios,
        float(rows["camera_actions"].sum()) / steps,
        float(rows["repairs"].sum()) / max(1.0, float(rows["model_calls"].sum())),
    )


def _ratio(measured: float, predicted: float) -> float:
    return measured / predicted if predicted > 0 else 1.0  # nothing predicted: nothing to correct


def _corrected(run: RunConfig, task: str, protocol: str, p: Pilot) -> Estimate:
    """The priors' episode of ``task`` at the pilot's strength, its figures scaled by the pilot's ratios."""
    c = cell(task, protocol)
    kind = cache_kind(run)
    rate = min(1.0, c.success_rate * p.strength)
    est = arm_episode(run, task, protocol, c.failure, kind).scaled(1 - rate)
    est = est + arm_episode(run, task, protocol, c.success, kind).scaled(rate)
    for key, ratio in p.ratios.items():
        setattr(est, key, getattr(est, key) * ratio)
    est.image *= p.ratios["calls"]
    est.success = rate
    return est


def pilots(run: RunConfig, rows: pd.DataFrame) -> dict[str, Pilot]:
    """The pilot of each protocol the rows played (computed once per rows: kept in their attrs)."""
    kept = rows.attrs.setdefault("pilots", {})
    for p in sorted(set(rows["protocol"].unique()) - set(kept)):
        kept[p] = pilot(run, p, rows[rows["protocol"] == p])
    return kept


def episode(run: RunConfig, task: str, protocol: str, rows: pd.DataFrame | None) -> tuple[Estimate, str]:
    """The expected episode of ``task`` in ``protocol`` and where it comes from."""
    if is_offline(run.model.id):
        return offline_episode(run, task, protocol)
    prior = prior_episode(run, task, protocol)
    if rows is None or rows.empty:
        return prior, "priors"
    same = rows[(rows["task"] == task) & (rows["protocol"] == protocol)]
    if not same.empty:
        est = _measured(same).scaled(1 / len(same))
        est.calls_max, est.image = prior.calls_max, prior.image / max(prior.calls, 1e-9) * est.calls
        est.success /= len(same)  # scaled() leaves success as it is
        return _uncached(run, est), f"calibrated ({len(same)} episodes)"
    p = pilots(run, rows).get(protocol)
    if p is not None:
        est = _corrected(run, task, protocol, p)
        return _uncached(run, est), f"calibrated by protocol ({p.episodes} episodes, on this task's priors)"
    return prior, "priors (the calibration run has no such protocol)"


def _uncached(run: RunConfig, est: Estimate) -> Estimate:
    """A calibrated episode as this run's prompt cache reads it: none read or written without one."""
    if cache_kind(run) == PromptCache.NONE:
        est.cached = est.written = 0.0
    return est
