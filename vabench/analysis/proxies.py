"""Automatic proxies for the trajectory criteria, computed from episode records (beyond the paper).

A proxy is a rule over the record's ``action`` events and the evaluator-side ``state`` events
(after reset and after every action: object poses and lift, each arm's GC, closed flag and the
bodies its fingers touch). It is never a human label: every proxy row carries ``source = "proxy"``,
proxy tables say so in their titles, and :func:`proxy_agreement` compares them with the human
majority label where both exist. Criteria that need judgment (AE, MS, MP, OC) have no proxy. A
record without state events gets only the proxies that need no state (FG).

The *target* is the task's manipulated body (:data:`TARGETS`; held-out variants use their base
task's entry; an unknown task uses every body): the first candidate an arm grasps (closed with the
body among its touching bodies; touched, for :data:`TOUCH_ONLY` tasks), else the one the GC came
nearest to. An *observable error* is an invalid action, a robot action the planner rejected, a
close after which the closing arm touches no body (a miss; not in TOUCH_ONLY tasks, which press with
closed fingers), or a drop (the target was held, is no
longer held, and fell more than :data:`DROP_M` in one action that was not an open).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from vabench.core.vocab import StepKind
from vabench.results.recordfile import Event, read_events

from . import labels as L
from .agreement import ac1_pair, cohen_kappa
from .diagnostics import _done, episode_labels
from .load import load_runs, prepare, privileged_note
from .tally import EPISODE

TL_RADIUS_M = 0.06  # GC within 6 cm of the target's origin
FG_WINDOW = 3  # actions before the first close
DROP_M = 0.02  # a held target falling this far in one action is a drop
PF_MOVE_M = 0.01  # a retried grasp this far (GC relative to the target) from the failed one is revised
PF_CHANGE = 0.25  # ... as is a repeated command whose distance or angle changed by a quarter
TARGETS = {  # task -> candidate target bodies (names passed to world.add in vabench/envs/tasks)
    "grasp_single_bottle": ("bottle",),
    "grasp_single_bottle_upright": ("bottle",),
    "place_single_bottle_upright": ("bottle",),
    "grasp_single_cube": ("cube",),
    "place_cube_in_bowl": ("cube",),
    "place_cube_on_cube": ("cube",),
    "place_single_cube": ("cube",),
    "grasp_single_pen": ("pen",),
    "grasp_pen_leaning_cube": ("pen",),
    "click_bell_right": ("bell",),
    "beat_block_hammer_right": ("hammer",),
    "place_shoe": ("shoe",),
    "handover_horizontal_block": ("block",),
    "lift_pot": ("pot",),
    "put_everything_in_basket": tuple(f"object_{i}" for i in range(5)),
}
TOUCH_ONLY = {"click_bell_right"}  # the target is pressed, not grasped
DEFINITIONS = {
    "TL": f"an arm's GC came within {TL_RADIUS_M * 1000:.0f} mm of the target's origin, or its fingers touched it.",
    "AE": None,
    "SR": "the first close (first touch, for a pressing task) holds (touches) the target, and at least half of the "
    "world translations before it brought the nearest GC closer to the target.",
    "MS": None,
    "MP": None,
    "FG": f"a camera action among the {FG_WINDOW} actions before the first close command, which is issued with the "
    f"GC within {TL_RADIUS_M * 1000:.0f} mm of the target (the look alone without state events; 0 without a close).",
    "ED": "after the first observable error the next action is a camera action or breaks off: another action, arm, "
    "axis or sign than a rejected/invalid one; anything but a +z move after a miss; an open or a -z move after a "
    "drop. 0 when nothing follows.",
    "OC": None,
    "PF": "after the first observable error the retry differs materially: the next robot action changes action, arm, "
    f"axis or sign, or its distance/angle by >= {PF_CHANGE:.0%} (rejected/invalid); the next close's GC-to-target "
    f"offset differs by >= {PF_MOVE_M * 1000:.0f} mm from the failed grasp's, or a rotation comes between (miss, "
    "drop). 0 without a retry.",
}
NO_PROXY = "no proxy: needs human judgment"
PROXIED = tuple(c for c in L.CRITERIA if DEFINITIONS[c])


@dataclass
class Record:
    task: str | None
    actions: list[dict] = field(default_factory=list)
    states: dict[int, dict] = field(default_factory=dict)


def read_record(path: str | Path) -> Record:
    """The action and state events of an episode record (JSONL; torn or non-object lines skipped)."""
    events = read_events(path)
    start = next((e for e in events if e.get("type") == Event.EPISODE_START), {})
    actions = sorted((e for e in events if e.get("type") == Event.ACTION and "step" in e), key=lambda e: e["step"])
    states = {int(e["step"]): e for e in events if e.get("type") == Event.STATE and "step" in e}
    return Record(start.get("task"), actions, states)


# ----------------------------------------------------------------------------------------- state
def _arms(state: dict) -> dict:
    return state.get("arms") or {}


def _touching(arm: dict, bodies) -> set:
    return set(arm.get("touching") or ()) & set(bodies)


def _held(state: dict, body: str) -> bool:
    return any(a.get("closed") and body in (a.get("touching") or ()) for a in _arms(state).values())


def _touched(state: dict, body: str) -> bool:
    return any(body in (a.get("touching") or ()) for a in _arms(state).values())


def _dist(state: dict, body: str) -> float:
    """Nearest GC to the body's origin (inf when either is missing)."""
    obj = (state.get("objects") or {}).get(body)
    gcs = [a["gc"] for a in _arms(state).values() if a.get("gc") is not None]
    if obj is None or not gcs:
        return math.inf
    return float(min(np.linalg.norm(np.asarray(g, float) - np.asarray(obj["p"], float)) for g in gcs))


def _payload(a: dict) -> dict:
    p = a.get("payload")
    return p if isinstance(p, dict) else {}


def _sig(a: dict) -> tuple:
    p = _payload(a)
    return (a.get("kind"), p.get("action"), p.get("arm"), p.get("axis"), p.get("sign"))


def _closes(rec: Record) -> list[tuple[int, str]]:
    """(step, arm) for every arm whose gripper went from open to closed in that step."""
    out = []
    for k in sorted(rec.states):
        prev = rec.states.get(k - 1)
        if prev is None:
            continue
        for arm, s in _arms(rec.states[k]).items():
            if s.get("closed") and not _arms(prev).get(arm, {}).get("closed", False):
                out.append((k, arm))
    return out


def target(rec: Record) -> str | None:
    """The first candidate grasped (touched, for pressing tasks), else the one the GC came nearest."""
    if not rec.states:
        return None
    first = rec.states[min(rec.states)]
    base = (rec.task or "").removesuffix("_heldout")
    cands = [c for c in TARGETS.get(base, tuple(first.get("objects") or ())) if c in (first.get("objects") or {})]
    test = _touched if base in TOUCH_ONLY else _held
    for k in sorted(rec.states):
        for c in cands:
            if test(rec.states[k], c):
                return c
    return min(cands, key=lambda c: min(_dist(s, c) for s in rec.states.values()), default=None)


def errors(rec: Record, tgt: str | None) -> list[tuple[int, str]]:
    """Observable errors in step order: (step, invalid | planner | miss | drop)."""
    out = []
    pressing = (rec.task or "").removesuffix("_heldout") in TOUCH_ONLY  # closed fingers press: no grasp to miss
    for a in rec.actions:
        k = a["step"]
        if a.get("kind") == StepKind.INVALID or a.get("valid") is False:
            out.append((k, StepKind.INVALID))
            continue
        if a.get("kind") == StepKind.ROBOT and a.get("planner_success") is False:
            out.append((k, "planner"))
            continue
        prev, now = rec.states.get(k - 1), rec.states.get(k)
        if prev is None or now is None:
            continue
        bodies = (now.get("objects") or {}).keys()
        closed_now = [
            s for arm, s in _arms(now).items() if s.get("closed") and not _arms(prev).get(arm, {}).get("closed")
        ]
        if not pressing and any(not _touching(s, bodies) for s in closed_now):
            out.append((k, "miss"))
        elif (
            tgt and _held(prev, tgt) and not _held(now, tgt) and not str(_payload(a).get("action", "")).endswith("open")
        ):
            lift = [(s.get("objects") or {}).get(tgt, {}).get("lift") or 0.0 for s in (prev, now)]
            if lift[1] < lift[0] - DROP_M:
                out.append((k, "drop"))
    return out


# ---------------------------------------------------------------------------------------- proxies
def _tl(rec: Record, tgt: str) -> int:
    return int(any(_dist(s, tgt) <= TL_RADIUS_M or _touched(s, tgt) for s in rec.states.values()))


def _sr(rec: Record, tgt: str) -> int:
    if (rec.task or "").removesuffix("_heldout") in TOUCH_ONLY:
        contact = next((k for k in sorted(rec.states) if _touched(rec.states[k], tgt)), None)
        ok = contact is not None
    else:
        contact = next((k for k, _ in _closes(rec)), None)
        ok = contact is not None and _held(rec.states[contact], tgt)
    if not ok:
        return 0
    closer = []
    for a in rec.actions:
        k = a["step"]
        if k < contact and str(_payload(a).get("action", "")).endswith("move_world") and k - 1 in rec.states:
            if k in rec.states:
                closer.append(_dist(rec.states[k], tgt) < _dist(rec.states[k - 1], tgt))
    return int(not closer or np.mean(closer) >= 0.5)


def _fg(rec: Record, tgt: str | None) -> int:
    idx = next((i for i, a in enumerate(rec.actions) if str(_payload(a).get("action", "")).endswith("close")), None)
    if idx is None:
        return 0
    looked = any(a.get("kind") == StepKind.CAMERA for a in rec.actions[max(0, idx - FG_WINDOW) : idx])
    at = rec.states.get(rec.actions[idx]["step"] - 1)  # the state the close was decided in
    near = at is None or tgt is None or _dist(at, tgt) <= TL_RADIUS_M  # without state: the look alone
    return int(looked and near)


def _ed(rec: Record, err: tuple[int, str]) -> int:
    k, kind = err
    failed = next(a for a in rec.actions if a["step"] == k)
    nxt = next((a for a in rec.actions if a["step"] > k), None)
    if nxt is None:
        return 0
    if nxt.get("kind") == StepKind.CAMERA:
        return 1
    p = _payload(nxt)
    act, move = str(p.get("action", "")), str(p.get("action", "")).endswith("move_world")
    if kind in (StepKind.INVALID, "planner"):
        return int(_sig(nxt) != _sig(failed))
    if kind == "miss":
        return int(not (move and p.get("axis") == "z" and p.get("sign") == "+"))
    return int(act.endswith("open") or (move and p.get("axis") == "z" and p.get("sign") == "-"))


def _magnitude(a: dict) -> float | None:
    p = _payload(a)
    v = p.get("distance_mm", p.get("angle_deg"))
    return float(v) if isinstance(v, int | float) else None


def _pf(rec: Record, err: tuple[int, str], tgt: str) -> int:
    k, kind = err
    failed = next(a for a in rec.actions if a["step"] == k)
    if kind in (StepKind.INVALID, "planner"):
        retry = next((a for a in rec.actions if a["step"] > k and a.get("kind") != StepKind.CAMERA), None)
        if retry is None:
            return 0
        if _sig(retry) != _sig(failed):
            return 1
        m0, m1 = _magnitude(failed), _magnitude(retry)
        return int(m0 is not None and m1 is not None and abs(m1 - m0) >= PF_CHANGE * max(abs(m0), 1e-9))
    closes = _closes(rec)
    before = [c for c in closes if c[0] <= k]
    after = [c for c in closes if c[0] > k]
    if not before or not after:
        return 0
    (k0, arm0), (k1, arm1) = before[-1], after[0]
    rotated = any(
        str(_payload(a).get("action", "")).endswith("rotate_local") for a in rec.actions if k < a["step"] < k1
    )
    return int(
        rotated or np.linalg.norm(_offset(rec.states[k1], arm1, tgt) - _offset(rec.states[k0], arm0, tgt)) >= PF_MOVE_M
    )


def _offset(state: dict, arm: str, body: str) -> np.ndarray:
    """The arm's GC relative to the body's origin (NaN when either is missing)."""
    gc, obj = _arms(state).get(arm, {}).get("gc"), (state.get("objects") or {}).get(body)
    if gc is None or obj is None:
        return np.full(3, np.nan)
    return np.subtract(gc, obj["p"])


def record_proxies(rec: Record) -> dict[str, tuple[int | None, bool | None, str]]:
    """Criterion -> (proxy label or None, error gate or None, why a label is missing)."""
    tgt = target(rec)
    out: dict[str, tuple] = {"FG": (_fg(rec, tgt), None, "")}
    if not rec.states or tgt is None:
        why = "no state events in the record" if not rec.states else "no target body found"
        return out | {c: (None, None, why) for c in ("TL", "SR", "ED", "PF")}
    out["TL"], out["SR"] = (_tl(rec, tgt), None, ""), (_sr(rec, tgt), None, "")
    errs = errors(rec, tgt)
    if not errs:
        return out | {c: (None, False, "no observable error (NA)") for c in ("ED", "PF")}
    return out | {"ED": (_ed(rec, errs[0]), True, ""), "PF": (_pf(rec, errs[0], tgt), True, "")}


# ----------------------------------------------------------------------------------------- tables
def proxy_labels(*folders: str | Path) -> pd.DataFrame:
    """One row per judged episode with a record and proxied criterion: the episode key, ``proxy``
    (0/1/<NA>), ``error_gate`` (ED, PF), ``note`` and ``source = "proxy"``."""
    rows, missing = [], 0
    for folder in folders:
        p, _ = prepare(load_runs(folder))
        for r in p[(p["state"] == "judged") & p["record"].notna()].itertuples(index=False):
            path = Path(folder) / r.record
            if not path.is_file():
                missing += 1
                continue
            key = [getattr(r, c) for c in EPISODE] + [r.model, r.arms, r.record, str(folder)]
            for c, (label, gate, note) in record_proxies(read_record(path)).items():
                rows.append([*key, c, label, gate, note])
    cols = [*EPISODE, "model", "arms", "record", "folder", "criterion", "proxy", "error_gate", "note"]
    out = pd.DataFrame(rows, columns=cols)
    out["proxy"] = out["proxy"].astype("Int8")
    out["error_gate"] = out["error_gate"].astype("boolean")
    out["source"] = "proxy"
    out.attrs["notes"] = [f"{missing} judged row(s) whose record file is missing: no proxy."] if missing else []
    return out


def definition_notes() -> list[str]:
    return [f"{c}: {DEFINITIONS[c] or NO_PROXY}" for c in L.CRITERIA]


def proxy_scores(proxies: pd.DataFrame) -> pd.DataFrame:
    """Per condition and proxied criterion: proxy-positive of proxy-labelled episodes (%)."""
    lab = proxies[proxies["proxy"].notna()]
    g = lab.groupby(["condition", "criterion"])["proxy"].agg(k="sum", n="count")
    full = pd.MultiIndex.from_product(
        [sorted(proxies["condition"].unique()), PROXIED], names=["condition", "criterion"]
    )
    out = g.reindex(full, fill_value=0).reset_index()
    out["k"], out["n"] = out["k"].astype(int), out["n"].astype(int)
    out["score_pct"] = [100.0 * k / n if n else math.nan for k, n in zip(out["k"], out["n"], strict=True)]
    out["source"] = "proxy"
    why = proxies.loc[proxies["proxy"].isna() & (proxies["note"] != ""), "note"].value_counts()
    notes = [
        *proxies.attrs.get("notes", []),
        "Automatic proxies from the episode records, not human labels; definitions:",
        *definition_notes(),
        *(f"No proxy label ({w}): {n} episode-criterion item(s)." for w, n in why.items()),
        *privileged_note(out["condition"].unique()),
    ]
    return _done(out, "proxy_scores", "Automatic proxy scores (%): computed from records, not human labels", notes)


def proxy_agreement(proxies: pd.DataFrame, tally: pd.DataFrame) -> pd.DataFrame:
    """Each proxy against the human majority label on the episodes where both exist: percent
    agreement, Cohen kappa and Gwet AC1; and the proxy error gate against the human error gate."""
    human = episode_labels(tally, "majority")
    rows = []
    for c in [*PROXIED, "error gate"]:
        if c == "error gate":
            h = human[human["criterion"] == "ED"].assign(h=lambda x: x["applicable"].astype(int))
            x = proxies[(proxies["criterion"] == "ED") & proxies["error_gate"].notna()].assign(
                pr=lambda x: x["error_gate"].astype(int)
            )
        else:
            h = human[(human["criterion"] == c) & human["label"].notna()].assign(h=lambda x: x["label"].astype(int))
            x = proxies[(proxies["criterion"] == c) & proxies["proxy"].notna()].assign(
                pr=lambda x: x["proxy"].astype(int)
            )
        both = x[[*EPISODE, "pr"]].merge(h[[*EPISODE, "h"]], on=EPISODE)
        a, b = both["pr"].to_numpy(), both["h"].to_numpy()
        n = len(both)
        rows.append([c, n, 100.0 * (a == b).mean() if n else math.nan, cohen_kappa(a, b), ac1_pair(a, b),
                     100.0 * a.mean() if n else math.nan, 100.0 * b.mean() if n else math.nan])  # fmt: skip
    cols = ["criterion", "episodes", "agree_pct", "cohen_kappa", "ac1", "proxy_pos_pct", "human_pos_pct"]
    notes = [
        "Proxy (automatic) against the human majority label, on episodes that have both; the error gate row compares "
        "the proxy's observable-error gate with the annotators' majority error gate.",
        f"Criteria without a proxy: {', '.join(c for c in L.CRITERIA if c not in PROXIED)}.",
    ]
    return _done(
        pd.DataFrame(rows, columns=cols), "proxy_agreement", "Automatic proxies vs human majority labels", notes
    )
