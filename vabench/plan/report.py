"""The plan as text (:func:`plan_text`), calibrated from a previous run folder when one is named;
the estimates themselves are :mod:`vabench.plan.estimate`'s."""

from __future__ import annotations

import math

import pandas as pd

from vabench.agents.models.kinds import is_offline
from vabench.agents.models.policy import DEFAULT_NAME as POLICY
from vabench.core.vocab import SEEDS_PER_TASK
from vabench.plan.calibrate import calibration, episode, pilots
from vabench.plan.cost import cost_lines
from vabench.plan.estimate import PRIORS, Estimate, episode_counts, in_flight, learning, wall_time
from vabench.plan.priors import cell, made
from vabench.run.config.run import PlanConfig, RunConfig


def _usd(value: float | None) -> str:
    return "unknown (no price in LiteLLM's map)" if value is None else f"${value:,.2f}"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:,.1f} h" if seconds >= 3600 else f"{seconds / 60:,.1f} min"


def _episodes(run: RunConfig, rows) -> tuple[Estimate, dict[str, Estimate], list[str]]:
    """The run's expected episodes summed, per condition, and where their figures come from."""
    from vabench.envs.tasks import episode_budget  # the control mode's budget, x budget_scale

    total, per_condition, sources = Estimate(), {}, set()
    for (condition, task, protocol), n in sorted(episode_counts(run).items()):
        est, source = episode(run, task, protocol, rows)
        sources.add(source.split(" (")[0])
        total = total + est.scaled(n)
        per_condition[condition] = per_condition.get(condition, Estimate()) + est.scaled(n)
        budgets = total.per.setdefault("budgets", {})
        budget = episode_budget(run.condition, task)  # the control mode's, x budget_scale
        budgets[budget] = budgets.get(budget, Estimate()) + est.scaled(n)
        if est.success is not None:
            total.per.setdefault("success", []).append((est.success, n))
    return total, per_condition, sorted(sources)


def plan_text(run: RunConfig, plan: PlanConfig) -> str:
    """Everything the plan prints (docs/plan.md)."""
    from vabench.agents.models.llm import prices

    rows = calibration(plan.calibrate)
    total, per_condition, sources = _episodes(run, rows)
    free = is_offline(run.model.id)
    price = None if free else prices(run.model.id)
    lines = [f"plan of run {run.run_id} ({run.experiment}): {run.model.id}, render {run.render}, nothing sent"]
    lines += [_condition_line(condition, est, price, free) for condition, est in per_condition.items()]
    if free:
        return "\n".join(lines + _free_lines(run, plan, total, sources))
    return "\n".join(lines + _model_lines(run, plan, rows, total, sources, price))


def _condition_line(condition: str, est: Estimate, price, free: bool) -> str:
    """One condition: its episodes and what one of them is expected to take."""
    n = max(est.episodes, 1)
    each = f"{est.calls / n:,.1f} steps" if free else f"{est.calls / n:,.1f} calls"
    if not free:
        cost = est.cost(price)
        each += f", {_usd(None if cost is None else cost / n)}"
    return f"  {condition}: {est.episodes:,.0f} episodes; each about {each}, {est.wall_s / n:,.0f} s"


def _from_line(run: RunConfig, plan: PlanConfig, rows, sources: list[str]) -> str:
    line = f"expected figures from: {', '.join(sources)}" + (f" ({plan.calibrate})" if rows is not None else "")
    if rows is not None and not rows.empty:
        line += "; the pilot, from its rows: " + "; ".join(p.describe(k) for k, p in pilots(run, rows).items())
    if "priors" in sources:
        line += f"; priors measured by {made()}, a failing and a successful episode mixed at the paper's success rate"
        pairs = {(task, protocol) for _, task, protocol in episode_counts(run)}
        lent = sorted({f"{p} {t} from {c.borrowed}" for t, p in pairs if (c := cell(t, p)).borrowed})
        if lent:
            line += f" (not measured, so borrowed: {', '.join(lent)})"
        line += "; their looks (one step in six, active) and repairs (one call in twenty) are synthetic"
    return line


def _model_lines(run: RunConfig, plan: PlanConfig, rows, total: Estimate, sources: list[str], price) -> list[str]:
    learn_tasks, learn = learning(run)
    n = max(total.episodes, 1)
    lines = [_from_line(run, plan, rows, sources)]
    lines.append(
        f"summary learning: {len(learn_tasks)} summaries to learn, about {learn.calls:,.0f} calls "
        f"(at most {learn.calls_max:,.0f}), {_usd(learn.cost(price))}"
    )
    lines.append(
        f"model calls per episode: expected {total.calls / n:,.1f}, at most {total.calls_max / n:,.0f} "
        f"(step budget x harness.max_calls_per_step={run.harness.max_calls_per_step}); run total {total.calls:,.0f}"
    )
    calls = max(total.calls, 1)
    lines.append(
        f"tokens per call: input {total.input / calls:,.0f} (images {total.image / calls:,.0f}; read from the "
        f"prompt cache {total.cached / calls:,.0f}, written {total.written / calls:,.0f}), output "
        f"{total.output / calls:,.0f} (reasoning {total.reasoning / calls:,.0f})"
    )
    lines.append(_tokenizer_line(run.model.id))
    if price is not None:
        lines.append(
            f"prices per 1M tokens (LiteLLM {_litellm_version()}): input ${price.input * 1e6:g}, cached input "
            f"${price.cached_input * 1e6:g}, cache write ${price.cache_write * 1e6:g}, output ${price.output * 1e6:g}"
        )
    lines += cost_lines(run, total, learn, price, lambda other: _episodes(other, rows)[0])
    lines.append(_budget_line(total, price))
    lines += _time_lines(run, total, learn, len(learn_tasks))
    if plan.difference is not None:
        lines += _power_lines(run, plan, total, price)
    return lines


def _tokenizer_line(model_id: str) -> str:
    """Which tokenizer counted the text, and where it is a stand-in, why."""
    from vabench.agents.chat.tokens import tokenizer

    tk = tokenizer(model_id)
    if tk.exact:
        return f"tokens counted by: {tk.name} (the provider's tokenizer, LiteLLM), images by the provider's rule"
    return f"tokens counted by: a fallback: {tk.note}; images by the provider's rule"


def _budget_line(total: Estimate, price) -> str:
    """Calls and dollars per episode by the tasks' step budgets: what one episode of a kind costs."""
    parts = []
    for budget, est in sorted(total.per.get("budgets", {}).items()):
        n, cost = max(est.episodes, 1), est.cost(price)
        parts.append(f"{budget} steps: {est.calls / n:,.1f} calls, {_usd(None if cost is None else cost / n)}")
    return "  per episode by step budget: " + "; ".join(parts)


def _free_lines(run: RunConfig, plan: PlanConfig, total: Estimate, sources: list[str]) -> list[str]:
    """An offline agent's plan: one line that it is free, then its steps and time."""
    n = max(total.episodes, 1)
    expected, most = total.calls / n, total.calls_max / n
    lines = [f"{run.model.id} is an offline agent: free (no provider is called: no tokens, no price)"]
    if expected < most:
        lines.append(f"steps per episode: expected {expected:,.1f} ({'; '.join(sources)}), at most {most:,.0f}")
    else:
        why = "; ".join(s.removeprefix("at most: ") for s in sources)
        lines.append(f"steps per episode: at most {most:,.0f} ({why}; the wall time takes every episode to use it)")
    lines += _time_lines(run, total, None, 0)
    if run.model.id == POLICY:
        lines[-1] += "; the policy server's inference time not included"
    if plan.difference is not None:
        lines += _power_lines(run, plan, total, None, free=True)
    return lines


def totals(run: RunConfig) -> dict[str, float | None]:
    """A run's size and cost from the priors, as the plan prints them: episodes, model calls, dollars
    (episodes and summary learning; None when LiteLLM cannot price the model) and wall hours (the
    docs' table of the paper's study)."""
    from vabench.agents.models.llm import prices

    price = prices(run.model.id)
    total, _, _ = _episodes(run, None)
    learn_tasks, learn = learning(run)
    cost, learn_cost = total.cost(price), learn.cost(price)
    t = wall_time(run, total, learn, len(learn_tasks))
    usd = None if cost is None or learn_cost is None else cost + learn_cost
    hours = (t["episodes"] + t["learning"]) / 3600
    return {"episodes": total.episodes, "calls": total.calls + learn.calls, "usd": usd, "hours": hours}


def _litellm_version() -> str:
    from importlib import metadata

    return metadata.version("litellm")


def _time_lines(run: RunConfig, total: Estimate, learn: Estimate | None, learn_tasks: int) -> list[str]:
    """The wall time (``learn`` None: an offline agent, which learns no summary and has no rate limits)."""
    t = wall_time(run, total, learn or Estimate(), learn_tasks)
    binding = max(("work", "rpm", "tpm"), key=lambda k: t[k])
    flight = f"{in_flight(run)} episodes in flight at {total.wall_s / max(total.episodes, 1):,.0f} s each"
    if learn is None:
        return [f"wall time: about {_hours(t['episodes'])} ({flight})"]
    limits = f"model.rpm={run.model.rpm}, model.tpm={run.model.tpm}"
    return [
        f"wall time: about {_hours(t['episodes'] + t['learning'])} (episodes {_hours(t['episodes'])}, bound by "
        f"{binding}; {flight}; {limits}; summary learning {_hours(t['learning'])})"
    ]


def _power_lines(run: RunConfig, plan: PlanConfig, total: Estimate, price, free: bool = False) -> list[str]:
    """Seeds and runs that detect ``plan.difference`` at 80 % power, and what each design costs."""
    from vabench.analysis.power import sample_size_table

    rated = total.per.get("success", [])
    baseline = plan.baseline
    if baseline is None:
        baseline = sum(s * n for s, n in rated) / sum(n for _, n in rated) if rated else PRIORS.baseline
    if not 0 <= baseline + plan.difference <= 1:
        return [f"plan.difference={plan.difference}: baseline {baseline:.2f} + difference is outside [0, 1]"]
    tasks = len(run.tasks)
    table = sample_size_table(baseline, plan.difference, plan.run_sd, tasks=tasks, max_runs=5)
    per_episode = (total.cost(price) or math.nan) / max(total.episodes, 1)
    conditions = len(run.protocols)
    lines = [
        f"to detect a difference of {plan.difference:+.2f} from {baseline:.2f} (run SD {plan.run_sd}) at 80 % power, "
        f"per condition ({tasks} tasks; {conditions} condition(s) in this run):"
    ]
    for _, r in table.iterrows():
        if pd.isna(r["seeds_per_task"]):
            lines.append(f"  {int(r['runs'])} run(s): no number of seeds suffices")
            continue
        episodes, seeds = int(r["episodes_per_condition"]), int(r["seeds_per_task"])
        short = f" (more than the {SEEDS_PER_TASK} verified seeds)" if seeds > SEEDS_PER_TASK else ""
        cost = episodes * conditions * per_episode
        lines.append(
            f"  {int(r['runs'])} run(s) x {seeds} seeds per task{short} = {episodes:,} episodes per "
            f"condition, power {r['power']:.2f}, "
            + ("free" if free else f"{_usd(None if math.isnan(cost) else cost)} for the run's conditions")
        )
    return lines
