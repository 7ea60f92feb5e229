"""Beyond one robot and one look (issue 28; not paper tables): success per visual perturbation,
paired with the unperturbed episodes (``+experiment=robustness``), and success per embodiment,
compared with the Panda (``+experiment=embodiments``). Shared rules: ``common``."""

from __future__ import annotations

import pandas as pd

from vabench.core.vocab import Perturbation, Robot, Track

from ..load import exclusion_note, privileged_note
from ..stats import mcnemar_exact, sign_test
from .common import _arms_of, _finish, _judged, _order, _pct, _pooled, _scope

GROUP = ["model", "protocol", "summary_source"]


def robustness(df: pd.DataFrame) -> pd.DataFrame:
    """Base track, per (model, protocol, summary source, robot) and perturbation: pooled k/n, and on
    the episodes judged both unperturbed and perturbed (same task, seed and run: the same physics),
    the paired difference (pp), the pairs lost and gained and an exact McNemar test."""
    p, notes = _scope(df, Track.BASE, look=False)
    j = _judged(p)
    rows = []
    for (model, protocol, source, robot), g in j.groupby([*GROUP, "robot"]):
        if set(g["perturbation"]) == {Perturbation.NONE}:
            continue
        base = g[g["perturbation"] == Perturbation.NONE][["task", "seed", "run_index", "y"]]
        for look, h in sorted(g.groupby("perturbation"), key=lambda x: (x[0] != Perturbation.NONE, x[0])):
            k, n = _pooled(h)
            pairs = h.merge(base, on=["task", "seed", "run_index"], suffixes=("", "_none"))
            lost = int(((pairs["y_none"] == 1) & (pairs["y"] == 0)).sum())
            gained = int(((pairs["y_none"] == 0) & (pairs["y"] == 1)).sum())
            paired = look != Perturbation.NONE and len(pairs)
            delta = 100.0 * (pairs["y"].mean() - pairs["y_none"].mean()) if paired else float("nan")
            p_value = mcnemar_exact(lost, gained) if paired else float("nan")
            rows.append([model, protocol, source, robot, look, h["task"].nunique(), k, n, _pct(k, n)])
            rows[-1] += [len(pairs) if paired else 0, delta, lost if paired else 0, gained if paired else 0, p_value]
    if not rows:
        notes.append("No condition has judged base-track episodes under a visual perturbation.")
    notes += [
        "A perturbation changes the look only (vabench.envs.perturb): the same task, seed and run is the same "
        "physics, so each episode pairs with its unperturbed twin. delta = perturbed - none over the pairs (pp); "
        "lost/gained: pairs that succeeded only unperturbed / only perturbed; McNemar: exact two-sided test.",
        exclusion_note(p),
        *privileged_note(j["model"].unique()),
    ]
    cols = [*GROUP, "robot", "perturbation", "tasks", "k", "n", "success_pct", "pairs", "delta_pp", "lost", "gained"]
    title = "Visual robustness: success per perturbation, paired with the unperturbed episodes"
    return _finish(rows, [*cols, "mcnemar_p"], "robustness", title, notes)


def embodiments(df: pd.DataFrame) -> pd.DataFrame:
    """Unperturbed rows, per (model, protocol, summary source), robot and task: pooled k/n and the
    difference to the Panda's rate on the same task (pp); then per robot an ``all`` row: the
    macro-average over the tasks both judged, its difference to the Panda's, and a sign test over
    those tasks. Each robot plays its own verified seeds, so the pairing is per task, not per seed."""
    p, notes = _scope(df, None, look=False)
    p = p[p["perturbation"] == Perturbation.NONE]
    j = _judged(p)
    rows = []
    for (model, protocol, source), g in j.groupby(GROUP):
        if set(g["robot"]) == {Robot.PANDA}:
            continue
        arms = _arms_of(g)
        panda = {t: _pct(*_pooled(h)) for t, h in g[g["robot"] == Robot.PANDA].groupby("task")}
        for robot in sorted(set(g["robot"]), key=lambda r: (r != Robot.PANDA, r)):
            r = g[g["robot"] == robot]
            rates = {}
            for t in _order(r["task"], arms):
                k, n = _pooled(r[r["task"] == t])
                rates[t] = _pct(k, n)
                delta = rates[t] - panda[t] if t in panda and robot != Robot.PANDA else float("nan")
                rows.append([model, protocol, source, robot, arms.get(t), t, k, n, rates[t], delta, float("nan")])
            if robot == Robot.PANDA:
                continue
            common = [t for t in rates if t in panda]
            worse = sum(rates[t] < panda[t] for t in common)
            better = sum(rates[t] > panda[t] for t in common)
            mine = sum(rates[t] for t in common) / len(common) if common else float("nan")
            theirs = sum(panda[t] for t in common) / len(common) if common else float("nan")
            rows.append([model, protocol, source, robot, "all", f"{len(common)} tasks", None, None, mine])
            rows[-1] += [mine - theirs, sign_test(worse, better)]
    if not rows:
        notes.append("No condition has judged unperturbed episodes of a robot other than the Panda.")
    notes += [
        "Each robot plays its own verified seeds (vabench/envs/seed_manifests/<robot>/), so a robot is compared "
        "with the Panda per task: delta = robot - panda (pp); 'all' is the macro-average over the tasks both "
        "judged (equal task weight) and a two-sided sign test over them.",
        exclusion_note(p),
        *privileged_note(j["model"].unique()),
    ]
    cols = [*GROUP, "robot", "arms", "task", "k", "n", "success_pct", "delta_pp", "sign_p"]
    return _finish(rows, cols, "embodiments", "Embodiments: success per robot and task, difference to the Panda", notes)
