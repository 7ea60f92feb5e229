"""Nightly: the offline agents through the full harness, rendering (the oracle on every manifest seed
of every task in both protocols, which also covers the rendered expert runs).

The oracle measures the harness + executor ceiling (acceptance: >= 95% per task, and >= 4.5 of 5
objects placed on average in the basket track); the random agent is the floor (<= 2%)."""

from __future__ import annotations

import pytest

from vabench.agents.evaluate import evaluate
from vabench.agents.offline import OracleAgent, RandomAgent
from vabench.envs import TASKS

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("protocol", ["active", "passive"])
def test_oracle_succeeds_on_95_percent_of_each_task(render_env, tmp_path, protocol):
    rows = evaluate(render_env, OracleAgent(), sorted(TASKS), [protocol], tmp_path, log=lambda *_: None)
    for task in TASKS:
        mine = [r for r in rows if r.task == task]
        assert len(mine) == 20 and all(r.status == "ok" and r.privileged for r in mine)
        assert sum(r.success for r in mine) >= 19, f"{task}: {[r.seed for r in mine if not r.success]}"
        if hasattr(TASKS[task], "objects_placed"):
            assert sum(r.objects_placed for r in mine) / len(mine) >= 4.5, [r.objects_placed for r in mine]


def test_random_agent_succeeds_on_at_most_2_percent(render_env, tmp_path):
    """Six seeds per task keep it within the night (each random episode spends its whole budget)."""
    rows = evaluate(render_env, RandomAgent(seed=11), sorted(TASKS), ["active"], tmp_path, 6, log=lambda *_: None)
    assert len(rows) == 6 * len(TASKS) and all(r.status == "ok" and r.repairs == 0 for r in rows)
    assert sum(r.success for r in rows) <= 0.02 * len(rows)
