"""The cost table (vabench.analysis.costs) against hand-computed numbers: every attempt billed,
per episode and per success, and an unknown price never read as $0; in the notebook helpers and
in ``python -m vabench.analysis``."""

from __future__ import annotations

import math

import pytest

from tests.test_analysis import infra, row, write_run
from vabench.analysis import cost_table, display, load_runs, to_markdown
from vabench.analysis.cli import main

USAGE = dict(model_calls=10, prompt_tokens=1000, cached_tokens=400, completion_tokens=300, reasoning_tokens=100)


def paid(success: bool, seed: int, cost: float | None = 0.25, **kw) -> dict:
    return row(model="gpt", success=success, seed=seed, cost_usd=cost, **USAGE, **kw)


def study() -> list[dict]:
    """gpt active: 3 judged (2 successes) at $0.25 plus an infra attempt of seed 3 that cost $0.10
    before failing; gpt passive: 2 judged (1 success), one of them with an unknown price; the oracle:
    free, 2 judged successes."""
    active = [paid(True, 0), paid(True, 1), paid(False, 2)]
    active.append(infra(model="gpt", seed=3, cost_usd=0.10, model_calls=4, prompt_tokens=500))
    passive = [paid(True, 0, protocol="passive"), paid(False, 1, cost=None, protocol="passive")]
    oracle = [row(model="oracle", success=True, seed=s, privileged=True, cost_usd=0.0, model_calls=8) for s in (0, 1)]
    return active + passive + oracle


def by(table, condition):
    got = table[table["condition"] == condition]
    assert len(got) == 1, got
    return got.iloc[0]


def test_every_attempt_is_billed_and_divided_by_judged_episodes_and_successes(tmp_path):
    write_run(tmp_path / "run", study())
    t = cost_table(load_runs(tmp_path / "run"))
    a = by(t, "gpt | active | summary own")
    assert (a.episodes, a.successes, a.rows, a.model_calls) == (3, 2, 4, 34)
    assert (a.prompt_tokens, a.cached_tokens, a.completion_tokens, a.reasoning_tokens) == (3500, 1200, 900, 300)
    assert a.cost_usd == pytest.approx(0.85) and a.unknown_rows == 0
    assert a.usd_per_episode == pytest.approx(0.85 / 3) and a.usd_per_success == pytest.approx(0.425)
    o = by(t, "oracle | active | summary own (privileged)")
    assert (o.episodes, o.successes, o.cost_usd, o.usd_per_episode, o.usd_per_success) == (2, 2, 0.0, 0.0, 0.0)


def test_an_unknown_price_is_unknown_never_zero(tmp_path):
    write_run(tmp_path / "run", study())
    t = cost_table(load_runs(tmp_path / "run"))
    p = by(t, "gpt | passive | summary own")
    assert (p.episodes, p.successes, p.unknown_rows, p.known_usd) == (2, 1, 1, 0.25)
    assert math.isnan(p.cost_usd) and math.isnan(p.usd_per_episode) and math.isnan(p.usd_per_success)
    model = t[(t["scope"] == "model") & (t["model"] == "gpt")].iloc[0]  # the model's total inherits the unknown
    assert (model.episodes, model.rows, model.unknown_rows, model.known_usd) == (5, 6, 1, pytest.approx(1.10))
    assert math.isnan(model.cost_usd)
    everything = t[t["scope"] == "all"].iloc[0]
    assert (everything.episodes, everything.successes, everything.rows) == (7, 5, 8)
    shown = display(t).set_index("condition")
    assert shown.loc["gpt | passive | summary own", "$"] == ">= $0.2500 (1 unknown)"
    assert shown.loc["gpt | passive | summary own", "$/episode"] == "unknown"
    assert shown.loc["gpt | active | summary own", "$/success"] == "$0.4250"
    assert shown.loc["gpt | active | summary own", "input tokens"] == "3,500"
    assert "unknown price" in " ".join(t.attrs["notes"]) and "$0" not in shown.loc["gpt (all conditions)", "$"]


def test_a_group_with_no_known_price_says_unknown(tmp_path):
    write_run(tmp_path / "run", [paid(True, 0, cost=None), paid(False, 1, cost=None)])
    t = cost_table(load_runs(tmp_path / "run"))
    assert len(t) == 1 and t.iloc[0].unknown_rows == 2
    assert display(t).iloc[0]["$"] == "unknown" and display(t).iloc[0]["$/success"] == "unknown"
    assert "unknown" in to_markdown(t)


def test_the_cli_prints_the_cost_table_and_writes_its_csv(tmp_path, capsys):
    write_run(tmp_path / "run", study())
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--format", "csv"]) == 0
    printed = capsys.readouterr().out
    assert "### Cost per model and condition" in printed and ">= $0.2500 (1 unknown)" in printed
    import pandas as pd

    csv = pd.read_csv(tmp_path / "out" / "costs.csv")
    assert csv.loc[csv["condition"] == "gpt | active | summary own", "cost_usd"].item() == pytest.approx(0.85)
    assert csv.loc[csv["condition"] == "gpt | passive | summary own", "cost_usd"].isna().all()
