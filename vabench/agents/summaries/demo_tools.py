"""The demonstrations a model learns from, as tools: ``expert.retrieve`` (a compact frame index)
and ``expert.frame`` (up to 8 RGB frames per call), with the record of which distinct frames were
inspected, which gates ``expert.learn`` (at least 3 per demo; reference notes section 6).

Held-out variants reuse their base task's demo and the basket task learns from four atomic-skill
videos (no full-task demo): both facts are registered with the task class. Nothing here imports the
simulator at module import time.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vabench.agents.chat.tools import ToolResult
from vabench.core.errors import NotFound, VabenchError
from vabench.core.vocab import Render

MIN_DISTINCT_FRAMES = 3  # per demo, before expert.learn (reference gate)
MAX_FRAMES_PER_CALL = 8  # expert.frame {"steps": [...]}

RGB_ONLY_NOTE = (
    "The demonstration is RGB only: no end-effector poses, actions, joint states, gripper values, object "
    "coordinates or phase labels are available, and frames are evenly spaced in time (step i is at i/fps seconds)."
)


class DemoError(VabenchError, ValueError):
    """A demo directory exists but its manifest is not a valid ``vabench.demo.v1`` demo."""


# ---------------------------------------------------------------------------------------------
# Task -> demos / summary task: facts of the registered task class (vabench.envs.tasks.registry)


def summary_task(task: str) -> str:
    """The task whose summary ``task`` uses: a held-out variant's base task, else the task itself."""
    from vabench.envs.tasks import task_class  # imports the simulator; only when a task is named

    return task_class(task).summary_task


def task_demos(task: str) -> tuple[str, ...]:
    """The demos a summary of ``task`` is learned from (several for a composite task)."""
    from vabench.envs.tasks import task_class

    return task_class(task).demos


# ---------------------------------------------------------------------------------------------
# Demonstrations and the expert.* tools


@dataclass(frozen=True)
class Demo:
    """One recorded demo: frame ``i`` is ``frames[i]``; the step a model names is the frame index."""

    name: str
    path: Path
    instruction: str
    frames: tuple[Path, ...]
    fps: float
    width: int
    height: int

    @property
    def last(self) -> int:
        return len(self.frames) - 1


def show_value(value: Any, limit: int = 60) -> str:
    """A value for an error message, truncated so a huge argument cannot flood the reply."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def load_demo(name: str, root: Path | None = None, preset: str = Render.PAPER) -> Demo:
    """Read and check ``<root>/<preset>/<name>/demo.json`` (root: ``$VABENCH_CACHE/demos``)."""
    from vabench.envs.demo_recorder import DEMO_FORMAT, demo_dir

    directory = demo_dir(name, root, preset)
    manifest = directory / "demo.json"
    if not manifest.is_file():
        raise NotFound(
            f"no demonstration of {name} at {manifest}; record it with "
            f"`python -m vabench.envs.cli.demos --task {name} --render {preset}`"
        )
    try:
        meta = json.loads(manifest.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DemoError(f"{manifest} is not valid JSON: {e}") from e

    def bad(what: str) -> DemoError:
        return DemoError(f"{manifest}: {what}")

    if not isinstance(meta, dict) or meta.get("format") != DEMO_FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else meta
        raise bad(f"format is {show_value(found)}, not {DEMO_FORMAT!r}")
    if meta.get("task") != name:
        raise bad(f"task is {show_value(meta.get('task'))}, not {name!r}")
    frames = meta.get("frames")
    if not isinstance(frames, list) or not frames:
        raise bad("'frames' must be a non-empty list of file names")
    paths = []
    for f in frames:
        if not isinstance(f, str) or not f or Path(f).name != f or f in (".", ".."):
            raise bad(f"frame entry {show_value(f)} is not a plain file name")
        if not (directory / f).is_file():
            raise bad(f"frame file {f} is missing")
        paths.append(directory / f)
    fps = meta.get("fps")
    if not isinstance(fps, int | float) or isinstance(fps, bool) or not math.isfinite(fps) or fps <= 0:
        raise bad(f"'fps' must be a positive number; got {show_value(fps)}")
    for key in ("width", "height"):
        if not is_int(meta.get(key)) or meta[key] <= 0:
            raise bad(f"{key!r} must be a positive integer; got {show_value(meta.get(key))}")
    instruction = meta.get("instruction")
    if not isinstance(instruction, str):
        raise bad(f"'instruction' must be a string; got {show_value(instruction)}")
    return Demo(name, directory, instruction, tuple(paths), float(fps), meta["width"], meta["height"])


class DemoStore:
    """The demonstration(s) a summary of ``task`` is learned from, served through ``expert.retrieve``
    and ``expert.frame``, with the record of which distinct frames the model inspected."""

    def __init__(self, task: str, root: Path | None = None, preset: str = Render.PAPER):
        self.task = task
        self.summary_task = summary_task(task)
        self.demos: dict[str, Demo] = {name: load_demo(name, root, preset) for name in task_demos(task)}
        self.retrieved = False
        self._inspected: set[tuple[str, int]] = set()

    @property
    def inspected(self) -> list[tuple[str, int]]:
        """Distinct (demo, frame) pairs returned by ``expert.frame`` so far, sorted."""
        return sorted(self._inspected)

    def counts(self) -> dict[str, int]:
        """Distinct frames inspected per demo (every demo listed, zeros included)."""
        out = dict.fromkeys(self.demos, 0)
        for demo, _ in self._inspected:
            out[demo] += 1
        return out

    def retrieve(self, args: dict | None = None) -> ToolResult:
        """``expert.retrieve``: one line per demo (not one per frame: the reference's 800-line listing
        costs tokens and says nothing more). Arguments are ignored; any call unlocks ``expert.frame``."""
        several = len(self.demos) > 1
        lines = [f"Expert demonstration for task {self.summary_task}: {len(self.demos)} RGB video(s)."]
        for d in self.demos.values():
            lines.append(
                f"demo {d.name}: frames 0..{d.last} ({len(d.frames)} RGB frames, {d.fps:.3g} fps, "
                f"{d.width}x{d.height}, step = frame index); demo instruction: {d.instruction}"
            )
        lines.append(RGB_ONLY_NOTE)
        demo_arg = ', "demo": <name>' if several else ""
        lines.append(
            f'Inspect frames with expert.frame {{"steps": [i, j, ...]{demo_arg}}} (at most {MAX_FRAMES_PER_CALL} '
            "per call" + ('; "demo" is required because there are several demos' if several else "") + "). "
            "Choose frames that cover the start, the approach, the grasp/close and the end."
        )
        per = " of each demo" if several else ""
        lines.append(
            f"expert.learn is accepted only after at least {MIN_DISTINCT_FRAMES} distinct frames{per} "
            "have been inspected."
        )
        self.retrieved = True
        return ToolResult("\n".join(lines))

    def _frame_request(self, args: Any) -> tuple[Demo, list[int]]:
        """Validated (demo, frame indices) of an ``expert.frame`` call; ValueError says what is wrong."""
        if not isinstance(args, dict):
            raise DemoError(f"expert.frame args must be a JSON object; got {show_value(args)}")
        names = list(self.demos)
        if "demo" in args:
            name = args["demo"]
            if not isinstance(name, str) or name not in self.demos:
                raise DemoError(f"field 'demo' is {show_value(name)}; allowed: {', '.join(names)}")
        elif len(names) > 1:
            raise DemoError(f"field 'demo' is required: this task has {len(names)} demos ({', '.join(names)})")
        else:
            name = names[0]
        demo = self.demos[name]
        if "step" in args and "steps" in args:
            raise DemoError("give either field 'step' or field 'steps', not both")
        if "step" in args:
            raw, field = [args["step"]], "step"
        elif "steps" in args:
            raw, field = args["steps"], "steps"
            if not isinstance(raw, list):
                raise DemoError(f"field 'steps' must be a list of frame indices; got {show_value(raw)}")
            if not raw:
                raise DemoError(f"field 'steps' is empty; give 1 to {MAX_FRAMES_PER_CALL} frame indices")
            if len(raw) > MAX_FRAMES_PER_CALL:
                raise DemoError(f"field 'steps' has {len(raw)} entries; at most {MAX_FRAMES_PER_CALL} frames per call")
        else:
            raise DemoError(
                f"field 'steps' is missing; give 'step': <int> or 'steps': [<int>, ...] "
                f"(at most {MAX_FRAMES_PER_CALL}), frame indices 0..{demo.last}"
            )
        steps: list[int] = []
        for i, v in enumerate(raw):
            where = field if field == "step" else f"steps[{i}]"
            if not is_int(v):
                raise DemoError(f"field '{where}' must be an integer frame index 0..{demo.last}; got {show_value(v)}")
            if not 0 <= v <= demo.last:
                raise DemoError(f"frame {v} is outside 0..{demo.last} of demo {demo.name}")
            if v not in steps:
                steps.append(v)
        return demo, steps

    def frame(self, args: dict) -> ToolResult:
        """``expert.frame``: up to 8 frames of one demo, a caption per frame and the PNGs in the same order."""
        if not self.retrieved:
            return ToolResult(
                'expert.frame is refused: call expert.retrieve {"mode": "trajectory"} first to get the frame index.',
                ok=False,
            )
        try:
            demo, steps = self._frame_request(args)
        except ValueError as e:
            return ToolResult(f"expert.frame is refused: {e}", ok=False)
        lines = [f"demo {demo.name} frame {i}/{demo.last} (t = {i / demo.fps:.2f} s)" for i in steps]
        self._inspected.update((demo.name, i) for i in steps)
        counts = ", ".join(f"{name} {n}" for name, n in self.counts().items())
        lines.append(
            f"The {len(steps)} image(s) follow in the order listed (RGB only: no poses, actions, joint states, "
            "object coordinates or phase labels)."
        )
        lines.append(f"Distinct frames inspected so far: {counts} (expert.learn needs {MIN_DISTINCT_FRAMES} per demo).")
        return ToolResult("\n".join(lines), [demo.frames[i] for i in steps])

    def learn_gate(self) -> str | None:
        """None when ``expert.learn`` may store a summary, else why it is blocked."""
        if not self.retrieved:
            return 'expert.learn is blocked until expert.retrieve {"mode": "trajectory"} has returned the frame index.'
        short = {name: n for name, n in self.counts().items() if n < MIN_DISTINCT_FRAMES}
        if not short:
            return None
        listing = ", ".join(f"{name} {n}/{MIN_DISTINCT_FRAMES}" for name, n in short.items())
        scope = "of each demo " if len(self.demos) > 1 else ""
        return (
            f"expert.learn is blocked until at least {MIN_DISTINCT_FRAMES} distinct frames {scope}have been "
            f"inspected with expert.frame; incomplete: {listing}."
        )
