"""Nightly: the offline agents through the driver and the full harness, rendering (the oracle on every
manifest seed of every task of every track in both protocols, which also covers the rendered expert
runs), in process (``ray.address=none``), as a laptop user runs them.

The oracle measures the harness + executor ceiling (acceptance: >= 95% per task, and >= 4.5 of 5
objects placed on average in the basket track); the random agent is the floor (<= 2%)."""

from __future__ import annotations

import pytest

from tests.test_launch import composed
from vabench.envs.tasks import tasks_of_track
from vabench.run.config.run import from_config
from vabench.run.driver import Driver

pytestmark = pytest.mark.slow


def run_in_process(tmp_path, *overrides: str):
    cfg = composed("ray.address=none", f"results_dir={tmp_path}", "run_id=nightly", *overrides)
    return Driver(from_config(cfg, tmp_path / "nightly"), log=lambda *_: None, progress=False).execute()


@pytest.mark.parametrize("track", ["base", "transfer", "long_horizon"])
def test_oracle_succeeds_on_95_percent_of_each_task(tmp_path, track):
    df = run_in_process(tmp_path, "model=oracle", f"track={track}", "protocol=both")
    assert (df["status"] == "ok").all() and df["privileged"].all()
    for (task, protocol), mine in df.groupby(["task", "protocol"]):
        assert len(mine) == 20, (task, protocol)
        assert mine["success"].sum() >= 19, f"{task} {protocol}: {sorted(mine.loc[~mine['success'], 'seed'])}"
        if track == "long_horizon":
            assert mine["objects_placed"].mean() >= 4.5, list(mine["objects_placed"])
    assert set(df["task"]) == set(tasks_of_track(track))


@pytest.mark.parametrize("track", ["base", "transfer", "long_horizon"])
def test_random_agent_succeeds_on_at_most_2_percent(tmp_path, track):
    """Six seeds per task keep it within the night (each random episode spends its whole budget)."""
    df = run_in_process(tmp_path, "model=random", "model.extra.seed=11", f"track={track}", "seeds=6")
    assert len(df) == 6 * len(tasks_of_track(track)) and (df["status"] == "ok").all() and (df["repairs"] == 0).all()
    assert df["success"].sum() <= 0.02 * len(df)
