"""Paired statistics on shared seeds (exact McNemar per task, seed-cluster bootstrap of the macro
difference) and the power / sample-size calculator, checked against the textbook two-proportion
formula (computed here independently) and against simulation."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest, norm

from vabench.analysis import mcnemar_exact, paired_comparison, paired_outcomes, to_markdown
from vabench.analysis.power import (
    episodes_needed,
    excess_sd,
    main,
    power_of,
    runs_needed,
    sample_size_table,
    simulate_power,
)


# ------------------------------------------------------------------------------------------ paired
def row(model, task, seed, run_index, success, arms="single") -> dict:
    return dict(experiment="x", model=model, protocol="active", summary_source="own", track="base", task=task,
                arms=arms, seed=seed, run_index=run_index, attempt=1, status="ok", success=bool(success),
                condition=f"{model} | active | summary own", privileged=False)  # fmt: skip


A, B = "A | active | summary own", "B | active | summary own"


def test_exact_mcnemar_per_task_and_the_paired_table():
    rows = []
    # cube: 6 seeds x 1 run; B succeeds on 5 where A fails, A never succeeds where B fails
    for s in range(6):
        rows += [row("A", "grasp_single_cube", s, 1, s == 5), row("B", "grasp_single_cube", s, 1, True)]
    # pot: 4 seeds, discordant 1 (A only) and 1 (B only)
    for s, (a, b) in enumerate([(1, 0), (0, 1), (1, 1), (0, 0)]):
        rows += [row("A", "lift_pot", s, 1, a, "dual"), row("B", "lift_pot", s, 1, b, "dual")]
    rows.append(row("B", "lift_pot", 9, 1, True, "dual"))  # no partner: left out, noted
    f = paired_comparison(pd.DataFrame(rows), A, B, n_boot=500).set_index("task")
    cube, pot = f.loc["grasp_single_cube"], f.loc["lift_pot"]
    assert (cube["pairs"], cube["a_k"], cube["b_k"], cube["a_only"], cube["b_only"]) == (6, 1, 6, 0, 5)
    assert cube["mcnemar_p"] == pytest.approx(2 * 0.5**5) == binomtest(5, 5, 0.5).pvalue
    assert cube["delta_pp"] == pytest.approx(100 * 5 / 6)
    assert pot["mcnemar_p"] == 1.0 and pot["delta_pp"] == 0.0
    assert f.loc["all", "delta_pp"] == pytest.approx((100 * 5 / 6 + 0) / 2)  # equal family weight
    assert math.isnan(mcnemar_exact(0, 0))
    notes = " ".join(f.attrs["notes"])
    assert "without a partner left out: A 0, B 1" in notes
    assert "| lift_pot | 4 (4) | 2/4 | 2/4 | 1 / 1 | 0.00 |" in to_markdown(paired_comparison(pd.DataFrame(rows), A, B))
    with pytest.raises(ValueError, match="no rows of condition"):
        paired_comparison(pd.DataFrame(rows), A, "C | active | summary own")


def test_the_bootstrap_resamples_seeds_within_families_keeping_a_seeds_runs_together():
    rows = []
    for s in range(8):
        # family 1: B always +1 -> its difference is 100 pp in every resample
        rows += [row("A", "grasp_single_cube", s, 1, False), row("B", "grasp_single_cube", s, 1, True)]
        # family 2: seed s, run 1: B +1; run 2: B -1 -> each seed's net difference is 0
        rows += [row("A", "place_cube_in_bowl", s, 1, False), row("B", "place_cube_in_bowl", s, 1, True)]
        rows += [row("A", "place_cube_in_bowl", s, 2, True), row("B", "place_cube_in_bowl", s, 2, False)]
    df = pd.DataFrame(rows)
    f = paired_comparison(df, A, B, n_boot=400, seed=3).set_index("task")
    # resampling seeds within each family (runs together) leaves the macro difference at exactly 50 pp;
    # resampling families, or single pairs, would spread it
    assert (f.loc["all", "ci_low_pp"], f.loc["all", "delta_pp"], f.loc["all", "ci_high_pp"]) == (50.0, 50.0, 50.0)
    pairs = paired_outcomes(df, A, B)
    assert len(pairs) == 24 and set(pairs.columns) >= {"task", "seed", "run_index", "ya", "yb"}

    rng = np.random.default_rng(0)  # a family with a real spread: the interval is seeded and brackets delta
    noisy = []
    for s in range(30):
        a, b = rng.random() < 0.3, rng.random() < 0.6
        noisy += [row("A", "grasp_single_pen", s, 1, a), row("B", "grasp_single_pen", s, 1, b)]
    g1 = paired_comparison(pd.DataFrame(noisy), A, B, n_boot=1000, seed=7).set_index("task").loc["all"]
    g2 = paired_comparison(pd.DataFrame(noisy), A, B, n_boot=1000, seed=7).set_index("task").loc["all"]
    assert g1["ci_low_pp"] < g1["delta_pp"] < g1["ci_high_pp"] and g1["ci_low_pp"] == g2["ci_low_pp"]
    d = np.array([r["success"] for r in noisy[1::2]], float) - np.array([r["success"] for r in noisy[::2]], float)
    boot = np.random.default_rng(7).integers(0, 30, size=(1000, 30))  # the same draws, by hand
    expect = np.quantile(100 * d[boot].mean(axis=1), [0.025, 0.975])
    assert (g1["ci_low_pp"], g1["ci_high_pp"]) == pytest.approx(tuple(expect))


# ------------------------------------------------------------------------------------------- power
def textbook_n(p1: float, p2: float, alpha=0.05, power=0.8) -> float:
    """n per group = (z_{1-a/2} sqrt(2 pbar qbar) + z_{1-b} sqrt(p1 q1 + p2 q2))^2 / d^2."""
    za, zb, pbar = norm.ppf(1 - alpha / 2), norm.ppf(power), (p1 + p2) / 2
    return (za * math.sqrt(2 * pbar * (1 - pbar)) + zb * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) ** 2 / (p2 - p1) ** 2


@pytest.mark.parametrize(("p1", "p2"), [(0.3, 0.5), (0.5, 0.6), (0.1, 0.05), (0.54, 0.28)])
def test_closed_form_matches_the_textbook_two_proportion_formula(p1, p2):
    n = textbook_n(p1, p2)
    assert episodes_needed(p1, p2) == math.ceil(n)
    assert episodes_needed(p1, p2, runs=3) == math.ceil(n / 3)  # no run effect: runs and seeds trade 1:1
    assert power_of(p1, p2, math.ceil(n)) >= 0.8 > power_of(p1, p2, math.floor(0.9 * n))
    assert episodes_needed(p1, p2, power=0.9) == math.ceil(textbook_n(p1, p2, power=0.9))


def test_simulation_agrees_with_the_closed_form():
    n = math.ceil(textbook_n(0.3, 0.5))  # 93
    assert n == 93
    assert simulate_power(0.3, 0.5, n, n_sim=20000, seed=1) == pytest.approx(0.80, abs=0.015)
    # with a run effect: runs needed at 280 episodes per run (closed form) vs simulated power
    r = runs_needed(0.5, 0.6, 280, run_sd=0.03)
    assert r == 3
    assert simulate_power(0.5, 0.6, 280, r, 0.03, n_sim=20000, seed=2) >= 0.8
    assert simulate_power(0.5, 0.6, 280, r - 1, 0.03, n_sim=20000, seed=2) < 0.75
    assert simulate_power(0.5, 0.6, 280, 2, 0.03, n_sim=20000, seed=2) == pytest.approx(
        power_of(0.5, 0.6, 280, 2, 0.03), abs=0.02
    )


def test_a_run_effect_makes_some_designs_unreachable_and_the_table_says_so():
    assert episodes_needed(0.5, 0.55, runs=1, run_sd=0.03) == math.inf  # run effect alone too large
    finite = episodes_needed(0.5, 0.55, runs=6, run_sd=0.03)
    assert finite < math.inf and power_of(0.5, 0.55, int(finite), 6, 0.03) >= 0.8
    t = sample_size_table(0.5, 0.05, run_sd=0.03, max_runs=6, seeds=20)
    assert math.isnan(t.loc[0, "seeds_per_task"]) and not math.isnan(t.loc[5, "seeds_per_task"])
    assert (t["power"].dropna() >= 0.8).all() and "unreachable" in to_markdown(t)
    assert t.iloc[-1]["solved"] == "runs for seeds" and t.iloc[-1]["runs"] == runs_needed(0.5, 0.55, 280, 0.03)
    # Table 3's top SD (3.17 pp over 280 episodes at 53.9%) is mostly binomial noise
    assert excess_sd(0.0317, 0.5393, 280) == pytest.approx(math.sqrt(0.0317**2 - 0.5393 * 0.4607 / 280))
    assert excess_sd(0.01, 0.5, 280) == 0.0


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--baseline", "1.2", "--difference", "0.1"], "--baseline"),
        (["--baseline", "0.5", "--difference", "0.6"], "--difference"),
        (["--baseline", "0.5", "--difference", "0"], "--difference"),
        (["--baseline", "0.5", "--difference", "0.1", "--run-sd", "-0.1"], "--run-sd"),
        (["--baseline", "0.5", "--difference", "0.1", "--alpha", "0"], "--alpha"),
        (["--baseline", "0.5", "--difference", "0.1", "--power", "1.5"], "--power"),
    ],
)
def test_cli_refuses_out_of_range_input_with_a_clear_error(args, flag, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2 and flag in capsys.readouterr().err


def test_cli_prints_the_table():
    out = subprocess.run(
        [sys.executable, "-m", "vabench.analysis.power", "--baseline", "0.3", "--difference", "0.2", "--max-runs", "2"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert "| seeds for runs | 1 | 7 | 98 | 98 |" in out.stdout  # ceil(93 / 14) seeds per task
