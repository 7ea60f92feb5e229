"""``python -m vabench.tasks [--track NAME]``: every registered task with its track, arms, step
budget and verified seeds (from the committed seed manifests), the names ``tasks=[...]`` takes."""

from __future__ import annotations

import argparse

from vabench.envs.seeds import eval_seeds
from vabench.envs.tasks import task_class, tasks_of_track
from vabench.vocab import Track, arms_label


def rows(track: str | None = None) -> list[tuple[str, str, str, int, str]]:
    """(task, track, arms, budget, verified seeds) per task, by track then name."""
    out = []
    for t in [track] if track else list(Track):
        for name in tasks_of_track(t):
            cls, seeds = task_class(name), eval_seeds(name)
            shown = f"{len(seeds)}: {_seeds_text(seeds)}" if seeds else "0"
            out.append((name, str(t), f"{arms_label(cls.arms)} ({', '.join(cls.arms)})", int(cls.budget), shown))
    return out


def _seeds_text(seeds: list[int]) -> str:
    """``1000..1019`` when contiguous, else every seed."""
    return f"{seeds[0]}..{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else ",".join(map(str, seeds))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m vabench.tasks", description=__doc__.split("\n\n")[0])
    p.add_argument("--track", choices=list(Track), help="only this track")
    args = p.parse_args(argv)
    table = [("task", "track", "arms", "budget", "verified seeds"), *rows(args.track)]
    widths = [max(len(str(r[i])) for r in table) for i in range(len(table[0]))]
    for r in table:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    print("\nuse: python -m vabench.launch tasks=[NAME,...] seeds=N|[SEED,...] (track=NAME for other tracks)")


if __name__ == "__main__":
    main()
