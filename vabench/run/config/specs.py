"""A run configuration expanded into (condition x task x seed x run) episode specs
(:class:`vabench.results.episodes.EpisodeSpec`), each with a deterministic place in the run folder."""

from __future__ import annotations

from vabench.results.episodes import EpisodeSpec
from vabench.run.config.run import RunConfig


def seeds_for(run: RunConfig, task: str) -> list[int]:
    """The seeds ``run`` plays of ``task``: its split's verified seeds (the evaluation manifest's, or
    under ``split=train`` the training split's), the first N of them, or those named."""
    from vabench.envs.seeds import split_seeds

    if isinstance(run.seeds, tuple):
        return list(run.seeds)
    verified = split_seeds(task, run.condition.robot, run.split)
    return verified if run.seeds is None else verified[: run.seeds]


def expand(run: RunConfig) -> list[EpisodeSpec]:
    """Every episode of the run: runs x conditions (one per protocol) x tasks x seeds, in that
    nesting. A task's track and base task come from its registered class."""
    from vabench.envs.tasks import task_class

    specs = []
    for run_index in range(1, run.options.runs + 1):
        for condition in run.conditions:
            for task in run.tasks:
                cls = task_class(task)
                specs += [
                    EpisodeSpec(condition, task, seed, run_index, cls.track, cls.summary_task)
                    for seed in seeds_for(run, task)
                ]
    return specs
