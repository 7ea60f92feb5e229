"""Trajectory diagnostics (paper C.9): Table 11 rebuilt from the paper's Tables 12-14, every gate and
NA rule on hand-made labels, both label inputs reducing to one tally, the tally CSV's errors, the
module overview, concordance, Figures 2b/2c, Table 21 and the CLI. Pure pandas, no simulator."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from vabench.analysis import (
    TallyError,
    annotation_tallies,
    diagnostic_components,
    diagnostic_profile,
    diagnostic_profile_radar,
    diagnostic_scores,
    label_concordance,
    load_runs,
    module_overview,
    read_tallies,
    seed_yield,
    subtask_progress_bars,
    to_markdown,
)
from vabench.analysis import labels as L
from vabench.analysis.cli import main
from vabench.core.paper import PAPER_DUAL_ARM, PAPER_SINGLE_ARM
from vabench.results.outcomes import COLUMNS, SCHEMA_VERSION, write_row

# ----------------------------------------------------------------------------- the paper's numbers
TABLE11 = """Qwen3.8-max	100.0	79.3	78.9	100.0	90.7	73.9	73.6	46.7	42.6
Opus-5	100.0	83.2	70.4	99.6	90.0	77.9	69.9	32.4	49.1
GPT-5.6-sol	100.0	72.9	76.1	100.0	84.6	74.6	70.8	27.3	56.5
GPT-5.6-terra	100.0	55.4	69.6	99.6	78.2	52.9	72.6	26.6	60.5
Doubao-2.1	96.4	31.8	83.9	100.0	54.6	16.8	49.0	14.1	39.5
Gemini-3.6	100.0	31.4	85.4	100.0	73.2	8.9	63.8	1.9	61.9
GPT-5.6-luna	100.0	40.0	71.8	99.3	61.1	38.9	49.2	13.7	37.4
sonnet-5	99.3	21.8	80.7	100.0	31.8	32.1	10.6	1.2	9.8
Qwen3.7-max	96.4	13.6	81.4	97.5	35.7	2.5	32.6	0.4	32.2
Qwen3.7-plus	97.9	10.7	82.9	94.6	36.8	2.9	17.7	1.1	17.0
MiniMax-M3	95.7	6.1	93.6	95.4	21.4	1.8	22.6	1.4	21.1
Mimo-v2.5	83.2	5.4	71.8	98.9	19.6	2.1	25.8	0.0	26.2"""
# Tables 12, 13, 14: single-arm (3 criteria) then dual-arm (3 criteria), per module
TABLE12 = """100.0 85.0 89.1 100.0 58.3 41.7|100.0 90.5 71.4 100.0 56.7 66.7|100.0 81.8 81.8 100.0 40.0 55.0
100.0 64.1 70.0 100.0 23.3 68.3|95.5 34.1 85.5 100.0 23.3 78.3|100.0 36.8 89.1 100.0 11.7 71.7
100.0 47.7 69.5 100.0 11.7 80.0|99.5 25.5 76.8 98.3 8.3 95.0|99.1 16.4 83.6 86.7 3.3 73.3
99.1 13.2 84.1 93.3 1.7 78.3|96.4 7.3 94.1 93.3 1.7 91.7|82.7 5.5 69.5 85.0 5.0 80.0"""
TABLE13 = """100.0 94.1 75.5 100.0 78.3 68.3|99.5 94.5 86.4 100.0 73.3 46.7|100.0 90.0 76.4 100.0 65.0 68.3
99.5 86.4 58.2 100.0 48.3 33.3|100.0 61.4 15.0 100.0 30.0 23.3|100.0 78.2 8.6 100.0 55.0 10.0
99.1 63.2 45.0 100.0 53.3 16.7|100.0 33.6 40.0 100.0 25.0 3.3|96.8 43.2 3.2 100.0 8.3 0.0
93.2 43.6 3.6 100.0 11.7 0.0|94.1 21.8 2.3 100.0 20.0 0.0|98.6 25.0 2.7 100.0 0.0 0.0"""
TABLE14 = """81.7 54.2 43.0 52.7 27.3 41.8|79.4 36.9 55.6 42.9 19.6 30.4|76.9 28.8 60.6 53.6 23.2 44.6
76.7 34.4 60.8 59.3 1.7 59.3|53.2 18.2 40.9 35.0 0.0 35.0|65.5 2.5 63.0 58.3 0.0 58.3
49.0 17.3 34.2 50.0 1.7 48.3|9.3 1.5 8.2 15.0 0.0 15.0|29.1 0.5 28.6 45.0 0.0 45.0
12.4 1.4 11.5 36.7 0.0 36.7|22.8 1.8 21.0 21.7 0.0 21.7|32.4 0.0 32.9 1.7 0.0 1.7"""
CRIT = ("TL", "AE", "SR", "MS", "MP", "FG", "ED", "OC", "PF")
SINGLE_N, DUAL_N = 220, 60  # 11 and 3 families x 20 seeds, one annotated run


def _parse():
    t11 = {
        line.split("\t")[0]: dict(zip(CRIT, map(float, line.split("\t")[1:]), strict=True))
        for line in TABLE11.splitlines()
    }
    conds = list(t11)
    comp = {c: {} for c in conds}
    for table, crits in ((TABLE12, CRIT[:3]), (TABLE13, CRIT[3:6]), (TABLE14, CRIT[6:])):
        cells = [cell for line in table.splitlines() for cell in line.split("|")]
        for cond, cell in zip(conds, cells, strict=True):
            v = list(map(float, cell.split()))
            for i, c in enumerate(crits):
                comp[cond][c] = (v[i], v[i + 3])
    return t11, comp


def _ks(pct: float, n: int) -> list[int]:
    """Counts k whose k/n rounds to pct (one decimal)."""
    k0 = round(pct * n / 100)
    return [k for k in (k0 - 1, k0, k0 + 1) if 0 <= k <= n and abs(100 * k / n - pct) <= 0.05 + 1e-9]


def derive_counts():
    """Per condition and criterion (k_single, n_single, k_dual, n_dual) consistent with Tables 12-14
    and the pooled Table 11. TL..FG apply to every episode (220 + 60); ED, OC and PF share one
    error-episode set per condition, whose sizes are searched for; Table 28's n for ED (3,024)
    picks the one condition (Mimo-v2.5) that rounding leaves ambiguous."""
    t11, comp = _parse()
    counts, options = {}, {}
    for cond in t11:
        counts[cond] = {}
        for c in CRIT[:6]:
            (s, d) = comp[cond][c]
            ks, kd = _ks(s, SINGLE_N), _ks(d, DUAL_N)
            assert len(ks) == len(kd) == 1, (cond, c)
            counts[cond][c] = (ks[0], SINGLE_N, kd[0], DUAL_N)
        found = []
        for ns in range(1, SINGLE_N + 1):
            for nd in range(1, DUAL_N + 1):
                pick = {}
                for c in CRIT[6:]:
                    (s, d), p = comp[cond][c], t11[cond][c]
                    ok = [
                        (a, b)
                        for a in _ks(s, ns)
                        for b in _ks(d, nd)
                        if abs(100 * (a + b) / (ns + nd) - p) <= 0.05 + 1e-9
                    ]
                    if not ok:
                        break
                    pick[c] = (ok[0][0], ns, ok[0][1], nd)
                else:
                    found.append(pick)
        options[cond] = found
    fixed = sum(o[0]["ED"][1] + o[0]["ED"][3] for c, o in options.items() if len(o) == 1)
    for cond, found in options.items():
        if len(found) > 1:
            found[:] = [f for f in found if f["ED"][1] + f["ED"][3] == 3024 - fixed]
        assert len(found) == 1, (cond, found)
        counts[cond].update(found[0])
    return t11, comp, counts, options


def tally_csv(counts, path: Path) -> Path:
    """Three raters per item; positives 3 or 2 (majority 1), 0 or 1 (majority 0) alternating.
    Error-free episodes carry a closed error gate and (ignored) positive ED/OC/PF votes."""
    rows = []
    for cond, cc in counts.items():
        for arms, tasks, ki, ni in (("single", PAPER_SINGLE_ARM, 0, 1), ("dual", PAPER_DUAL_ARM, 2, 3)):
            episodes = [(t, s) for t in tasks for s in range(20)]
            for c in CRIT:
                k, n = cc[c][ki], cc[c][ni]
                for i, (task, seed) in enumerate(episodes):
                    gated = c in ("ED", "OC", "PF")
                    if gated and i >= n:  # no observable error: the gate is closed, the votes must not count
                        rows.append([cond, task, arms, seed, c, 3, 3, 3, 0])
                        continue
                    pos = (3 if i % 2 else 2) if i < k else (0 if i % 2 else 1)
                    rows.append([cond, task, arms, seed, c, 3, pos, 3 if gated else None, 3 if gated else None])
    f = pd.DataFrame(
        rows,
        columns=["model", "task", "arms", "seed", "criterion", "raters", "positives", "gate_raters", "gate_positives"],
    )
    f.insert(4, "run_index", 1)
    f["gate_raters"] = f["gate_raters"].astype("Int64")
    f["gate_positives"] = f["gate_positives"].astype("Int64")
    f.to_csv(path, index=False)
    return path


def test_table_11_is_rebuilt_from_tables_12_to_14_and_their_counts(tmp_path):
    t11, comp, counts, options = derive_counts()
    # the error-episode counts are identified: one (single, dual) pair per condition, 3,024 in all (Table 28)
    err = {c: (v["ED"][1], v["ED"][3]) for c, v in counts.items()}
    assert err["Qwen3.8-max"] == (142, 55) and err["Mimo-v2.5"] == (219, 60)
    assert sum(a + b for a, b in err.values()) == 3024
    assert len(options["Mimo-v2.5"]) == 1 and all(len(o) == 1 for o in options.values())
    tally = read_tallies(tally_csv(counts, tmp_path / "paper.csv"))

    pooled = diagnostic_scores(tally)
    assert pooled.attrs["title"].endswith("(Table 11)")
    got = pooled.set_index(["condition", "criterion"])
    for cond, row in t11.items():
        label = f"{cond} | active | summary own"
        for c, value in row.items():
            k, n = got.loc[(label, c), ["k", "n"]]
            assert n == counts[cond][c][1] + counts[cond][c][3], (cond, c)
            assert abs(got.loc[(label, c), "score_pct"] - value) <= 0.05 + 1e-9, (cond, c, got.loc[(label, c)], value)
    for module, crits in L.MODULES.items():
        comps = diagnostic_components(tally, module).set_index(["condition", "subset", "criterion"])
        for cond in t11:
            for c in crits:
                s, d = comp[cond][c]
                assert round(comps.loc[(f"{cond} | active | summary own", "single", c), "score_pct"], 1) == s
                assert round(comps.loc[(f"{cond} | active | summary own", "dual", c), "score_pct"], 1) == d
    md = to_markdown(pooled)
    assert (
        "| Qwen3.8-max \\| active \\| summary own | 100.0 | 79.3 | 78.9 | 100.0 | 90.7 | 73.9 | 73.6 | 46.7 | 42.6 |"
        in md
    )


# ------------------------------------------------------------------------- hand-made labels, gates
def outcome(task="grasp_single_cube", seed=1, success=False, model="m", track="base", **kw) -> dict:
    r = {c: None for c in COLUMNS}
    r.update(
        schema_version=SCHEMA_VERSION, run_id="run", experiment="x", model=model, summary_source="own",
        protocol="active", track=track, task=task, base_task=task if track == "base" else task.removesuffix("_heldout"),
        arms="dual" if task in PAPER_DUAL_ARM else "single", seed=seed, run_index=1, attempt=1, status="ok",
        success=success, end_reason="success" if success else "stop", checkpoints_done=1, checkpoints_total=2,
        privileged=False, record=f"_records/{model}/{task}/{seed}/events.jsonl",
    )  # fmt: skip
    r.update(kw)
    r["condition"] = f"{r['model']} | {r['protocol']} | summary {r['summary_source']}"
    return r


def write_run(run: Path, rows: list[dict]) -> Path:
    for i, r in enumerate(rows):
        write_row(run / "outcomes" / f"ep-{i:03d}.parquet", r)
    return run


def label(run: Path, record: str, annotator: str, error=None, ambiguity=None, **labels) -> None:
    L.append(run, {"record": record, "annotator": annotator, "gates": {"error": error, "ambiguity": ambiguity},
                   "labels": labels})  # fmt: skip


def score(frame, criterion, condition="m | active | summary own"):
    return frame.set_index(["condition", "criterion"]).loc[(condition, criterion)]


def test_gates_votes_null_and_na_rules_on_hand_made_labels(tmp_path):
    run = write_run(tmp_path / "run", [outcome(seed=1), outcome(seed=2, success=True), outcome(seed=3)])
    rec = {s: f"_records/m/grasp_single_cube/{s}/events.jsonl" for s in (1, 2, 3)}
    # episode 1: error-free (the error gate is closed 0-3); its ED votes are ignored
    for a in ("a", "b", "c"):
        label(run, rec[1], a, error=False, ambiguity=False, TL=1, SR=1, MS=1, MP=1, FG=0, ED=1)
    # episode 2: error gate 2 yes + 1 null (open: the null is not a vote); ED 1,1,0 -> 1; OC 0,0,null -> 0;
    # PF never judged (applicable but unjudged); AE gate closed everywhere -> AE NA, left out of SPU
    label(run, rec[2], "a", error=True, ambiguity=False, TL=1, SR=0, MS=1, MP=1, FG=1, ED=1, OC=0)
    label(run, rec[2], "b", error=True, ambiguity=False, TL=1, SR=0, MS=1, MP=0, FG=1, ED=1, OC=0)
    label(run, rec[2], "c", error=None, ambiguity=False, TL=0, SR=1, MS=1, MP=0, FG=0, ED=0)
    # episode 3: a 1-1 tie on the error gate (third rater null) closes it; TL judged by two raters 1-0 -> 0
    label(run, rec[3], "a", error=True, TL=1, SR=1, MS=1, MP=1, FG=1, ED=1, OC=1, PF=1)
    label(run, rec[3], "b", error=False, TL=0, SR=1, MS=1, MP=1, FG=1)
    label(run, rec[3], "c", SR=1, MS=1, MP=1, FG=1)
    t = annotation_tallies(load_runs(run), run)
    s = diagnostic_scores(t)
    assert tuple(score(s, "ED")[["k", "n"]]) == (1, 1)  # only episode 2 is an error episode
    assert tuple(score(s, "OC")[["k", "n"]]) == (0, 1)
    assert score(s, "PF")["n"] == 0 and math.isnan(score(s, "PF")["score_pct"])  # NA, never 0
    assert score(s, "AE")["n"] == 0 and math.isnan(score(s, "AE")["score_pct"])
    assert tuple(score(s, "TL")[["k", "n"]]) == (2, 3)  # ep3: 1-1 between two raters is not a majority
    assert tuple(score(s, "SR")[["k", "n"]]) == (2, 3)
    assert tuple(score(s, "MP")[["k", "n"]]) == (2, 3)
    notes = " ".join(s.attrs["notes"])
    assert "1 applicable item(s) without any 0/1 judgment" in notes and "1 episode gate(s) tied" in notes
    assert "3 annotator(s) on 3 episode(s)" in notes and "AE, OC" not in notes
    m = module_overview(t, track="base").set_index("module")
    assert m.loc["SPU", "score_pct"] == pytest.approx((200 / 3 + 200 / 3) / 2)  # TL, SR; AE left out
    assert m.loc["SPU", "left_out"] == "AE" and m.loc["ER", "left_out"] == "PF"
    assert m.loc["ER", "score_pct"] == pytest.approx(50.0)  # mean(ED 100, OC 0), PF is not a zero
    assert to_markdown(s).count("NA") >= 2


def test_vote_rules_with_two_and_four_raters_and_the_latest_save(tmp_path):
    run = write_run(tmp_path / "run", [outcome(seed=1), outcome(seed=2)])
    r1, r2 = (f"_records/m/grasp_single_cube/{s}/events.jsonl" for s in (1, 2))
    label(run, r1, "a", TL=0, FG=1)
    label(run, r1, "a", TL=1, FG=1)  # a later save replaces the earlier one
    label(run, r1, "b", TL=0, FG=1)
    for a, v in zip("abcd", (1, 1, 1, 0), strict=True):  # 4 raters: FG 3-1 -> 1 ; TL 2-2 -> 0
        label(run, r2, a, TL=int(a in "ab"), FG=v)
    t = annotation_tallies(load_runs(run), run)
    item = t.set_index(["seed", "criterion"])
    assert tuple(item.loc[(1, "TL"), ["raters", "positives"]]) == (2, 1)
    got = {
        rule: diagnostic_scores(t, rule).set_index("criterion")["k"].to_dict()
        for rule in ("majority", "strict", "permissive")
    }
    assert (got["majority"]["TL"], got["strict"]["TL"], got["permissive"]["TL"]) == (0, 0, 2)
    assert (got["majority"]["FG"], got["strict"]["FG"], got["permissive"]["FG"]) == (2, 1, 2)
    assert "2 item(s) split evenly" in " ".join(diagnostic_scores(t).attrs["notes"])


def test_an_ungated_answer_falls_back_to_whether_raters_labelled_it_and_unknown_records_are_noted(tmp_path):
    run = write_run(tmp_path / "run", [outcome(seed=1), outcome(seed=2)])
    r1, r2 = (f"_records/m/grasp_single_cube/{s}/events.jsonl" for s in (1, 2))
    for a in "ab":
        label(run, r1, a, ED=1, TL=1)  # nobody answered the error gate, but ED was judged: ED, OC, PF apply
        label(run, r2, a, TL=1)  # no gate, no ED label: not applicable (NA), not unjudged
    label(run, "_records/elsewhere/events.jsonl", "a", TL=0)
    t = annotation_tallies(load_runs(run), run)
    s = diagnostic_scores(t)
    assert tuple(score(s, "ED")[["k", "n"]]) == (1, 1) and tuple(score(s, "TL")[["k", "n"]]) == (2, 2)
    notes = " ".join(s.attrs["notes"])
    assert "Labels of 1 record(s) without a judged outcome row left out" in notes
    assert "applicable iff some rater labelled a criterion of that gate" in notes
    # unjudged: SR, MS, MP, FG of both episodes, and OC, PF of episode 1 (its gate is open through ED)
    assert "10 applicable item(s) without any 0/1 judgment" in notes


def test_annotator_files_and_a_tally_csv_reduce_to_the_same_scores(tmp_path):
    rows = [outcome(seed=s, success=s == 1) for s in (1, 2)] + [outcome(task="lift_pot", seed=1)]
    run = write_run(tmp_path / "run", rows)
    votes = {  # (seed, task) -> per annotator (error gate, TL, FG, ED)
        (1, "grasp_single_cube"): [(True, 1, 1, 1), (True, 1, 0, 1), (False, 1, 0, 0)],
        (2, "grasp_single_cube"): [(False, 1, 1, None), (False, 0, 1, None), (False, 1, 1, None)],
        (1, "lift_pot"): [(True, 0, 0, 0), (True, 0, 1, 1), (True, 1, 0, 0)],
    }
    csv = []
    for (seed, task), v in votes.items():
        for a, (g, tl, fg, ed) in zip("abc", v, strict=True):
            label(run, f"_records/m/{task}/{seed}/events.jsonl", a, error=g, TL=tl, FG=fg, ED=ed)
        arms = "dual" if task == "lift_pot" else "single"
        gates = sum(x[0] for x in v)
        for c, i in (("TL", 1), ("FG", 2), ("ED", 3)):
            judged = [x[i] for x in v if x[i] is not None]
            gate = (
                {"gate_raters": 3, "gate_positives": gates} if c == "ED" else {"gate_raters": "", "gate_positives": ""}
            )
            csv.append(dict(model="m", task=task, arms=arms, seed=seed, run_index=1, criterion=c, raters=len(judged),
                            positives=sum(judged), **gate))  # fmt: skip
    pd.DataFrame(csv).to_csv(tmp_path / "t.csv", index=False)
    a = diagnostic_scores(annotation_tallies(load_runs(run), run))
    b = diagnostic_scores(read_tallies(tmp_path / "t.csv"))
    cols = ["condition", "criterion", "k", "n", "score_pct"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert tuple(score(a, "ED")[["k", "n"]]) == (1, 2)  # seed-1 cube 2-1 yes; pot 1 of 3 -> 0
    c = label_concordance(annotation_tallies(load_runs(run), run)).set_index("criterion")
    # TL: labels 1 (success), 1 (fail), 0 (fail) -> agree on 2 of 3; FG 0 (success), 1, 0 -> 1 of 3
    assert tuple(c.loc["TL", ["episodes", "pos_success", "pos_failure", "neg_failure"]]) == (3, 1, 1, 1)
    assert c.loc["TL", "agree_pct"] == pytest.approx(200 / 3) and c.loc["FG", "neg_success"] == 1
    assert c.loc["FG", "agree_pct"] == pytest.approx(100 / 3)


HEAD = "model,task,arms,seed,run_index,criterion,raters,positives"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("model,task,arms,seed,run_index,criterion,raters\nm,t,single,1,1,TL,3\n", "missing column(s) positives"),
        (f"{HEAD},postives\n", "unknown column(s) postives"),
        (f"{HEAD}\nm,t,single,1,1,TL,3,4\n", "line 2: positives"),
        (f"{HEAD}\nm,t,single,1,1,XX,3,1\n", "criterion must be one of"),
        (f"{HEAD}\nm,t,both,1,1,TL,3,1\n", "arms must be single or dual"),
        (f"{HEAD}\nm,t,single,x,1,TL,3,1\n", "seed must be a whole"),
        (f"{HEAD},gate_raters\n", "come together"),
        (f"{HEAD}\nm,t,single,1,1,TL,3,1\nm,t,single,1,1,TL,3,2\n", "duplicate tally rows"),
    ],
)
def test_a_bad_tally_csv_gets_a_clear_error(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(TallyError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        read_tallies(path)
    if "column" in message:
        assert "required: model, task, arms, seed, run_index, criterion, raters, positives" in str(err.value)
        assert "optional: protocol, summary_source, track, gate_raters, gate_positives, success" in str(err.value)


def test_table_16_module_overview_on_the_transfer_track_and_the_profile_figure(tmp_path):
    rows = []
    for cond, tl, ed in (("A", (3, 3), (2, 0)), ("B", (3, 0), None)):
        for seed, (t, e) in enumerate(zip(tl, ed or (None, None), strict=True)):
            item = dict(model=cond, task="grasp_single_cube_heldout", arms="single", seed=seed, run_index=1)
            rows += [item | dict(track="transfer", criterion=c, raters=3, positives=v)
                     for c, v in (("TL", t), ("SR", 3), ("FG", 0))]  # fmt: skip
            if e is not None:
                rows.append(dict(model=cond, task="grasp_single_cube_heldout", arms="single", seed=seed, run_index=1,
                                 track="transfer", criterion="ED", raters=3, positives=e))  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "h.csv", index=False)
    t = read_tallies(tmp_path / "h.csv")
    m = module_overview(t)
    assert m.attrs["title"].endswith("transfer track (Table 16)")
    got = m.set_index(["condition", "module"])["score_pct"]
    assert got[("A | active | summary own", "SPU")] == pytest.approx(100.0)
    assert got[("B | active | summary own", "SPU")] == pytest.approx((50 + 100) / 2)
    assert got[("A | active | summary own", "RM")] == 0.0 and got[("A | active | summary own", "ER")] == 50.0
    assert math.isnan(got[("B | active | summary own", "ER")])  # no error episode at all: NA, not 0
    assert "| B \\| active \\| summary own | 75.0 | 0.0 | NA |" in to_markdown(m)
    assert len(diagnostic_scores(t)) == 0 or diagnostic_scores(t)["n"].sum() == 0  # base track: nothing here

    prof = diagnostic_profile(t, track="transfer", top=1)
    assert list(prof["condition"].unique()) == ["A | active | summary own"]  # higher mean criterion score
    path = diagnostic_profile_radar(diagnostic_profile(t, track="transfer"), tmp_path / "fig" / "p.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_figure_2b_reuses_the_checkpoint_micro_average(tmp_path):
    rows = [outcome(seed=1, checkpoints_done=2, checkpoints_total=2), outcome(seed=2, checkpoints_done=0)]
    rows += [outcome(task="lift_pot", seed=1, checkpoints_done=1, checkpoints_total=3)]
    df = load_runs(write_run(tmp_path / "run", rows))
    from vabench.analysis import checkpoint_progress

    prog = checkpoint_progress(df)
    assert prog.set_index(["scope", "task"]).loc[("subset", "all"), "progress_pct"] == pytest.approx(100 * 3 / 7)
    assert subtask_progress_bars(df, tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"


def test_table_21_seed_yield_from_the_committed_manifests():
    y = seed_yield()
    total = y.iloc[-1]
    assert len(y) == 15 and total["task"] == "all tasks"  # the 14 base families and the total
    assert set(y["task"][:-1]) == set(PAPER_SINGLE_ARM) | set(PAPER_DUAL_ARM)
    assert (y["probed"][:-1] == y["accepted"][:-1] + y["rejected"][:-1]).all()
    assert (y["accepted"][:-1] == 20).all() and total["accepted"] == 280
    assert total["yield_pct"] == pytest.approx(100 * 280 / total["probed"])
    assert total["paper_probed"] == 318 and y.set_index("task").loc["lift_pot", "paper_probed"] == 50
    assert len(seed_yield(track=None)) == 23  # every manifest (base, transfer, long horizon) and the total


def test_cli_prints_and_writes_the_diagnostic_tables(tmp_path, capsys):
    run = write_run(tmp_path / "run", [outcome(seed=1, success=True), outcome(seed=2)])
    for s in (1, 2):
        for a in "abc":
            label(run, f"_records/m/grasp_single_cube/{s}/events.jsonl", a, error=s == 2, ambiguity=True,
                  TL=1, AE=int(a != "c"), SR=1, MS=1, MP=s % 2, FG=int(a == "a"), ED=0 if s == 2 else None)  # fmt: skip
    out = tmp_path / "out"
    assert main([str(run), "--out", str(out), "--seed-yield", "--figures"]) == 0
    printed = capsys.readouterr().out
    assert "(Table 11)" in printed and "(Table 28)" in printed and "(Table 21)" in printed
    names = {p.name for p in out.iterdir()}
    for t in ("diagnostics_pooled", "diagnostics_spu", "diagnostics_rm", "diagnostics_er", "annotation_agreement",
              "vote_rule_sensitivity", "vote_rule_orderings", "label_concordance", "module_overview_base",
              "seed_yield"):  # fmt: skip
        assert {f"{t}.md", f"{t}.csv"} <= names, t
    assert {"diagnostic_profile.png", "subtask_progress.png", "success_bars.png"} <= names
    agreement = pd.read_csv(out / "annotation_agreement.csv").set_index("criterion")
    assert agreement.loc["FG", "n"] == 2 and agreement.loc["FG", "unanimity_pct"] == 0.0
    assert agreement.loc["All criteria", "n"] == 2 * 6 + 1  # six ungated + AE on both, ED on one
    bad = tmp_path / "bad.csv"
    bad.write_text("model,task\n")
    assert main(["--tallies", str(bad)]) == 2
    assert "missing column(s) arms" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([])
