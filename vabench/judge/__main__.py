"""``python -m vabench.judge RUN_FOLDER model=NAME [model.KEY=VALUE ...] [judge.samples=1] [judge.max_frames=12]
[judge.plan=true]``
labels every judged episode of a run folder with a model judge (the launcher's model words: a file
of conf/model, ``model.id=<provider>/<name>``, ...) or ``model=proxy`` (the rule-based proxies, free);
``judge.plan=true`` prices the pass and sends nothing.
``python -m vabench.judge calibrate RUN_FOLDER [--n 40]`` picks the episodes people should annotate
to measure the judge. Exit 0: every item judged; 1: some left unjudged (counted); 2: bad input."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vabench.agents.models.kinds import is_offline
from vabench.core.errors import ConfigError, command
from vabench.results.layout import ANNOTATIONS, CALIBRATION, JUDGE

from .calibrate import subset
from .passes import PROXY, USAGE, judge

PROG = "python -m vabench.judge"
OPTIONS = {"judge.samples": 1, "judge.max_frames": 12, "judge.plan": False}  # the judge's own words, defaults


def _words(words: list[str]) -> tuple[list[str], dict]:
    """The model words (for the launcher's config) and the judge's own options."""
    model, options = [], dict(OPTIONS)
    for w in words:
        key, eq, value = w.partition("=")
        if not eq:
            raise ConfigError(f"'{w}' is not KEY=VALUE: give model=NAME, model.KEY=VALUE or judge.samples=N")
        if key == "judge.plan":
            if value not in ("true", "false"):
                raise ConfigError(f"judge.plan must be true or false, got {value!r}")
            options[key] = value == "true"
        elif key in options:
            if not value.isdigit() or int(value) < 1:
                raise ConfigError(f"{key} must be a whole number >= 1, got {value!r}")
            options[key] = int(value)
        elif key == "model" or key.startswith("model."):
            model.append(w)
        else:
            raise ConfigError(f"unknown word '{key}': give model=NAME, model.KEY=VALUE, {', '.join(OPTIONS)}")
    if not model:
        raise ConfigError(
            f"name the judge: model=NAME (a file of conf/model, or {PROXY}) or model.id=<provider>/<name>"
        )
    return model, options


def _model(words: list[str]):
    """None for model=proxy, else the validated ModelConfig the words compose (as the launcher does)."""
    if words == [f"model={PROXY}"]:
        return None
    from vabench.launch.words import composed, misspelt, wrong_word
    from vabench.run.config.run import model_config

    why = wrong_word(words) or misspelt(words)
    if why:
        raise ConfigError(why)
    cfg, _ = model_config(composed(words)["model"])
    if is_offline(cfg.id):
        raise ConfigError(f"model.id={cfg.id} is an agent, not a judge: model={PROXY} or a LiteLLM model")
    return cfg


def _calibrate(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog=f"{PROG} calibrate", description="a stratified calibration subset")
    ap.add_argument("run", type=Path, metavar="RUN_FOLDER")
    ap.add_argument("--n", type=int, default=40, help="episodes in the subset (default 40)")
    args = ap.parse_args(argv)
    picked = subset(args.run, args.n)
    print(picked.to_string(index=False))
    print(f"{len(picked)} episode(s), least certain first: {args.run / JUDGE / CALIBRATION}")
    return 0


def _plan(run: Path, cfg, samples: int, frames: int) -> int:
    from .price import plan

    if cfg is None:
        print(f"plan: model={PROXY} costs nothing (no model is asked)")
        return 0
    p = plan(run, cfg, samples, frames)
    dollars = "unpriced (LiteLLM's map does not know the model)" if p["cost_usd"] is None else (
        f"about ${p['cost_usd']:.4f}, at most ${p['bound_usd']:.4f} if every item needs its repair")  # fmt: skip
    print(f"plan: {p['items']} item(s), {p['cached']} already in the cache; about {p['prompt_tokens']} prompt and "
          f"{p['completion_tokens']} completion tokens; {dollars}. Nothing sent, nothing written.")  # fmt: skip
    return 0


@command(PROG)
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["calibrate"]:
        return _calibrate(argv[1:])
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    run, (words, options) = Path(argv[0]), _words(argv[1:])
    if not run.is_dir():
        raise ConfigError(f"{run} is not a folder: give a run folder")
    cfg, samples, frames = _model(words), options["judge.samples"], options["judge.max_frames"]
    if options["judge.plan"]:
        return _plan(run, cfg, samples, frames)
    items = judge(run, cfg, samples, frames)
    unjudged = [i for i in items if i.label is None]
    cost = [i.usage["cost_usd"] for i in items]
    known = sum(c for c in cost if c is not None)
    hits = sum(i.usage["cache_hits"] for i in items)
    print(f"judged {len(items) - len(unjudged)} of {len(items)} item(s) "
          f"({sum(i.repaired for i in items)} after a repair, {len(unjudged)} unjudged); "
          f"cost ${known:.4f}{' (some unpriced)' if None in cost else ''}, {hits} cache hit(s)")  # fmt: skip
    for i in unjudged:
        print(f"unjudged {i.annotator} {i.record}: {i.error}")
    print(f"labels: {run / ANNOTATIONS}/{items[0].annotator.rsplit('-', 1)[0]}-<k>.jsonl; usage: {run / JUDGE / USAGE}")
    return 1 if unjudged else 0


if __name__ == "__main__":
    sys.exit(main())
