"""Flips between a run and its rescore (``python -m vabench.verify RUN --rescore OUT``): per task,
how many judged episodes went from success to failure and back when re-judged by current code."""

from __future__ import annotations

import pandas as pd

from vabench.core.vocab import Status

KEY = ["condition", "task", "seed", "run_index"]


def flips(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Per (condition, task): episodes compared, ``lost`` (success -> failure), ``gained``
    (failure -> success), and the success rate before and after. Rows judged in both only."""
    judged = before[before["status"] == Status.OK], after[after["status"] == Status.OK]
    both = judged[0].merge(judged[1], on=KEY, suffixes=("_before", "_after"))
    was, now = both["success_before"].astype(bool), both["success_after"].astype(bool)
    both = both.assign(lost=was & ~now, gained=~was & now, before=was, after=now)
    out = both.groupby(["condition", "task"])[["lost", "gained", "before", "after"]].agg(
        episodes=("lost", "size"),
        lost=("lost", "sum"),
        gained=("gained", "sum"),
        before=("before", "mean"),
        after=("after", "mean"),
    )
    return out.reset_index()
