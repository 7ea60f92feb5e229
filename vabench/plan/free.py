"""The plan of an offline agent (oracle, random, servo, posetext, replay, policy): free, since no
provider is called, so it counts steps and time only; an episode's step budget is the condition's
(the task's times ``budget_scale``: a policy's is 10 by default, :mod:`vabench.agents.models.policy`)."""

from __future__ import annotations

from pathlib import Path

from vabench.envs.tasks import episode_budget
from vabench.plan.estimate import Estimate
from vabench.run.config.run import RunConfig


def step_budget(run: RunConfig, task: str) -> tuple[int, str]:
    """The steps an episode of ``task`` may take with this agent, and why."""
    budget = episode_budget(run.condition, task)  # the control mode's, x budget_scale
    replay = _replay(run)
    if replay is not None:
        return min(len(replay.recorded), replay.step_budget(budget)), f"the record's {replay.said}"
    scale = run.condition.budget_scale
    return budget, "the step budget" + (f" (the task's x budget_scale={scale:g})" if scale != 1 else "")


def _replay(run: RunConfig):
    """The replay agent of ``model=replay`` (its record read), else None."""
    from vabench.agents.models.offline import replay

    record = run.model.extra.get("record")
    return replay(Path(record)) if run.model.id == "replay" and record else None


def offline_episode(run: RunConfig, task: str, protocol: str) -> tuple[Estimate, str]:
    """One episode's steps (as ``calls``: one answer a step) and time, and where they come from:
    the servo's measured episodes for the servo, else the whole budget (an upper bound)."""
    from vabench.agents.models.servo.agent import ServoAgent
    from vabench.plan.priors import cell

    prior = cell(task, protocol)
    most, why = step_budget(run, task)
    servo = prior.servo if run.model.id == ServoAgent().name else None
    if servo:
        steps, s_per_step = min(float(servo["steps"]), most), float(servo["cpu_s_per_step"])
        source = f"the servo's measured episodes ({servo['successes']} of {servo['episodes']} succeeded)"
    else:
        steps, s_per_step, source = float(most), prior.failure.s_per_step, f"at most: {why}"
    return Estimate(1, steps, most, wall_s=steps * s_per_step), source
