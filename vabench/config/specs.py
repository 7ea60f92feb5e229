"""A run configuration expanded into (condition x task x seed x run) episode specs
(:class:`vabench.episodes.EpisodeSpec`), each with a deterministic place in the run folder."""

from __future__ import annotations

from vabench.agents.registry import is_offline
from vabench.config.run import RunConfig
from vabench.episodes import EpisodeSpec
from vabench.vocab import SummaryKind, intervention_label


def summary_source(run: RunConfig) -> str:
    """Offline agents read no summary: their episodes say ``none`` whatever the condition asked."""
    return SummaryKind.NONE if is_offline(run.model.model) else str(run.summary)


def expand(run: RunConfig) -> list[EpisodeSpec]:
    """Every episode of the run: runs x protocols x tasks x seeds, in that nesting. A task's track
    and base task come from its registered class."""
    from vabench.envs.seeds import eval_seeds
    from vabench.envs.tasks import task_class

    specs = []
    for run_index in range(1, run.runs + 1):
        for protocol in run.protocols:
            for task in run.tasks:
                verified = eval_seeds(task, run.robot)
                if run.seeds is None:
                    seeds = verified
                elif isinstance(run.seeds, int):
                    seeds = verified[: run.seeds]
                else:
                    seeds = list(run.seeds)
                cls = task_class(task)
                for seed in seeds:
                    specs.append(
                        EpisodeSpec(
                            run.model_name,
                            protocol,
                            summary_source(run),
                            cls.track,
                            task,
                            cls.summary_task,
                            seed,
                            run_index,
                            run.harness.observation,
                            run.render,
                            intervention_label(run.harness.intervention, summary_source(run)),
                            run.robot,
                            run.perturbation.label,
                        )
                    )
    return specs
