"""Tools a model may call between env steps. They never advance the simulator."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from vabench.core.boundary import ToolResult


class EpisodeTools:
    """``camera.history`` and ``geometry.verify`` for one evaluation episode.

    Both answer from what the model has already been shown (its own frames) or may always know
    (proprioception); neither touches the simulator. Under the ``depth_point`` intervention
    (vabench.core.interventions) ``perception.depth_point`` is a third: ``depth(view, u, v)`` reads the
    world point under a pixel of the current image from the env's depth buffer.
    """

    NAMES = ("camera.history", "geometry.verify")
    DEPTH = "perception.depth_point"

    def __init__(self, depth: Callable | None = None):
        self.frames: dict[int, dict[str, Path]] = {}  # step -> view -> model-facing frame
        self.sizes: dict[str, tuple[int, int]] = {}  # view -> (width, height) of the current image
        self.proprio: dict = {}
        self.depth = depth
        self.names = (*self.NAMES, self.DEPTH) if depth else self.NAMES

    def observe(self, step: int, frames: dict[str, Path], proprio: dict, sizes: dict | None = None) -> None:
        if frames:
            self.frames[step] = dict(frames)
        self.proprio, self.sizes = proprio, dict(sizes or {})

    def call(self, name: str, args: dict) -> ToolResult:
        if name == "camera.history":
            return self._history(args)
        if name == "geometry.verify":
            return ToolResult(json.dumps(self_geometry(self.proprio), indent=1))
        if name == self.DEPTH and self.depth:
            return self._depth(args)
        return ToolResult(f"unknown tool {name!r}; allowed: {', '.join(self.names)}", ok=False)

    def _depth(self, args: dict) -> ToolResult:
        """The world point under a pixel of the current image (one view: ``view`` may be left out)."""
        views = list(self.sizes)
        view = args.get("view", views[0] if len(views) == 1 else None)
        if view not in self.sizes:
            return ToolResult(f"field 'view' must be one of {', '.join(views)}, got {str(view)[:40]!r}", ok=False)
        w, h = self.sizes[view]
        u, v = args.get("u"), args.get("v")
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (u, v)) or not (0 <= u < w and 0 <= v < h):
            return ToolResult(f"fields 'u' and 'v' must be integer pixels with 0 <= u < {w} and 0 <= v < {h}", ok=False)
        point = self.depth(view, u, v)
        if point is None:
            return ToolResult(f"pixel ({u}, {v}) of view {view}: no surface", data={"point": None})
        shown = [round(float(c), 4) for c in point]  # the text's numbers, and the data's: one answer
        return ToolResult(f"pixel ({u}, {v}) of view {view}: world point {shown}", data={"point": shown})

    def _history(self, args: dict) -> ToolResult:
        steps = sorted(self.frames)
        step = args.get("step", steps[-1] if steps else None)
        if isinstance(step, bool) or not isinstance(step, int):
            return ToolResult(f"field 'step' must be an integer step number; available: {_ranges(steps)}", ok=False)
        if step not in self.frames:
            return ToolResult(f"no image for step {step}; available: {_ranges(steps)}", ok=False)
        views = self.frames[step]
        view = args.get("view", next(iter(views)))
        if not isinstance(view, str) or view not in views:
            return ToolResult(f"field 'view' must be one of {', '.join(views)}, got {str(view)[:40]!r}", ok=False)
        return ToolResult(f"history image: step {step}, view {view}", [views[view]])


def _ranges(steps: list[int]) -> str:
    if not steps:
        return "none"
    return f"{steps[0]}..{steps[-1]}" if steps == list(range(steps[0], steps[-1] + 1)) else str(steps)


def self_geometry(proprio: dict) -> dict:
    """The gripper's own geometry per arm, derived from proprioception only."""
    out = {}
    for arm, p in proprio.items():
        ee, gc, rx = np.array(p.ee_position), np.array(p.gc), np.array(p.rx)
        to_gc = gc - ee
        length = float(np.linalg.norm(to_gc))
        direction = to_gc / length if length > 1e-6 else rx
        angles = {
            name: round(float(np.degrees(np.arccos(np.clip(direction @ axis, -1, 1)))), 1)
            for name, axis in (
                ("+x", (1, 0, 0)),
                ("-x", (-1, 0, 0)),
                ("+y", (0, 1, 0)),
                ("-y", (0, -1, 0)),
                ("+z", (0, 0, 1)),
                ("-z", (0, 0, -1)),
            )
        }
        out[arm] = {
            "gripper": "closed" if p.gripper_closed else "open",
            "end_effector": [round(float(v), 4) for v in ee],
            "gc": [round(float(v), 4) for v in gc],
            "approach_direction": [round(float(v), 4) for v in direction],
            "ee_to_gc_m": round(length, 4),
            "approach_angle_to_world_axes_deg": angles,
            "approach_angle_to_straight_down_deg": angles["-z"],
            "topdown_within_30deg": angles["-z"] <= 30.0,
            "topdown_within_45deg": angles["-z"] <= 45.0,
            "local_axes_world": {k: [round(float(v), 4) for v in getattr(p, k)] for k in ("rx", "ry", "rz")},
        }
    return out
