"""What the env API hands back: an :class:`Observation` (everything a model may see at one decision
point, and nothing else) and a :class:`StepResult` (one step's outcome around it)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .sim.robot import ArmProprio


@dataclass(frozen=True)
class Observation:
    """Everything a model may see at one decision point, and nothing else."""

    task: str
    instruction: str
    protocol: str
    arms: tuple[str, ...]
    images: dict[str, np.ndarray]  # "active", or the five passive views in the paper's order
    proprio: dict[str, ArmProprio]
    step: int
    budget: int
    budget_left: int
    last_action: str | None = None
    action_valid: bool | None = None
    planner_success: bool | None = None
    feedback: str = ""


@dataclass(frozen=True)
class StepResult:
    observation: Observation
    success: bool
    done: bool
    action_valid: bool
    planner_success: bool
    feedback: str
    step: int
    budget_left: int
    kind: str = ""  # camera | robot | invalid
