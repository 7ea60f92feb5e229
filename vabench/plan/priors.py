"""The plan's measured priors: ``priors.json`` beside this module, made by
``benchmarks/plan_priors.py`` (docs/plan.md says how and what it assumes).

Per protocol, track and task, two kinds of episode measured through the real harness against a
priced fake provider: a failing model's, which spends the whole step budget, and a successful
one's (the servo agent's decisions); the plan mixes them at the paper's success rate for the cell.
Each :class:`Cohort` holds per-step and per-call figures, so it carries over to any model, provider,
render preset and summary: the plan adds the system prompt and the images by the code's own rules.
A cell the paper never runs (passive transfer and long horizon) borrows its cohorts from the base
family's cell of its protocol, else from a measured cell of the protocol with its budget and arms (robot arms).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from vabench.core.errors import ConfigError

PRIORS_FILE = Path(__file__).with_name("priors.json")
FAILURE, SUCCESS = "failure", "success"  # the two kinds of episode (the file's cohort names)


@dataclass(frozen=True)
class Cohort:
    """One kind of episode, per step and per call, with where it was measured."""

    share: float  # steps taken / the task's step budget
    calls_per_step: float  # repairs add calls that take no step
    obs_tokens: float  # the current observation's text per call
    turn_tokens: float  # what each earlier call leaves in a request (its text, its reply, its images' stubs)
    reply_tokens: float
    s_per_step: float  # CPU seconds of the harness and simulator per step (render paper)
    source: str

    @classmethod
    def of(cls, row: dict, budget: int) -> Cohort:
        steps = max(float(row["steps"]), 1.0)
        return cls(
            steps / budget,
            float(row["calls"]) / steps,
            float(row["obs_tokens"]),
            float(row["turn_tokens"]),
            float(row["reply_tokens"]),
            float(row["cpu_s_per_step"]),
            str(row["source"]),
        )


@dataclass(frozen=True)
class Cell:
    """A (protocol, task)'s priors: its two cohorts and the paper's success rate that mixes them."""

    protocol: str
    task: str
    success_rate: float
    success_source: str
    failure: Cohort
    success: Cohort  # the failure cohort where no successful episode was measured (a success then spends the budget)
    borrowed: str | None = None  # "<protocol>/<task>" whose cohorts these are, when not this cell's own
    servo: dict | None = None  # every measured servo episode of the cell: episodes, successes, steps, cpu_s_per_step


@cache
def load(path: Path = PRIORS_FILE) -> dict:
    """The priors file as written: ``made``, ``assumption`` and ``cells``."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"the plan's priors {path} cannot be read ({e}): reinstall vabench") from None


def _rows() -> dict[tuple[str, str], dict]:
    return {(c["protocol"], c["task"]): c for c in load()["cells"]}


def _lender(rows: dict, row: dict, family: str, arms: int) -> dict | None:
    """The measured cell whose cohorts an unmeasured one borrows (module docstring)."""
    own = rows.get((row["protocol"], family))
    if own is not None and FAILURE in own["measured"]:
        return own
    for other in rows.values():
        same = other["protocol"] == row["protocol"] and other["budget"] == row["budget"]
        if same and other["robot_arms"] == arms and FAILURE in other["measured"]:
            return other
    return next((o for o in rows.values() if o["protocol"] == row["protocol"] and FAILURE in o["measured"]), None)


def cell(task: str, protocol: str) -> Cell:
    """The priors of ``task`` in ``protocol``."""
    from vabench.envs.tasks import task_class

    cls = task_class(task)
    rows = _rows()
    row = rows.get((protocol, task))
    if row is None:
        raise ConfigError(f"the plan has no priors for {task} ({protocol}): run benchmarks/plan_priors.py")
    lender = row if FAILURE in row["measured"] else _lender(rows, row, cls.summary_task, len(cls.arms))
    if lender is None:
        raise ConfigError(f"the plan has no measured {protocol} episodes to borrow for {task}")
    failure = Cohort.of(lender["measured"][FAILURE], lender["budget"])
    measured = lender["measured"].get(SUCCESS)
    success = Cohort.of(measured, lender["budget"]) if measured else failure
    borrowed = None if lender is row else f"{lender['protocol']}/{lender['task']}"
    rate, why = float(row["success_rate"]), row["success_source"]
    return Cell(protocol, task, rate, why, failure, success, borrowed, row.get("servo"))


def made() -> str:
    """One line: how and when the priors were measured."""
    m = load()["made"]
    return f"{m['by']} at {m['commit']}, {m['date']}, {m['episodes']} episodes"
