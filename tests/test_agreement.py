"""Annotation agreement (paper C.9.1): Fleiss kappa and Gwet AC1 against hand-computed values, Table
28 rebuilt from item distributions consistent with its n, unanimity and positive rate, and the
vote-rule sensitivity (strict / majority / permissive) with its orderings."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau, spearmanr

from vabench.analysis import (
    ac1_pair,
    agreement_table,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    read_tallies,
    to_markdown,
    vote_rule_orderings,
    vote_rule_sensitivity,
)

# Table 28: n, unanimity, positive rate (of majority labels), Fleiss kappa, Gwet AC1
TABLE28 = {
    "TL": (3360, 97.41, 0.974, 0.723, 0.982),
    "AE": (3360, 92.77, 0.376, 0.898, 0.908),
    "SR": (3360, 94.70, 0.789, 0.892, 0.948),
    "MS": (3360, 99.88, 0.988, 0.968, 0.999),
    "MP": (3360, 97.08, 0.565, 0.960, 0.962),
    "FG": (3360, 87.38, 0.321, 0.797, 0.856),
    "ED": (3024, 96.40, 0.447, 0.951, 0.953),
    "OC": (3024, 99.40, 0.124, 0.982, 0.995),
    "PF": (3024, 96.76, 0.369, 0.953, 0.960),
    "All criteria": (29232, 95.69, 0.559, 0.942, 0.943),
    "All except FG": (25872, 96.77, 0.589, 0.956, 0.958),
}
# One item distribution per criterion: unanimous positive (3/3), unanimous negative (0/3), 2-of-3
# and 1-of-3 splits. u1 + u0 and the splits follow from n and unanimity; u1 + s2 (majority positive)
# from the positive rate within its rounding; the split between s2 and s1 is not stated by the paper.
# With three raters the observed agreement is fixed by unanimity alone, so kappa and AC1 each pin
# the prevalence, i.e. s2: these are the middle of the s2 values that reproduce every rounded figure
# (range in PAPER_S2_RANGE), and together they also reproduce the two pooled rows.
PAPER_ITEMS = {  # criterion: (u1, u0, s2, s1)
    "TL": (3198, 75, 75, 12),
    "AE": (1203, 1914, 61, 182),
    "SR": (2590, 592, 61, 117),
    "MS": (3316, 40, 3, 1),
    "MP": (1896, 1366, 3, 95),
    "FG": (732, 2204, 347, 77),
    "ED": (1268, 1647, 84, 25),
    "OC": (365, 2641, 10, 8),
    "PF": (1039, 1887, 77, 21),
}
PAPER_S2_RANGE = {"TL": (72, 77), "AE": (58, 83), "SR": (56, 65), "MS": (2, 4), "MP": (0, 65), "FG": (344, 358),
                  "ED": (60, 109), "OC": (0, 18), "PF": (57, 98)}  # fmt: skip


def items(u1, u0, s2, s1):
    positives = np.repeat([3, 0, 2, 1], [u1, u0, s2, s1])
    return np.full(positives.size, 3), positives


# ------------------------------------------------------------------------------------ coefficients
def test_fleiss_kappa_and_ac1_against_hand_computed_values():
    # balanced: agreement per item 1, 1, 1/3, 1/3 -> pa 2/3; pi 1/2 -> pe 1/2 for both: 1/3
    r, k = [3, 3, 3, 3], [3, 0, 2, 1]
    assert fleiss_kappa(r, k) == pytest.approx(1 / 3) and gwet_ac1(r, k) == pytest.approx(1 / 3)
    # prevalence paradox: pa 10/12, pi 11/12; kappa pe 122/144 -> -0.0909; AC1 pe 22/144 -> 0.8033
    r, k = [3, 3, 3, 3], [3, 3, 3, 2]
    assert fleiss_kappa(r, k) == pytest.approx((10 / 12 - 122 / 144) / (1 - 122 / 144))
    assert fleiss_kappa(r, k) == pytest.approx(-1 / 11)
    assert gwet_ac1(r, k) == pytest.approx((10 / 12 - 22 / 144) / (1 - 22 / 144))
    # varying rater counts: a 1-rater item carries no agreement and is left out
    assert fleiss_kappa([3, 3, 3, 3, 1], [3, 0, 2, 1, 1]) == pytest.approx(1 / 3)
    # two raters 1-1 on one item, 2-0 on another: pa (0 + 1) / 2, pi 3/4 -> kappa (1/2 - 5/8) / (3/8)
    assert fleiss_kappa([2, 2], [1, 2]) == pytest.approx(-1 / 3)
    assert math.isnan(fleiss_kappa([3, 3], [3, 3])) and gwet_ac1([3, 3], [3, 3]) == 1.0  # all positive
    with pytest.raises(ValueError):
        fleiss_kappa([3], [4])


def test_cohen_kappa_and_pairwise_ac1():
    a, b = [1, 1, 1, 0, 0, 1], [1, 1, 0, 0, 1, 1]
    po, pe = 4 / 6, (4 / 6) * (4 / 6) + (2 / 6) * (2 / 6)
    assert cohen_kappa(a, b) == pytest.approx((po - pe) / (1 - pe))
    pi = 4 / 6
    assert ac1_pair(a, b) == pytest.approx((po - 2 * pi * (1 - pi)) / (1 - 2 * pi * (1 - pi)))
    assert cohen_kappa(a, a) == 1.0 and math.isnan(cohen_kappa([], []))


# ---------------------------------------------------------------------------------------- Table 28
def tally_of(dist: dict, path) -> pd.DataFrame:
    rows = []
    for c, counts in dist.items():
        r, k = items(*counts)
        for i, (ri, ki) in enumerate(zip(r, k, strict=True)):
            rows.append(("m", "grasp_single_cube", "single", i, 1, c, int(ri), int(ki)))
    cols = ["model", "task", "arms", "seed", "run_index", "criterion", "raters", "positives"]
    pd.DataFrame(rows, columns=cols).to_csv(path, index=False)
    return read_tallies(path)


def test_table_28_is_rebuilt_from_item_distributions_consistent_with_its_counts(tmp_path):
    table = agreement_table(tally_of(PAPER_ITEMS, tmp_path / "t.csv")).set_index("criterion")
    for c, (n, unanimity, pos, kappa, ac1) in TABLE28.items():
        row = table.loc[c]
        assert row["n"] == n, c
        assert round(row["unanimity_pct"], 2) == unanimity, c
        assert round(row["positive_rate"], 3) == pos, c
        assert round(row["fleiss_kappa"], 3) == kappa, (c, row["fleiss_kappa"])
        assert round(row["ac1"], 3) == ac1, (c, row["ac1"])
    assert table.loc["All criteria", "splits"] == 1259 and table.loc["FG", "splits"] == 424  # C.9.1's counts
    assert "All 1259 disagreements are 2-1 splits." in table.attrs["notes"]
    md = to_markdown(agreement_table(tally_of(PAPER_ITEMS, tmp_path / "t2.csv")))
    assert "| SPU | TL | 3,360 | 3 | 97.41% | 87 | 0.974 | 0.723 | 0.982 |" in md


def test_the_split_distribution_is_identified_only_to_a_range():
    """Which s2 (2-of-3 positive splits) reproduce each row: every value in PAPER_S2_RANGE does, none
    outside; n, unanimity and positive rate alone leave s2 free from 0 to all splits."""
    for c, (u1, u0, s2, s1) in PAPER_ITEMS.items():
        n, unanimity, pos, kappa, ac1 = TABLE28[c]
        unanimous, splits = u1 + u0, s2 + s1
        assert round(100 * unanimous / n, 2) == unanimity
        ok = []
        for m in range(n + 1):  # majority-positive count within the positive rate's rounding
            if round(m / n, 3) != pos:
                continue
            for x in range(splits + 1):
                y1, y0 = m - x, unanimous - (m - x)
                if y1 < 0 or y0 < 0:
                    continue
                r, k = items(y1, y0, x, splits - x)
                if round(fleiss_kappa(r, k), 3) == kappa and round(gwet_ac1(r, k), 3) == ac1:
                    ok.append(x)
        assert ok and (min(ok), max(ok)) == PAPER_S2_RANGE[c], (c, min(ok), max(ok))
        assert PAPER_S2_RANGE[c][0] <= s2 <= PAPER_S2_RANGE[c][1]


# ------------------------------------------------------------------------------ vote-rule checks
def three_conditions(tmp_path) -> pd.DataFrame:
    """A: positives 3,2,2 on TL, FG; B: 3,1,1; C: 2,2,0 (two criteria, three episodes each)."""
    rows = []
    for model, votes in (("A", (3, 2, 2)), ("B", (3, 1, 1)), ("C", (2, 2, 0))):
        for c, shift in (("TL", 0), ("FG", 1)):
            for seed, v in enumerate(votes):
                rows.append((model, "grasp_single_cube", "single", seed, 1, c, 3, max(0, v - shift * (seed == 0))))
    cols = ["model", "task", "arms", "seed", "run_index", "criterion", "raters", "positives"]
    pd.DataFrame(rows, columns=cols).to_csv(tmp_path / "v.csv", index=False)
    return read_tallies(tmp_path / "v.csv")


def test_vote_rule_sensitivity_and_orderings(tmp_path):
    t = three_conditions(tmp_path)
    s = vote_rule_sensitivity(t).set_index("condition")
    a = s.loc["A | active | summary own"]
    # A: TL 3,2,2 -> strict 1/3, majority 3/3, permissive 3/3; FG 2,2,2 -> strict 0, majority 1, permissive 1
    assert a["strict_pct"] == pytest.approx((100 / 3 + 0) / 2) and a["majority_pct"] == 100.0
    assert a["range_pp"] == pytest.approx(100 - 50 / 3) and a["strict_delta_pp"] == pytest.approx(50 / 3 - 100)
    c = s.loc["C | active | summary own"]  # TL 2,2,0: strict 0, majority 2/3, permissive 2/3; FG 1,2,0
    assert (c["strict_pct"], c["majority_pct"], c["permissive_pct"]) == pytest.approx((0, 50, 200 / 3))
    notes = " ".join(vote_rule_sensitivity(t).attrs["notes"])
    assert f"Largest within-condition range across the three rules: {100 - 50 / 3:.2f} pp" in notes
    o = vote_rule_orderings(t).set_index(["rule_a", "rule_b"])
    means = {
        rule: s[f"{rule}_pct"].to_numpy() for rule in ("strict", "majority", "permissive")
    }  # A, B, C in name order
    for a_rule, b_rule in (("strict", "majority"), ("majority", "permissive")):
        row = o.loc[(a_rule, b_rule)]
        assert row["spearman"] == pytest.approx(spearmanr(means[a_rule], means[b_rule]).statistic, nan_ok=True)
        assert row["kendall"] == pytest.approx(kendalltau(means[a_rule], means[b_rule]).statistic, nan_ok=True)
        assert row["conditions"] == 3
    # majority A 100, B 33.3, C 50 vs strict A 16.7, B 16.7, C 0: by hand, Spearman with the tied pair
    assert s["majority_pct"].to_numpy() == pytest.approx([100, 100 / 3, 50])
    # ranks (2.5, 2.5, 1) vs (3, 1, 2): centred (.5, .5, -1) . (1, -1, 0) = 0
    assert o.loc[("strict", "majority"), "spearman"] == pytest.approx(0.0, abs=1e-12)
    assert "Leader changes" not in notes  # A leads (or ties first) every criterion under every rule


def test_a_leader_that_changes_with_the_rule_is_named(tmp_path):
    """As C.9.1's FG: one condition leads under unanimity, another under majority voting."""
    rows = [("A", s, v) for s, v in enumerate((3, 3, 1, 1))] + [("B", s, v) for s, v in enumerate((2, 2, 2, 0))]
    cols = ["model", "task", "arms", "seed", "run_index", "criterion", "raters", "positives"]
    data = [(m, "grasp_single_cube", "single", s, 1, "FG", 3, v) for m, s, v in rows]
    pd.DataFrame(data, columns=cols).to_csv(tmp_path / "fg.csv", index=False)
    notes = " ".join(vote_rule_sensitivity(read_tallies(tmp_path / "fg.csv")).attrs["notes"])
    # A: strict 50, majority 50, permissive 100; B: strict 0, majority 75, permissive 75
    assert (
        "Leader changes with the rule for: FG (strict: A | active | summary own 50.0; majority: B | active | "
        "summary own 75.0; permissive: A | active | summary own 100.0)." in notes
    )
