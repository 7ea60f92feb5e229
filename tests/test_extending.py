"""The "Extending" walk-throughs stay true: each test runs every Python block of its page, in order,
in one namespace (a task, a model kind, a robot and a perturbation registered as the page says and
played), then takes the registration out again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vabench.agents.registry import OFFLINE_AGENTS
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


def test_add_a_model_kind(tmp_path, monkeypatch):
    try:
        done = follow("model.md", tmp_path, monkeypatch)
        assert done["row"].end_reason == "stop"
        assert (tmp_path / "open_then_stop" / "events.jsonl").is_file()
    finally:
        OFFLINE_AGENTS.remove("open_then_stop")


def test_add_a_perturbation(tmp_path, monkeypatch):
    try:
        follow("perturbation.md", tmp_path, monkeypatch)
    finally:
        KINDS.remove("posterize")
        IMAGE_EFFECTS.remove("posterize")


def test_add_a_task(tmp_path, monkeypatch):
    try:
        done = follow("task.md", tmp_path, monkeypatch)
        assert done["row"].privileged and done["accepted"][0] >= 1000
    finally:
        TASKS.remove("place_small_cube")


def test_add_a_robot(tmp_path, monkeypatch):
    try:
        follow("robot.md", tmp_path, monkeypatch)
    finally:
        EMBODIMENTS.remove("xarm7_high")
