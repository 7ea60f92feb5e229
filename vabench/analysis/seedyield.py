"""Table 21: conditional seed yield per task, from the committed seed manifests.

Seed screening visits each task's ordered candidate pool until 20 seeds are accepted, so the
candidates probed are the accepted plus the rejected ones, and the yield is conditional on being
probed (unvisited pool entries are not in the denominator). The manifests are read as JSON files
from ``vabench/envs/seed_manifests`` (importing ``vabench.envs`` would load the simulator).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd

import vabench
from vabench.core.paper import PAPER_TASKS
from vabench.core.vocab import Track

from .diagnostics import _done

MANIFEST_DIR = Path(vabench.__file__).parent / "envs" / "seed_manifests"
# the paper's Table 21: candidates probed per base task (20 retained each); the other ten took 20
PAPER_PROBED = {"place_cube_on_cube": 22, "place_single_cube": 22, "beat_block_hammer_right": 24, "lift_pot": 50}
_PAPER = {t.name: t for t in PAPER_TASKS}


def _reason(text: str) -> str:
    """A rejection reason's kind: its text up to the first colon or number."""
    head = str(text).split(":")[0].strip()
    return " ".join(w for w in head.split() if not any(ch.isdigit() for ch in w)) or "other"


def seed_yield(track: str | None = Track.BASE, manifest_dir: str | Path | None = None) -> pd.DataFrame:
    """Per task (of ``track``; None: every manifest): candidates probed, accepted, rejected, yield
    (%), the paper's probed count where it reports one, and the rejection reasons; then a total."""
    folder = Path(manifest_dir) if manifest_dir is not None else MANIFEST_DIR
    rows = []
    for path in sorted(folder.glob("*.json")):
        m = json.loads(path.read_text())
        task = m.get("task", path.stem)
        info = _PAPER.get(task)
        if track is not None and (info is None or info.track != track):
            continue
        acc, rej = list(m.get("accepted", [])), list(m.get("rejected", []))
        reasons = Counter(_reason(r.get("reason", "") if isinstance(r, dict) else r) for r in rej)
        paper = PAPER_PROBED.get(task, 20) if info is not None and info.track == Track.BASE else None
        rows.append([task, info.arms if info else None, info.track if info else None, len(acc) + len(rej), len(acc),
                     len(rej), paper, "; ".join(f"{k} {v}" for k, v in reasons.most_common())])  # fmt: skip
    cols = ["task", "arms", "track", "probed", "accepted", "rejected", "paper_probed", "rejections"]
    out = pd.DataFrame(rows, columns=cols)
    if len(out):
        papers = out["paper_probed"].dropna()
        total = ["all tasks", None, track, int(out["probed"].sum()), int(out["accepted"].sum()),
                 int(out["rejected"].sum()), int(papers.sum()) if len(papers) == len(out) else None, ""]  # fmt: skip
        out.loc[len(out)] = total
    out["paper_probed"] = out["paper_probed"].astype("Int64")
    out["yield_pct"] = 100.0 * out["accepted"] / out["probed"].where(out["probed"] > 0)
    out = out[["task", "arms", "track", "probed", "accepted", "rejected", "yield_pct", "paper_probed", "rejections"]]
    scope = "" if track is None else f", {track} track"
    notes = [
        f"From {folder} ({len(out) - 1 if len(out) else 0} task manifest(s){scope}).",
        "Yield is conditional on being probed: screening stops at 20 accepted seeds, so unvisited candidates are not "
        "in the denominator (paper Table 21: 318 probed, 280 retained, 88.1% over the 14 base tasks).",
    ]
    return _done(out, "seed_yield", "Conditional seed yield among candidates probed (Table 21)", notes)
