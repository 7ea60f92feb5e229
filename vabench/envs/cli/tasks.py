"""``python -m vabench.tasks [--robot NAME] [--track NAME]``: every registered task with its track,
arms, step budget and the robot's verified seeds (from the committed seed manifests), the names
``tasks=[...]`` takes; a task the robot cannot do says why (its manifest's ``declared``)."""

from __future__ import annotations

import argparse

from vabench.core.condition import default
from vabench.core.errors import command
from vabench.core.vocab import Track, arms_label
from vabench.envs.seeds import load_manifest
from vabench.envs.sim.embodiments import EMBODIMENTS
from vabench.envs.tasks import task_class, tasks_of_track


def _seeds(name: str, robot: str) -> str:
    """The robot's verified seeds of ``name``, or why it has none."""
    try:
        manifest = load_manifest(name, robot)
    except FileNotFoundError:
        return "none: not screened for this robot"
    seeds = [int(s) for s in manifest["accepted"]]
    if not seeds:
        return f"none: {manifest.get('declared') or 'declared'}"
    span = seeds == list(range(seeds[0], seeds[-1] + 1))
    return f"{len(seeds)}: " + (f"{seeds[0]}..{seeds[-1]}" if span else ",".join(map(str, seeds)))


def rows(track: str | None = None, robot: str = default("robot")) -> list[tuple[str, str, str, int, str]]:
    """(task, track, arms, budget, verified seeds) per task, by track then name."""
    out = []
    for t in [track] if track else list(Track):
        for name in tasks_of_track(t):
            cls = task_class(name)
            arms = f"{arms_label(cls.arms)} ({', '.join(cls.arms)})"
            out.append((name, str(t), arms, int(cls.budget), _seeds(name, robot)))
    return out


@command("python -m vabench.tasks")
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vabench.tasks", description=__doc__.split("\n\n")[0])
    p.add_argument("--track", choices=list(Track), help="only this track")
    p.add_argument("--robot", choices=list(EMBODIMENTS), default=default("robot"), help="whose seeds (default panda)")
    args = p.parse_args(argv)
    table = [("task", "track", "arms", "budget", f"verified seeds ({args.robot})"), *rows(args.track, args.robot)]
    widths = [max(len(str(r[i])) for r in table) for i in range(len(table[0]))]
    for r in table:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()[:200])
    print(f"\nuse: python -m vabench.launch robot={args.robot} tasks=[NAME,...] seeds=N|[SEED,...] (track=NAME)")
    return 0
