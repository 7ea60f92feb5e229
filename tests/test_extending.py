"""The "Extending" walk-throughs stay true: each test runs every Python block of its page, in order,
in one namespace (a task, a model kind, a robot and a perturbation registered as the page says and
played), then takes the registration out again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vabench.agents.models.kinds import OFFLINE_AGENTS
from vabench.envs.perturb import IMAGE_EFFECTS, KINDS
from vabench.envs.sim.embodiments import EMBODIMENTS
from vabench.envs.tasks.registry import TASKS

PAGES = Path(__file__).resolve().parents[1] / "docs" / "extending"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(page: str) -> list[str]:
    return BLOCK.findall((PAGES / page).read_text())


def follow(page: str, where: Path, monkeypatch) -> dict:
    """Run the page's Python blocks in order in ``where``; the namespace they leave."""
    monkeypatch.chdir(where)
    namespace: dict = {"__name__": f"walkthrough_{page.removesuffix('.md')}"}
    for i, code in enumerate(blocks(page)):
        exec(compile(code, f"docs/extending/{page} (block {i + 1})", "exec"), namespace)  # noqa: S102
    return namespace


@pytest.mark.parametrize("page", ["task.md", "model.md", "robot.md", "perturbation.md"])
def test_every_walkthrough_has_steps_in_python(page):
    assert len(blocks(page)) >= 2


# Each page's registrations, taken out again after the page ran (the pages' own asserts are the checks).
CLEANUP = {
    "task.md": lambda: TASKS.remove("place_small_cube"),
    "model.md": lambda: OFFLINE_AGENTS.remove("open_then_stop"),
    "robot.md": lambda: EMBODIMENTS.remove("xarm7_high"),
    "perturbation.md": lambda: (KINDS.remove("posterize"), IMAGE_EFFECTS.remove("posterize")),
}


@pytest.mark.parametrize("page", sorted(CLEANUP))
def test_follow_the_walkthrough(page, tmp_path, monkeypatch):
    try:
        follow(page, tmp_path, monkeypatch)
    finally:
        CLEANUP[page]()
