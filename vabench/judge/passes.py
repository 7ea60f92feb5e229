"""A judge pass over a run folder: every judged episode with a record, ``samples`` times, each
sample written as an annotator of its own (``_annotations/judge-<model>-<k>.jsonl``).

- A model judge (LiteLLM through ``vabench.agents.models``) is asked through the response cache,
  always on (``model.cache=only`` forbids calls): its replies are kept per sample and record under
  ``_judge/cache/``, so a rerun costs nothing. Rate limits and ``model.max_cost_usd`` hold as in a run.
- A reply that is not a usable label is repaired once (the harness's repair prompt); when the
  repair fails too, or the provider cannot answer, the item is left unjudged and counted: never
  guessed, never retried as infrastructure. A spending cap reached leaves the items not yet asked
  unjudged (counted, named); the labels already given are written.
- ``model=proxy``: the rule-based proxies (``vabench.analysis.proxies``) as a judge that costs nothing.
- The judge's usage, one row per item, goes to ``_judge/usage.parquet`` beside the outcomes.

A label equal to the annotator's latest one for that record is not written again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from vabench.agents.chat.model import Model, ModelConfig, ModelError
from vabench.agents.chat.prompts import REPAIR
from vabench.agents.models.cache import CachedModel
from vabench.agents.models.llm import LiteLLMModel
from vabench.analysis import labels as L
from vabench.analysis.load import NoOutcomesError, load_runs, prepare
from vabench.analysis.proxies import PROXIED, read_record, record_proxies
from vabench.core.errors import RunStopped, VabenchError
from vabench.core.vocab import CacheMode
from vabench.results.layout import JUDGE

from .answer import AnswerError, parse
from .evidence import evidence

PROXY = "proxy"  # model=proxy: the rule-based proxies as a judge
USAGE = "usage.parquet"  # <run>/_judge/usage.parquet: one row per judged (or unjudged) item
USAGE_FIELDS = ("model_calls", "provider_attempts", "prompt_tokens", "completion_tokens", "cost_usd", "cache_hits")


class NothingToJudge(VabenchError, ValueError):
    """A run folder without a judged episode that has a record."""


def judged_records(run: Path) -> list[str]:
    """The record paths (relative to ``run``) of its judged episodes whose record file exists."""
    try:
        p, _ = prepare(load_runs(run))
    except NoOutcomesError as e:
        raise NothingToJudge(f"{run}: nothing to judge ({e})") from None
    j = p[(p["state"] == "judged") & p["record"].notna()]
    found = sorted(r for r in set(j["record"]) if (run / r).is_file())
    if not found:
        raise NothingToJudge(f"{run}: no judged episode with a record file: nothing to judge, nothing written")
    return found


@dataclass
class Item:
    record: str
    sample: int
    annotator: str
    label: dict | None = None  # None: unjudged
    repaired: bool = False
    error: str = ""
    usage: dict = field(default_factory=lambda: dict.fromkeys(USAGE_FIELDS, 0))

    def add(self, usage) -> None:
        for f in USAGE_FIELDS:
            now, more = self.usage[f], getattr(usage, f)
            self.usage[f] = None if now is None or more is None else now + more


def _ask(model: Model, run: Path, item: Item, max_frames: int) -> Item:
    ev = evidence(run / item.record, max_frames)
    messages = ev.messages
    for repair in (False, True):
        try:
            reply = model.complete(messages)
        except (ModelError, RunStopped) as e:  # a spending cap stops the item, and the labels so far are kept
            item.error = f"model: {e}" if isinstance(e, ModelError) else f"stopped: {e}"
            if getattr(e, "usage", None) is not None:
                item.add(e.usage)
            return item
        item.add(reply.usage)
        try:
            item.label, item.repaired = parse(reply.text, item.record, item.annotator, ev.last_step, ev.note), repair
            return item
        except AnswerError as e:
            item.error = f"unusable reply: {e}"
            messages = [*messages, {"role": "assistant", "content": reply.text},
                        {"role": "user", "content": REPAIR.format(error=e)}]  # fmt: skip
    return item


def _proxy(run: Path, item: Item) -> Item:
    found = record_proxies(read_record(run / item.record))
    labels = {c: v[0] for c, v in found.items()}
    gate = next((v[1] for c, v in found.items() if c in L.GATED and v[1] is not None), None)
    unproxied = ", ".join(c for c in L.CRITERIA if c not in PROXIED)
    notes = f"rule-based proxies (vabench.analysis.proxies); no proxy for {unproxied}"
    item.label = L.validate(
        {"record": item.record, "annotator": item.annotator, "gates": {"error": gate}, "labels": labels,
         "notes": notes}, now=pd.Timestamp.now(tz="UTC").to_pydatetime())  # fmt: skip
    return item


def cache_folder(run: Path, annotator: str, record: str) -> Path:
    """Where the replies to one sample's requests about one record are kept: samples never share a reply."""
    return run / JUDGE / "cache" / annotator / hashlib.sha256(record.encode()).hexdigest()[:16]


def model_judge(cfg: ModelConfig) -> LiteLLMModel:
    return LiteLLMModel(cfg if cfg.cache != CacheMode.OFF else dataclasses.replace(cfg, cache=CacheMode.ON))


def judge(run: Path, cfg: ModelConfig | None, samples: int = 1, max_frames: int = 12) -> list[Item]:
    """Judge every judged episode of ``run`` (``cfg`` None: the proxies); returns one Item per
    (record, sample), writes the labels that changed and the usage table."""
    run = Path(run)
    records = judged_records(run)
    name = PROXY if cfg is None else cfg.name or cfg.id
    samples = 1 if cfg is None else samples
    items = [Item(r, k, L.judge_annotator(name, k)) for k in range(1, samples + 1) for r in records]
    if cfg is None:
        done = [_proxy(run, i) for i in items]
    else:
        inner = model_judge(cfg)

        def one(item: Item) -> Item:
            cached = CachedModel(inner, dataclasses.replace(inner.cfg))
            cached.bind(cache_folder(run, item.annotator, item.record))
            return _ask(cached, run, item, max_frames)

        with ThreadPoolExecutor(max_workers=max(1, cfg.max_concurrency)) as pool:
            done = list(pool.map(one, items))
    _write_labels(run, done)
    _write_usage(run, done)
    return done


def _same(a: dict, b: pd.Series) -> bool:
    return (
        all(a["gates"][g] == (None if pd.isna(b[f"gate_{g}"]) else bool(b[f"gate_{g}"])) for g in L.GATES)
        and all(a["labels"][c] == (None if pd.isna(b[c]) else int(b[c])) for c in L.CRITERIA)
        and a["notes"] == b["notes"]
    )


def _write_labels(run: Path, items: list[Item]) -> None:
    have = L.latest(run) if (run / L.ANNOTATIONS).is_dir() else pd.DataFrame(columns=L.COLUMNS)
    have = have.set_index(["annotator", "record"]) if len(have) else None
    for item in items:
        if item.label is None:
            continue
        key = (item.annotator, item.record)
        if have is not None and key in have.index and _same(item.label, have.loc[key]):
            continue  # a rerun: the same judgment is already the latest
        L.append(run, {k: v for k, v in item.label.items() if k != "time"})


def _write_usage(run: Path, items: list[Item]) -> None:
    rows = pd.DataFrame(
        [{"judge": L.judge_of(i.annotator), "annotator": i.annotator, "record": i.record, "sample": i.sample,
          "judged": i.label is not None, "repaired": i.repaired, "error": i.error, **i.usage} for i in items]
    )  # fmt: skip
    path = run / JUDGE / USAGE
    path.parent.mkdir(exist_ok=True)
    if path.is_file():
        old = pd.read_parquet(path)
        rows = pd.concat([old[old["judge"] != rows["judge"].iloc[0]], rows], ignore_index=True)
    tmp = path.with_suffix(".tmp")
    rows.to_parquet(tmp, index=False)
    os.replace(tmp, path)
