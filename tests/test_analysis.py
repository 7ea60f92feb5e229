"""vabench.analysis: every table against hand-computed values, and against the paper's own
published numbers where a table can be rebuilt from another (Table 10 -> Table 4 and its sign
tests, Tables 10 + 15 -> Table 5, Table 18 -> Table 6, Table 20 -> Table 19)."""

from __future__ import annotations

import math
import subprocess
import sys

import pandas as pd
import pytest
from scipy.stats import binomtest

from vabench.analysis import (
    NoOutcomesError,
    active_passive,
    checkpoint_progress,
    heldout_vs_base,
    infra_summary,
    load_runs,
    local_models,
    long_horizon,
    macro_averages,
    save_figures,
    sign_test,
    success_heatmap,
    success_matrix,
    summary_source_macro,
    summary_sources,
    to_markdown,
    wilson_interval,
    write_table,
)
from vabench.analysis.cli import main
from vabench.core.condition import condition_label
from vabench.results.outcomes import OutcomeRow, write_row

DUAL = {"place_shoe", "handover_horizontal_block", "lift_pot"}


def cond(model, protocol="active", source="own"):
    return f"{model} | {protocol} | summary {source}"


def row(model="m", task="grasp_single_cube", success=False, **kw) -> dict:
    r = dict(
        experiment="t",
        model=model,
        protocol="active",
        summary_source="own",
        track="base",
        task=task,
        arms="dual" if task in DUAL else "single",
        seed=0,
        run_index=1,
        attempt=1,
        status="ok",
        success=bool(success),
        end_reason="success" if success else "stop",
        checkpoints_done=0,
        checkpoints_total=2,
        privileged=False,
    )
    r.update(kw)
    r.setdefault("condition", condition_label(r["model"], r["protocol"], r["summary_source"], r.get("observation")))
    r["base_task"] = r.get("base_task") or (task if r["track"] == "base" else None)
    return r


def episodes(k: int, n: int, seed0: int = 0, **kw) -> list[dict]:
    """n judged episodes, the first k successful, seeds seed0.."""
    return [row(success=i < k, seed=seed0 + i, **kw) for i in range(n)]


def infra(**kw) -> dict:
    return row(status="infra_error", end_reason="infra_error", success=False, error="RuntimeError: renderer lost", **kw)


def frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows)


def one(f: pd.DataFrame, **match) -> pd.Series:
    sel = f
    for k, v in match.items():
        sel = sel[sel[k] == v]
    assert len(sel) == 1, (match, sel)
    return sel.iloc[0]


# ------------------------------------------------------------------------------------------- stats
def test_wilson_interval_known_values():
    lo, hi = wilson_interval(8, 10)
    assert (round(lo, 3), round(hi, 3)) == (0.490, 0.943)
    ref = binomtest(8, 10).proportion_ci(0.95, method="wilson")  # z = 1.95996...
    assert lo == pytest.approx(ref.low, abs=2e-4) and hi == pytest.approx(ref.high, abs=2e-4)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(0, 10)[1] == pytest.approx(0.2775, abs=1e-4)
    lo2, hi2 = wilson_interval(2, 10)
    assert (lo2, hi2) == pytest.approx((1 - hi, 1 - lo))
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_sign_test_matches_the_papers_p_values():
    # paper l.215: 10 of 12 non-tied -> p=0.039; 12 of 12 -> 0.0005; 8 of 9 -> 0.039
    assert sign_test(10, 2) == pytest.approx(0.0386, abs=1e-4)
    assert sign_test(12, 0) == pytest.approx(0.000488, abs=1e-6)
    assert sign_test(8, 1) == pytest.approx(0.0391, abs=1e-4)
    assert sign_test(3, 3) == 1.0
    assert math.isnan(sign_test(0, 0))


def test_the_exact_sign_test_equals_scipys_binomial_test():
    from scipy.stats import binomtest

    for n in range(1, 61):
        for worse in range(n + 1):
            want = binomtest(worse, n, 0.5, alternative="two-sided").pvalue
            assert sign_test(worse, n - worse) == pytest.approx(want, rel=1e-12), (worse, n)


# ---------------------------------------------------------------------------------- Tables 7-9
def test_success_matrix_runs_pooled_missing_cells_and_infra():
    a, b = "A", "B"
    rows = (
        episodes(2, 2, model=a, run_index=1)
        + episodes(1, 2, model=a, run_index=2)
        + episodes(0, 2, model=a, run_index=3)
        + [infra(model=a, run_index=1, seed=9)]
        + episodes(1, 1, model=a, task="place_cube_in_bowl")
        + episodes(1, 2, model=b)  # B never ran place_cube_in_bowl
        + [infra(model=b, task="place_cube_in_bowl")]  # ...except one episode that could not be judged
    )
    m = success_matrix(frame(rows))
    x = one(m, condition=cond(a), task="grasp_single_cube")
    assert (x.runs, x.k, x.n, x.excluded) == (3, 3, 6, 1)  # the infra row is not in n
    assert x.mean_pct == pytest.approx(50.0) and x.sd_pct == pytest.approx(50.0)  # runs 100, 50, 0
    assert (x.ci_low_pct, x.ci_high_pct) == pytest.approx(tuple(100 * v for v in wilson_interval(3, 6)))
    y = one(m, condition=cond(b), task="grasp_single_cube")
    assert y.mean_pct == 50.0 and math.isnan(y.sd_pct) and y.runs == 1
    z = one(m, condition=cond(b), task="place_cube_in_bowl")
    assert math.isnan(z.mean_pct) and math.isnan(z.rate_pct) and (z.k, z.n, z.excluded) == (0, 0, 1)
    notes = " ".join(m.attrs["notes"])
    assert "NaN, not 0" in notes and "2 (2 single-arm, 0 dual-arm) of the paper's 14" in notes
    assert "infra_error rows excluded from every rate (never counted as failures): 2" in notes
    md = to_markdown(m)
    assert "50.00 ± 50.00 (3/6;" in md and "| single | place_cube_in_bowl |" in md


def test_a_later_attempt_supersedes_and_recovers_an_infra_row():
    rows = [infra(seed=1, attempt=1), row(seed=1, attempt=2, success=True), row(seed=2, attempt=1)]
    rows += [row(seed=2, attempt=2, success=True)]  # a rerun of a judged episode: the later attempt wins
    m = success_matrix(frame(rows))
    assert (m.k.iloc[0], m.n.iloc[0]) == (2, 2)
    rows2 = rows + [row(seed=1, experiment="other", success=True)]
    assert "share condition, track, task, seed and run" in " ".join(success_matrix(frame(rows2)).attrs["notes"])
    s = infra_summary(frame(rows))
    total = one(s, condition="total")
    counts = (total.infra_error, total.recovered, total.never_judged, total.superseded, total.judged_after_retry)
    assert counts + (total.judged,) == (1, 1, 0, 1, 2, 2)
    assert (total.provider_attempts, total.provider_retries, total.backoff_s) == (0, 0, 0.0)  # pre-schema-2 rows


def test_the_infra_summary_shows_provider_retries_even_where_nothing_was_excluded():
    rows = [row(seed=1, provider_attempts=5, provider_retries=2, backoff_s=1.25, model_calls=3)]
    rows += [row(seed=2, provider_attempts=3, provider_retries=0, backoff_s=0.0, model_calls=3)]
    rows += [row(task="place_cube_in_bowl", provider_attempts=2, provider_retries=0, backoff_s=0.0)]
    s = infra_summary(frame(rows))
    x = one(s, condition=cond("m"), task="grasp_single_cube")
    assert (x.infra_error, x.provider_attempts, x.provider_retries, x.backoff_s) == (0, 8, 2, 1.2)
    assert list(s["condition"]) == [cond("m"), "total"]  # no retry, nothing excluded: not listed
    assert one(s, condition="total").provider_attempts == 10


# ------------------------------------------------------------------------------------- Table 3
def test_macro_averages_equal_family_weight_then_mean_and_sample_sd():
    rows = (
        # run 1: s1 1/2 = 50, s2 4/4 = 100, d1 0/2 = 0 -> single 75, dual 0, all 50 (pooled would be 5/8)
        episodes(1, 2, task="grasp_single_cube", run_index=1)
        + episodes(4, 4, task="place_cube_in_bowl", run_index=1)
        + episodes(0, 2, task="lift_pot", run_index=1)
        + [infra(task="grasp_single_cube", run_index=1, seed=50)]
        # run 2: s1 0/2 = 0, s2 1/2 = 50, d1 1/2 = 50 -> single 25, dual 50, all 33.33
        + episodes(0, 2, task="grasp_single_cube", run_index=2)
        + episodes(1, 2, task="place_cube_in_bowl", run_index=2)
        + episodes(1, 2, task="lift_pot", run_index=2)
    )
    m = macro_averages(frame(rows))
    s, d, a = (one(m, subset=x) for x in ("single", "dual", "all"))
    assert (s.families, d.families, a.families) == (2, 1, 3)
    assert (s.paper_families, d.paper_families, a.paper_families) == (11, 3, 14)
    assert s.mean_pct == pytest.approx(50.0) and s.sd_pct == pytest.approx(math.sqrt(2 * 25**2))
    assert d.mean_pct == pytest.approx(25.0) and d.sd_pct == pytest.approx(math.sqrt(2 * 25**2))
    assert a.mean_pct == pytest.approx((50 + 100 / 3) / 2) and a.sd_pct == pytest.approx((50 - 100 / 3) / math.sqrt(2))
    assert a.runs == 2 and s.excluded == 1 and d.excluded == 0
    notes = " ".join(m.attrs["notes"])
    assert "Fewer families than the paper's 11/3/14 (single/dual/all): 2/1/3 for m | active | summary own" in notes


def test_macro_averages_one_run_has_nan_sd():
    m = macro_averages(frame(episodes(1, 4)))
    a = one(m, subset="all")
    assert a.mean_pct == 25.0 and math.isnan(a.sd_pct) and a.runs == 1
    d = one(m, subset="dual")
    assert d.families == 0 and math.isnan(d.mean_pct)
    assert "25.00 ± –" in to_markdown(m)


# ----------------------------------------------------------------------------- Tables 4 and 10
# Table 10 of the paper: per family, active/passive successes out of 20 for four models
TABLE_10 = {
    "click_bell_right": (16, 19, 16, 14, 12, 10, 0, 3),
    "grasp_pen_leaning_cube": (13, 11, 5, 2, 8, 6, 1, 0),
    "grasp_single_bottle": (19, 12, 18, 11, 15, 13, 17, 7),
    "grasp_single_bottle_upright": (14, 8, 16, 13, 12, 7, 10, 2),
    "grasp_single_cube": (19, 7, 19, 15, 18, 11, 3, 0),
    "grasp_single_pen": (16, 11, 7, 6, 16, 13, 7, 3),
    "place_cube_in_bowl": (17, 1, 19, 17, 20, 8, 0, 0),
    "place_cube_on_cube": (19, 5, 20, 14, 16, 6, 2, 0),
    "place_single_bottle_upright": (9, 0, 3, 0, 8, 2, 1, 0),
    "place_single_cube": (12, 2, 17, 0, 18, 6, 1, 0),
    "beat_block_hammer_right": (0, 1, 3, 0, 1, 0, 0, 0),
    "place_shoe": (7, 1, 14, 3, 8, 3, 0, 0),
    "handover_horizontal_block": (0,) * 8,
    "lift_pot": (0,) * 8,
}
T10_MODELS = ("Qwen3.8-max", "GPT-5.6-sol", "Opus-5", "Doubao-2.1")


def table_10_rows(protocols=("active", "passive")) -> list[dict]:
    rows = []
    for task, counts in TABLE_10.items():
        for i, model in enumerate(T10_MODELS):
            for j, protocol in enumerate(("active", "passive")):
                if protocol in protocols:
                    rows += episodes(counts[2 * i + j], 20, model=model, task=task, protocol=protocol)
    return rows


def test_active_passive_reproduces_table_4_and_the_sign_tests():
    ap = active_passive(frame(table_10_rows() + [infra(model="Opus-5", task="lift_pot", protocol="passive")]))
    expect = {  # Table 4 (k/n active, passive; delta pp) and l.215 (worse of non-tied, p)
        "Qwen3.8-max": ((154, 77, -35.00), (7, 1, -10.00), (161, 78, -29.64), (10, 12, 0.039)),
        "GPT-5.6-sol": ((143, 92, -23.18), (14, 3, -18.33), (157, 95, -22.14), (12, 12, 0.0005)),
        "Opus-5": ((144, 82, -28.18), (8, 3, -8.33), (152, 85, -23.93), (12, 12, 0.0005)),
        "Doubao-2.1": ((42, 15, -12.27), (0, 0, 0.00), (42, 15, -9.64), (8, 9, 0.039)),
    }
    for model, (single, dual, every, (worse, non_tied, p)) in expect.items():
        for subset, (ka, kp, delta), n in (("single", single, 220), ("dual", dual, 60), ("all", every, 280)):
            x = one(ap, model=model, subset=subset)
            assert (x.active_k, x.active_n, x.passive_k, x.passive_n) == (ka, n, kp, n)
            assert round(x.delta_pp, 2) == delta
        x = one(ap, model=model, subset="all")
        assert (x.passive_worse, x.passive_worse + x.passive_better) == (worse, non_tied)
        assert x.ties == 14 - non_tied
        assert round(x.sign_p, 4 if p < 0.01 else 3) == p
    tasks = active_passive(frame(table_10_rows()), per_task=True)
    bell = one(tasks, model="Qwen3.8-max", task="click_bell_right")
    assert (bell.active_k, bell.passive_k, bell.direction) == (16, 19, "passive better")
    assert one(tasks, model="Doubao-2.1", task="lift_pot").direction == "tie"


def test_active_passive_ties_matched_runs_and_one_sided_families():
    rows = (
        episodes(2, 4, task="grasp_single_cube", run_index=1)  # active 50 vs passive 50: a tie
        + episodes(4, 4, task="grasp_single_cube", run_index=2)  # run 2 has no passive: not compared
        + episodes(2, 4, task="grasp_single_cube", protocol="passive")
        + episodes(3, 4, task="place_cube_in_bowl")  # 75 vs 25: passive worse
        + episodes(1, 4, task="place_cube_in_bowl", protocol="passive")
        + episodes(1, 2, task="lift_pot")  # active only: left out
    )
    ap = active_passive(frame(rows))
    x = one(ap, subset="all")
    assert (x.families, x.runs, x.active_k, x.active_n, x.passive_k, x.passive_n) == (2, "1", 5, 8, 3, 8)
    assert (x.passive_worse, x.passive_better, x.ties) == (1, 0, 1)
    assert x.sign_p == 1.0 and x.delta_pp == pytest.approx(-25.0)
    assert one(ap, subset="dual").families == 0
    notes = " ".join(ap.attrs["notes"])
    assert "compared on matched run(s) [1]" in notes and "one protocol only: lift_pot" in notes
    assert len(active_passive(frame(episodes(1, 2)))) == 0  # no passive rows: no table


# ----------------------------------------------------------------------------- Tables 5 and 15
TABLE_15 = {  # held-out success (%) of 20 seeds: Qwen3.8-max, GPT-5.6-sol
    "grasp_single_bottle": (85, 80),
    "grasp_single_bottle_upright": (40, 35),
    "grasp_single_cube": (80, 50),
    "place_cube_in_bowl": (70, 40),
    "place_cube_on_cube": (80, 65),
    "place_single_bottle_upright": (55, 20),
    "place_single_cube": (65, 45),
}


def test_heldout_vs_base_reproduces_table_5():
    rows = table_10_rows(protocols=("active",))  # the first base-evaluation run (run 1)
    rows += episodes(20, 20, model="Qwen3.8-max", task="grasp_single_cube", run_index=2, seed0=100)  # not matched
    for family, rates in TABLE_15.items():
        for model, pct in zip(("Qwen3.8-max", "GPT-5.6-sol"), rates, strict=True):
            k = pct * 20 // 100
            rows += episodes(k, 20, model=model, task=f"{family}_heldout", base_task=family, track="transfer")
    rows.append(row(model="Qwen3.8-max", task="mystery_heldout", track="transfer"))  # no base_task
    rows.append(
        infra(model="Qwen3.8-max", task="grasp_single_cube_heldout", base_task="grasp_single_cube", track="transfer")
    )
    h = heldout_vs_base(frame(rows))
    for model, base, held, delta in (("Qwen3.8-max", 77.86, 67.86, -10.00), ("GPT-5.6-sol", 80.00, 47.86, -32.14)):
        avg = one(h, condition=cond(model), scope="average")
        assert (round(avg.base_pct, 2), round(avg.heldout_pct, 2), round(avg.delta_pp, 2)) == (base, held, delta)
        assert avg.families == 7
    bowl = one(h, condition=cond("Qwen3.8-max"), family="place_cube_in_bowl")
    assert (bowl.base_k, bowl.base_n, bowl.heldout_k, bowl.heldout_n, bowl.delta_pp) == (17, 20, 14, 20, -15.0)
    assert one(h, condition=cond("Qwen3.8-max"), family="grasp_single_cube").base_n == 20  # run 2 left out
    assert len(h[h.condition == cond("Opus-5")]) == 0  # base only: nothing to compare
    notes = " ".join(h.attrs["notes"])
    assert "without base_task" in notes and "excluded from every rate (never counted as failures): 1" in notes


def test_long_horizon_objects_and_strict_success():
    placed = [4] + [3] * 19  # 61 of 100
    rows = [row(model="Q", task="put_everything_in_basket", track="long_horizon", seed=i, objects_placed=v)
            for i, v in enumerate(placed)]  # fmt: skip
    rows.append(infra(model="Q", task="put_everything_in_basket", track="long_horizon", seed=99, objects_placed=5))
    rows += [
        row(model="G", task="put_everything_in_basket", track="long_horizon", seed=0, objects_placed=5, success=True)
    ]
    rows += [row(model="G", task="put_everything_in_basket", track="long_horizon", seed=1, objects_placed=None)]
    lh = long_horizon(frame(rows + episodes(1, 1)))
    q = one(lh, condition=cond("Q"))
    assert (q.episodes, q.objects_placed, q.objects_possible, q.successes) == (20, 61, 100, 0)
    assert (q.placed_pct, q.mean_placed, q.success_pct) == (61.0, 3.05, 0.0)
    g = one(lh, condition=cond("G"))
    assert (g.objects_placed, g.objects_possible, g.success_pct) == (5, 10, 50.0)
    assert "without objects_placed, counted as 0" in " ".join(lh.attrs["notes"])
    assert "61/100" in to_markdown(lh)


# ------------------------------------------------------------------------- Tables 6, 17 and 18
TABLE_18 = {  # evaluated model -> source -> (B, P, C) success % of 20 seeds
    "Qwen3.8-max": {"own": (95, 80, 85), "Qwen3.8-max": None, "GPT-5.6-sol": (90, 80, 85), "Opus-5": (95, 85, 85)},
    "Opus-5": {"own": (75, 80, 100), "Qwen3.8-max": (55, 40, 75), "GPT-5.6-sol": (70, 75, 90), "Opus-5": (75, 80, 100)},
    "GPT-5.6-sol": {"own": (90, 35, 95), "Qwen3.8-max": (30, 15, 20), "GPT-5.6-sol": None, "Opus-5": (90, 45, 95)},
    "GPT-5.6-terra": {
        "own": (55, 55, 15),
        "Qwen3.8-max": (20, 5, 5),
        "GPT-5.6-sol": (65, 30, 30),
        "Opus-5": (60, 65, 40),
    },
    "Gemini-3.6": {"own": (40, 30, 0), "Qwen3.8-max": (15, 15, 0), "GPT-5.6-sol": (60, 30, 15), "Opus-5": (50, 35, 20)},
}
T18_TASKS = ("grasp_single_bottle", "grasp_single_pen", "place_cube_in_bowl")


def table_18_rows() -> list[dict]:
    rows = []
    for model, sources in TABLE_18.items():
        for source, rates in sources.items():
            if rates is None:  # the author's cell: its own run, no separate episodes (the Opus-5 one has them)
                continue
            src = "own" if source == "own" else f"shared:{source}"
            for task, pct in zip(T18_TASKS, rates, strict=True):
                rows += episodes(pct * 20 // 100, 20, model=model, task=task, summary_source=src)
    rows += episodes(0, 20, model="Qwen3.8-max", task="grasp_single_pen", run_index=2)  # own run 2: not matched
    return rows


def test_summary_sources_reproduce_table_6_with_author_exclusion():
    s = summary_sources(frame(table_18_rows()))
    x = one(s, model="GPT-5.6-sol", source="shared:Qwen3.8-max")
    assert (round(x.rate_pct, 2), round(x.own_pct, 2), round(x.delta_pp, 2), x.k, x.n) == (21.67, 73.33, -51.67, 13, 60)
    author = one(s, model="Qwen3.8-max", source="shared:Qwen3.8-max")
    assert author.author and author.from_own and author.delta_pp == 0 and round(author.rate_pct, 2) == 86.67
    assert one(s, model="Opus-5", source="shared:Opus-5").author  # explicit episodes, still its author
    for source, rate, delta in (("shared:Qwen3.8-max", 37.00, -31.25), ("shared:GPT-5.6-sol", 62.67, 0.83),
                                ("shared:Opus-5", 68.00, 7.50), ("own", 62.00, 0.00)):  # fmt: skip
        avg = one(s, model="avg", source=source)
        assert (round(avg.rate_pct, 2), round(avg.delta_pp, 2)) == (rate, delta)
    # with the author counted, the Qwen3.8-max column's delta would be -25.00, not the paper's -31.25
    assert s[s.source == "shared:Qwen3.8-max"].iloc[:-1].delta_pp.mean() == pytest.approx(-25.0)
    assert "On Qwen" not in to_markdown(s) and "| 0.00 (author)" in to_markdown(s)
    per_task = summary_sources(frame(table_18_rows()), per_task=True)
    mean = {(r.source, r.task): r.rate_pct for r in per_task[per_task.model == "mean"].itertuples()}
    assert mean[("own", "grasp_single_bottle")] == pytest.approx(71.0)
    assert mean[("shared:Qwen3.8-max", "grasp_single_pen")] == pytest.approx(31.0)
    assert mean[("shared:Opus-5", "place_cube_in_bowl")] == pytest.approx(68.0)


def test_summary_author_found_through_summary_model():
    rows = episodes(2, 2, model="gpt", summary_model="openai/gpt-x")
    rows += episodes(1, 2, model="gpt", summary_source="shared:anthropic/opus-y", summary_model="anthropic/opus-y")
    rows += episodes(2, 2, model="opus", summary_model="anthropic/opus-y")
    rows += episodes(0, 2, model="opus", summary_source="shared:openai/gpt-x", summary_model="openai/gpt-x")
    s = summary_sources(frame(rows))
    assert one(s, model="opus", source="shared:anthropic/opus-y").author
    assert one(s, model="gpt", source="shared:openai/gpt-x").author
    avg = one(s, model="avg", source="shared:openai/gpt-x")
    assert avg.rate_pct == pytest.approx(50.0) and avg.delta_pp == pytest.approx(-100.0)  # opus only


def test_summary_source_macro_table_17():
    m, shared = "Qwen3.7-plus", "shared:Qwen3.8-max"
    rows = (
        episodes(1, 2, model=m, task="grasp_single_cube")
        + episodes(2, 2, model=m, task="place_cube_in_bowl")
        + episodes(0, 2, model=m, task="lift_pot")
        + episodes(0, 2, model=m, task="grasp_single_cube", summary_source=shared)
        + episodes(2, 2, model=m, task="place_cube_in_bowl", summary_source=shared)
        + episodes(1, 2, model=m, task="lift_pot", summary_source=shared)
    )
    t = summary_source_macro(frame(rows))
    own, sh = one(t, source="own", subset="single"), one(t, source=shared, subset="single")
    assert (own.mean_pct, sh.mean_pct, sh.delta_pp) == (75.0, 50.0, -25.0)
    a = one(t, source=shared, subset="all")
    assert a.mean_pct == pytest.approx(50.0) and a.delta_pp == pytest.approx(50.0 - 50.0)
    assert one(t, source=shared, subset="dual").delta_pp == 50.0


def test_episodes_run_without_their_summary_are_counted_per_cell_in_every_summary_table():
    """summary_learned false (own summary asked, learning ended without one): still judged, still in the
    rate, but every table that pools the cell says how many of its episodes it holds."""
    m, shared = "m", "shared:author/x"
    rows = episodes(1, 4, task="grasp_single_cube", summary_learned=True)
    rows += [row(task="grasp_single_cube", seed=10 + i, summary_learned=False) for i in range(2)]
    rows += episodes(2, 3, task="place_cube_in_bowl", summary_learned=True)
    rows += [row(task="place_cube_in_bowl", seed=20, summary_learned=False)]
    rows += [infra(task="place_cube_in_bowl", seed=30, summary_learned=False)]  # excluded: not counted here
    rows += episodes(1, 2, task="grasp_single_cube", summary_source=shared, summary_learned=True)
    rows += episodes(1, 2, task="place_cube_in_bowl", summary_source=shared, summary_learned=True)
    rows += episodes(0, 2, model="n", summary_source="none")  # summary_learned null: nothing asked
    df = frame(rows)
    m_rows = success_matrix(df)
    x = one(m_rows, condition=cond(m), task="grasp_single_cube")
    assert (x.k, x.n) == (1, 6)  # the two summary-less episodes stay in the rate
    want = f"{cond(m)}: grasp_single_cube 2/6, place_cube_in_bowl 1/4"
    for table in (m_rows, macro_averages(df), summary_sources(df), summary_sources(df, per_task=True)):
        notes = [n for n in table.attrs["notes"] if "without the summary their condition names" in n]
        assert len(notes) == 1 and f"): 3 ({want})." in notes[0], table.attrs["notes"]
        assert "shared:author/x" not in notes[0] and "summary none" not in notes[0]
    assert any(want in n for n in summary_source_macro(df).attrs["notes"])
    assert want in to_markdown(m_rows)
    clean = frame(episodes(1, 2, summary_learned=True) + episodes(1, 2, model="n", summary_source="none"))
    assert not any("without the summary" in n for n in success_matrix(clean).attrs["notes"])
    assert not any("without the summary" in n for n in success_matrix(frame(episodes(1, 2))).attrs["notes"])


# ----------------------------------------------------------------------------- Tables 19 and 20
TABLE_20 = {  # per-task % of 20: Gemma-4-31B-it, Qwen3.6-27B (all other tasks 0)
    "click_bell_right": (10, 0),
    "grasp_pen_leaning_cube": (5, 0),
    "grasp_single_bottle": (30, 0),
    "grasp_single_bottle_upright": (55, 15),
    "grasp_single_cube": (5, 0),
    "grasp_single_pen": (15, 0),
}


def test_local_models_reproduce_table_19():
    rows = []
    for task in TABLE_10:  # the 14 families
        for model, pct in zip(("Gemma-4-31B-it", "Qwen3.6-27B"), TABLE_20.get(task, (0, 0)), strict=True):
            rows += episodes(pct * 20 // 100, 20, model=model, task=task, summary_source="shared:Qwen3.8-max",
                             summary_model="Qwen3.8-max")  # fmt: skip
    rows += episodes(5, 5, model="hosted-model")
    lm = local_models(frame(rows), models=["Gemma-4-31B-it", "Qwen3.6-27B"])
    g = cond("Gemma-4-31B-it", source="shared:Qwen3.8-max")
    for subset, k, n, pct in (("single", 24, 220, 10.91), ("dual", 0, 60, 0.0), ("all", 24, 280, 8.57)):
        x = one(lm, condition=g, subset=subset)
        assert (x.k, x.n, round(x.rate_pct, 2)) == (k, n, pct) and x.summary == "Qwen3.8-max"
    assert one(lm, condition=cond("Qwen3.6-27B", source="shared:Qwen3.8-max"), subset="all").k == 3
    assert "hosted-model" not in set(lm.condition.str.split(" ").str[0])
    assert not any("Fewer families" in n for n in lm.attrs["notes"])
    md = to_markdown(lm)
    assert "24/220 (10.91%)" in md and "24/280 (8.57%)" in md
    tasks = local_models(frame(rows), models=["Gemma-4-31B-it"], per_task=True)
    assert one(tasks, task="grasp_single_bottle_upright").rate_pct == 55.0
    short = local_models(frame(episodes(1, 2)))
    assert "paper's 11/3/14 (single/dual/all): 1/0/1 for m | active | summary own" in " ".join(short.attrs["notes"])


# ------------------------------------------------------------------------------------- eq. 12
def test_checkpoint_progress_is_a_micro_average():
    rows = [
        row(seed=0, checkpoints_done=1, checkpoints_total=2),
        row(seed=1, checkpoints_done=2, checkpoints_total=2, success=True),
        row(seed=2, checkpoints_done=0, checkpoints_total=0),  # stopped before acting: scored as 0 of 2
        row(seed=0, task="lift_pot", checkpoints_done=3, checkpoints_total=4),
        infra(seed=3, checkpoints_done=5, checkpoints_total=5),
    ]
    cp = checkpoint_progress(frame(rows))
    t = one(cp, scope="task", task="grasp_single_cube")
    assert (t.episodes, t.done, t.total, t.progress_pct) == (3, 3, 6, 50.0)
    every = one(cp, scope="subset", task="all")
    assert (every.done, every.total, every.progress_pct) == (6, 10, 60.0)  # a family mean would be 62.5
    assert one(cp, scope="subset", task="dual").progress_pct == 75.0
    assert "scored with their task's count" in " ".join(cp.attrs["notes"])


# ------------------------------------------------------------------------------- privileged
def test_privileged_rows_are_marked_in_every_output(tmp_path):
    rows = episodes(2, 2, model="oracle", privileged=True) + episodes(1, 2, model="gpt")
    df = frame(rows)
    for table in (success_matrix(df), macro_averages(df), checkpoint_progress(df), local_models(df)):
        labels = set(table.condition)
        assert cond("oracle") + " (privileged)" in labels and cond("gpt") in labels
        assert "(privileged) marks the offline oracle" in to_markdown(table)
    paths = save_figures(df, tmp_path)
    assert [p.name for p in paths] == ["success_bars.png", "success_heatmap.png"]


# --------------------------------------------------------------------------- files and the CLI
def test_writers_and_heatmap_with_a_missing_cell(tmp_path):
    df = frame(episodes(1, 2, model="A") + episodes(1, 1, model="A", task="lift_pot") + episodes(0, 1, model="B"))
    m = success_matrix(df)
    md, csv = write_table(m, tmp_path, "success_matrix")
    assert md.read_text().startswith("### Per-task success") and "Notes:" in md.read_text()
    back = pd.read_csv(csv)
    assert list(back.columns) == list(m.columns) and back.loc[back.n == 0, "mean_pct"].isna().all()
    png = success_heatmap(df, tmp_path / "heat.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def write_run(folder, rows) -> None:
    for i, r in enumerate(rows):
        write_row(folder / "outcomes" / f"{i:04d}.parquet", OutcomeRow(**r))


def test_load_runs_reads_written_rows_and_refuses_nothing(tmp_path):
    write_run(tmp_path / "run", episodes(1, 2) + [infra(seed=5)])
    df = load_runs(tmp_path / "run")
    assert len(df) == 3 and str(df["success"].dtype) == "boolean"
    assert one(macro_averages(df), subset="all").mean_pct == 50.0
    (tmp_path / "empty").mkdir()
    with pytest.raises(NoOutcomesError, match="no outcome rows"):
        load_runs(tmp_path / "empty")
    with pytest.raises(NoOutcomesError, match="not a folder"):
        load_runs(tmp_path / "missing")


def test_cli_prints_and_writes_what_the_rows_support(tmp_path, capsys):
    run = tmp_path / "run"
    write_run(run, episodes(2, 3) + episodes(1, 3, protocol="passive") + episodes(1, 2, task="lift_pot"))
    write_run(tmp_path / "run2", [infra(seed=7, run_index=2)])
    out = tmp_path / "out"
    assert main([str(run), str(tmp_path / "run2"), "--out", str(out), "--figures"]) == 0
    printed = capsys.readouterr().out
    assert "### Per-task success" in printed and "### Active vs passive camera protocol" in printed
    names = {p.name for p in out.iterdir()}
    for table in ("success_matrix", "macro_averages", "active_passive", "checkpoint_progress", "infra_summary"):
        assert {f"{table}.md", f"{table}.csv"} <= names
    assert {"success_bars.png", "success_heatmap.png", "active_passive.png"} <= names
    assert not any(n.startswith(("heldout", "long_horizon", "summary_source")) for n in names)
    assert main([str(run), "--out", str(tmp_path / "csv"), "--format", "csv"]) == 0
    assert all(p.suffix == ".csv" for p in (tmp_path / "csv").iterdir())


def test_cli_module_on_an_empty_folder_and_no_simulator_imports(tmp_path):
    (tmp_path / "empty").mkdir()
    code = (
        "import sys, runpy; sys.argv = ['x'] + sys.argv[1:];"
        "import vabench.analysis;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('sapien', 'mplib', 'ray') or "
        "m.startswith(('vabench.envs', 'vabench.agents', 'vabench.run.actors'))];"
        "assert not bad, bad;"
        "runpy.run_module('vabench.analysis', run_name='__main__', alter_sys=True)"
    )
    empty = subprocess.run([sys.executable, "-c", code, str(tmp_path / "empty")], capture_output=True, text=True)
    assert empty.returncode == 2, empty.stderr
    assert "no outcome rows (*.parquet) under" in empty.stderr and "Traceback" not in empty.stderr
    assert main([str(tmp_path / "missing")]) == 2


def test_feedback_ablation_pairs_the_profiles_and_the_paper_tables_leave_explained_rows_out():
    from vabench.analysis import feedback_ablation

    rows = episodes(1, 4, observation="paper") + episodes(3, 4, observation="explained")
    rows += episodes(2, 2, task="place_cube_in_bowl", observation="paper")
    rows += episodes(2, 2, task="place_cube_in_bowl", observation="explained")
    rows += episodes(0, 2, task="lift_pot", observation="paper") + episodes(
        1, 2, task="lift_pot", observation="explained"
    )
    rows += episodes(1, 2, protocol="passive", observation="paper")  # no explained partner: not in the pair table
    f = feedback_ablation(frame(rows))
    a = one(f, subset="all", protocol="active")
    assert (a.paper_k, a.paper_n, a.explained_k, a.explained_n, a.families) == (3, 8, 6, 8, 3)
    assert a.delta_pp == pytest.approx(75.0 - 37.5)
    assert (a.explained_better, a.explained_worse, a.ties) == (2, 0, 1) and a.sign_p == pytest.approx(0.5)
    assert len(f[f["protocol"] == "passive"]) == 0
    ap = active_passive(frame(rows + episodes(1, 4, protocol="passive", observation="explained")))
    assert "row(s) of another observation profile (explained) left out" in " ".join(ap.attrs["notes"])
    x = one(ap, subset="single")
    assert (x.active_k, x.active_n, x.passive_k, x.passive_n) == (1, 4, 1, 2)  # paper rows, the shared family
    m = success_matrix(frame(rows))  # per condition: the profiles are two conditions, side by side
    assert {cond("m") + " | observation explained", cond("m")} <= set(m["condition"])


def test_rows_from_before_observation_profiles_form_their_own_conditions():
    old = episodes(3, 4, prompt_version="vabench-prompts-v1") + episodes(
        1, 4, protocol="passive", prompt_version="vabench-prompts-v1"
    )
    new = episodes(1, 4, prompt_version="vabench-prompts-v2", observation="paper")
    m = success_matrix(frame(old + new))
    assert {cond("m"), cond("m") + " | observation prompts-v1"} <= set(m["condition"])
    assert "predate observation profiles" in " ".join(m.attrs["notes"])
    assert len(active_passive(frame(old + new))) == 0  # v1 rows never enter the paper's comparisons
