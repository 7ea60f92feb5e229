"""Task families, by name. Each family is one small file that reads like its row in the paper and
registers itself with ``@register_task`` (:mod:`.registry`); this package imports every module in
it, so there is no list to keep: a new family is its file plus its seed manifest.
"""

from __future__ import annotations

import importlib
import pkgutil

from .base import Task
from .registry import TASKS, demo_tasks, episode_budget, register_task, task_class, tasks_of_track

_NOT_TASKS = {"base", "expert", "registry"}
for _module in pkgutil.iter_modules(__path__):
    if _module.name not in _NOT_TASKS:
        importlib.import_module(f"{__name__}.{_module.name}")


def make_task(name: str) -> Task:
    """A fresh instance of task ``name`` (one per episode)."""
    return task_class(name)()


__all__ = [
    "TASKS",
    "Task",
    "demo_tasks",
    "episode_budget",
    "make_task",
    "register_task",
    "task_class",
    "tasks_of_track",
]
