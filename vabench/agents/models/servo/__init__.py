"""The servo agent: a non-privileged offline agent that acts from exactly what a model sees."""

from .agent import ServoAgent

__all__ = ["ServoAgent"]
