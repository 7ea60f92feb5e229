"""Task families, by name. Each family is one small file that reads like its row in the paper."""

from __future__ import annotations

from .base import Task
from .grasp_single_cube import GraspSingleCube
from .place_cube_in_bowl import PlaceCubeInBowl

TASKS: dict[str, type[Task]] = {cls.name: cls for cls in (GraspSingleCube, PlaceCubeInBowl)}


def make_task(name: str) -> Task:
    try:
        return TASKS[name]()
    except KeyError:
        raise KeyError(f"unknown task {name!r}; available: {', '.join(sorted(TASKS))}") from None


__all__ = ["TASKS", "Task", "make_task"]
