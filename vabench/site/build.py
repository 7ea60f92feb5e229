"""Building the site: read the runs, check every row against its record while its episode page is
written, then the pages of numbers (leaderboard, tasks, conditions, every analysis table, figures)
and the runs with what the check found."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from vabench.analysis import available_tables, cost_table, paired_comparison, prepare, save_figures, write_tables
from vabench.analysis.load import prepared_once
from vabench.core.errors import PathTaken
from vabench.verify.compare import plain

from . import episodes as E
from .leaderboard import condition_cells, leaderboard, shown, task_cells
from .pages import Writer, table
from .sources import RUN, Run, all_rows, now, read_runs

MARK = ".vabench-site"  # a folder holding it is a site this command may rebuild


@dataclass
class Options:
    media: str = "link"
    check: bool = True
    page_size: int = 200
    paired: list[tuple[str, str]] = field(default_factory=list)
    figures: bool = True


@dataclass
class Built:
    out: Path
    pages: int
    episodes: int
    seconds: float
    sizes: dict[str, int]

    @property
    def largest(self) -> tuple[str, int]:
        return max(self.sizes.items(), key=lambda kv: kv[1])


def fresh(out: Path) -> None:
    """An empty site folder: a new one, or one this command built before (never anything else)."""
    if out.exists() and any(out.iterdir()):
        if not (out / MARK).exists():
            raise PathTaken(f"{out} is not empty and not a site built by vabench.site: give a new --out folder")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARK).write_text("built by python -m vabench.site; rebuilt in place\n")


def build(folders: list[Path], out: Path, opts: Options | None = None) -> Built:
    """The site of the run folders ``folders`` in ``out``."""
    opts, started = opts or Options(), time.perf_counter()
    if opts.media not in E.MEDIA:
        raise ValueError(f"media must be one of {', '.join(E.MEDIA)}, not {opts.media!r}")
    runs = read_runs(folders)
    df = all_rows(runs)
    paired = [paired_comparison(df, a, b) for a, b in opts.paired]  # a name that matches nothing fails here
    out = Path(out).resolve()
    fresh(out)
    w = Writer(out, {"built": now(), "style": "site.css"})
    w.style()
    with prepared_once(df):
        p, _ = prepare(df)
        e = E.plan(p, opts.page_size)
        checks = _episodes(w, runs, df, e, opts)
        E.write_lists(w, e, checks, opts.page_size)
        numbers = _numbers(w, df, e, opts) | {"paired": [table(t) for t in paired]}
    _run_pages(w, runs, e)
    w.page("index.html", "index.html", runs=runs, **numbers)
    return Built(out, len(w.sizes), len(e), time.perf_counter() - started, dict(w.sizes))


def _episodes(w: Writer, runs: list[Run], df: pd.DataFrame, e: pd.DataFrame, opts: Options) -> dict:
    """Every episode page; each run's check filled in; returns row -> reasons (None: not checked)."""
    planned = e.set_index("row").to_dict("index")
    checks: dict[int, list[str] | None] = {}
    for run in runs:
        mine = df.index[df[RUN] == run.index]
        for i, raw in zip(mine, df.loc[mine].to_dict("records"), strict=True):
            raw = {k: plain(v) for k, v in raw.items()}
            r = {k: plain(v) for k, v in planned[i].items()}  # no NaN for a missing neighbour or seed
            checks[i] = E.write_episode(w, run, raw, {**r, "row": i}, opts.check, opts.media)
        if opts.check:
            run.check.done, run.check.when, run.check.rows = True, now(), len(mine)
            run.check.differing = {i: checks[i] for i in mine if checks[i]}
            run.check.matching = len(mine) - len(run.check.differing)
    return checks


def _numbers(w: Writer, df: pd.DataFrame, e: pd.DataFrame, opts: Options) -> dict:
    """The leaderboard, tasks, conditions and tables pages; returns what the index shows."""
    costs = cost_table(df)
    board = leaderboard(df, costs)
    tables = available_tables(df)
    first = e.drop_duplicates(["cslug", "task"]).set_index(["condition", "task"])["listing"].to_dict()
    slugs = dict(zip(e["condition"], e["cslug"], strict=True))
    matrix = tables["success_matrix"]
    w.page("tasks.html", "tasks.html", tasks=task_cells(matrix), lists=first, slugs=slugs, notes=matrix.attrs["notes"])
    for c, cslug in slugs.items():
        cost = costs[costs["condition"] == c].copy()
        cost.attrs = dict(costs.attrs)
        w.page(f"c/{cslug}.html", "condition.html", condition=c, cells=condition_cells(matrix, c),
               board=shown(board[board["condition"] == c]), costs=table(cost),
               episodes=[(t, page) for (k, t), page in first.items() if k == c])  # fmt: skip
    write_tables(tables, w.out / "tables", "csv")
    w.page("tables.html", "tables.html", tables={name: table(f) for name, f in tables.items()})
    figures = [f.relative_to(w.out).as_posix() for f in save_figures(df, w.out / "figures")] if opts.figures else []
    return {"board": shown(board), "board_notes": board.attrs.get("notes", []), "slugs": slugs, "total_rows": len(df),
            "costs": table(costs), "figures": figures}  # fmt: skip


def _run_pages(w: Writer, runs: list[Run], e: pd.DataFrame) -> None:
    rows = e.set_index("row").to_dict("index")
    for run in runs:
        mine = e[e[RUN] == run.index]
        conditions = mine.groupby(["condition", "cslug"]).size().reset_index(name="rows").to_dict("records")
        differing = [{**rows[i], "reasons": reasons} for i, reasons in run.check.differing.items()]
        w.page(f"runs/{run.index}.html", "run.html", run=run, conditions=conditions, differing=differing[:500],
               more=max(0, len(differing) - 500))  # fmt: skip
