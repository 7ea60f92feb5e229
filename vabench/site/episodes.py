"""The site's episode pages and the lists that lead to them: one list per condition and task (paged,
so no page grows with the study), one page per outcome row with its record's timeline (what the
model saw, what it decided, what the executor did), the checker's verdict and what the
row-against-record check found. Media are linked from the run folder's ``_records/`` (default),
copied beside the pages, or left out (``--media link|copy|none``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from vabench.results.recordfile import FRAMES, RECORDING, VIDEO_NAME
from vabench.review import runs as R
from vabench.verify.compare import plain

from .pages import Writer, href, slug
from .sources import RUN, Run, check_row

ORDER = ["condition", "task", "seed", "run_index", "attempt", RUN]
# what the lists and the episode pages read of a prepared row (the rest stays in the raw row)
KEEP = [*ORDER, "model", "state", "y", "end_reason", "steps", "budget", "model_calls", "cost_usd"]
MEDIA = ("link", "copy", "none")


def plan(p: pd.DataFrame, page_size: int) -> pd.DataFrame:
    """Where every row goes: its episode page (``page``), its list page (``listing``) and its
    neighbours in that list (``prev``, ``next``); ``p`` is the prepared rows, one per outcome row."""
    slugs = {c: slug(c) for c in p["condition"].unique()}
    e = p[KEEP].assign(cslug=p["condition"].map(slugs), row=range(len(p))).sort_values(ORDER, kind="stable")
    seed = e["seed"].astype("string").fillna("-")
    stem = "e/" + e[RUN].astype(str) + "/" + e["cslug"] + "/" + e["task"] + "/s" + seed
    stem += "-r" + e["run_index"].astype(str) + "-a" + e["attempt"].astype(str)
    twin = stem.groupby(stem).cumcount()
    e["page"] = stem + twin.map(lambda n: f"-{n + 1}" if n else "") + ".html"
    group = e.groupby(["cslug", "task"], sort=False)
    number = group.cumcount() // page_size
    e["listing"] = listing_name(e["cslug"], e["task"], number)
    e["prev"], e["next"] = group["page"].shift(1), group["page"].shift(-1)
    return e


def listing_name(cslug, task, number):
    """``c/<condition>/<task>.html``, then ``-2``, ``-3`` ... for the pages after the first."""
    return "c/" + cslug + "/" + task + number.map(lambda n: f"-{n + 1}" if n else "") + ".html"


def write_lists(w: Writer, e: pd.DataFrame, checks: dict[int, list[str] | None], page_size: int) -> int:
    """One list page per (condition, task) and page of ``page_size`` rows; returns the count."""
    count = 0
    for (cslug, task), g in e.groupby(["cslug", "task"], sort=False):
        pages = [g.iloc[i : i + page_size] for i in range(0, len(g), page_size)]
        names = list(dict.fromkeys(g["listing"]))
        for i, part in enumerate(pages):
            rows = [_list_row(r, checks.get(r["row"])) for r in part.to_dict("records")]
            w.page(names[i], "episodes.html", condition=g["condition"].iloc[0], cslug=cslug, task=task, rows=rows,
                   pages=names, at=i, total=len(g))  # fmt: skip
            count += 1
    return count


def _list_row(r: dict, reasons: list[str] | None) -> dict:
    r = {k: plain(v) for k, v in r.items()}
    return {
        **r,
        "verdict": verdict(r),
        "check": "not checked" if reasons is None else ("ok" if not reasons else "differs"),
    }


def verdict(r: dict) -> str:
    """The checker's verdict as a row states it (an unjudged row says why)."""
    if r["state"] == "judged":
        return "success" if r["y"] == 1.0 else f"failure ({r['end_reason']})"
    return str(r["state"]).replace("_", " ")


def media_base(run: Run, folder: str, page: Path, out: Path, mode: str) -> str | None:
    """The URL (relative to ``page``) of the record folder's media, or None with ``--media none``."""
    if mode == "none":
        return None
    source = run.root / folder
    if mode == "link":
        return href(source, page)
    target = out / "media" / str(run.index) / folder
    target.mkdir(parents=True, exist_ok=True)
    for part in (FRAMES, RECORDING):
        if (source / part).is_dir():
            shutil.copytree(source / part, target / part, dirs_exist_ok=True)
    if (source / VIDEO_NAME).is_file():
        shutil.copy2(source / VIDEO_NAME, target / VIDEO_NAME)
    return href(target, page)


def write_episode(w: Writer, run: Run, raw: dict, r: dict, check: bool, mode: str) -> list[str] | None:
    """The page of one outcome row (``raw`` as written, ``r`` its prepared and planned row);
    returns the check's reasons ([] when the row matches its record; None when not checked)."""
    reasons, events = check_row(run, raw) if check else (None, None)
    ep, problem = None, None
    if raw.get("record"):
        try:
            ep = R.episode(run.root, raw["record"], events or None)
        except (R.NotInRun, OSError, ValueError) as e:
            problem = str(e)
    page = w.out / r["page"]
    base = media_base(run, ep.folder, page, w.out, mode) if ep is not None else None
    w.page(r["page"], "episode.html", run=run, row=raw, r=r, ep=ep, problem=problem, reasons=reasons,
           verdict=verdict(r), base=base, mode=mode)  # fmt: skip
    return reasons
