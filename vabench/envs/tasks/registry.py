"""The task registry: a task family registers itself with :func:`register_task`, which also sets the
facts other layers need, on the class, once:

- ``track``: ``base``, ``transfer`` (a held-out variant) or ``long_horizon``;
- ``summary_task``: the task whose summary (and demonstration) it uses: its own name, or for a
  held-out variant its base family;
- ``demos``: the demonstrations a summary of it is learned from: its own demo for a base task,
  its base family's for a variant, or the atomic-skill demos of a composite task.

Every module in this package is imported by the package itself, so adding a task family is one
file plus its seed manifest (``envs/seed_manifests/<name>.json``).
"""

from __future__ import annotations

from vabench.core.registry import Registry
from vabench.core.vocab import Track
from vabench.core.vocab import track as check_track

TASKS: Registry[type] = Registry("task", how="python -m vabench.tasks lists them")


def register_task(track: str = Track.BASE, summary_task: str | None = None, demos: tuple[str, ...] | None = None):
    """Class decorator: file the task under its ``name`` with its track, summary task and demos."""
    check_track(track)

    def add(cls: type) -> type:
        name = cls.__dict__.get("name")
        if not isinstance(name, str) or not name:
            raise TypeError(f"{cls.__qualname__} must set its own class attribute 'name' to register")
        if name in TASKS and TASKS[name] is not cls:
            raise ValueError(f"task {name!r} is registered twice: {TASKS[name].__qualname__} and {cls.__qualname__}")
        base = summary_task or name
        if base != name and base not in TASKS:
            raise ValueError(f"{name}: summary_task {base!r} is not registered (register the base family first)")
        cls.track, cls.summary_task = track, base
        cls.demos = tuple(demos) if demos else (TASKS[base].demos if base != name else (name,))
        return TASKS.add(name, cls)

    return add


def task_class(name: str) -> type:
    """The registered class of task ``name``; UnknownName (a ValueError) names the closest one."""
    return TASKS[name]


def tasks_of_track(track: str) -> tuple[str, ...]:
    """The registered tasks of a track, sorted by name."""
    check_track(track)
    return tuple(sorted(n for n, cls in TASKS.items() if cls.track == track))


def demo_tasks() -> tuple[str, ...]:
    """Tasks that have a demonstration of their own (base tasks whose demo is their own)."""
    return tuple(sorted(n for n, cls in TASKS.items() if cls.demos == (n,)))


def episode_budget(condition, task: str) -> int:
    """The step budget of an episode of ``task`` (its name) under ``condition``: the control mode's
    task budget (vabench.envs.control) times the condition's budget scale. One rule for the loop,
    the seat and the plan."""
    from ..control import task_budget

    return condition.budget(task_budget(task_class(task), condition.control))
