"""Record the RGB-only expert demonstrations into the cache.

What is recorded and stored, and where: :mod:`vabench.envs.demo_recorder`.

    python -m vabench.envs.cli.demos                          # every task at the paper preset, into the cache
    python -m vabench.envs.cli.demos --task place_cube_in_bowl --render fast --force
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vabench.core.errors import command
from vabench.core.vocab import Render
from vabench.envs.demo_recorder import demo_tasks, record

from ..render import RENDER_PRESETS


@command("python -m vabench.envs.cli.demos")
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Record the RGB-only expert demonstrations into the cache.")
    ap.add_argument("--task", action="append", choices=demo_tasks(), help="default: every base task")
    ap.add_argument("--out", type=Path, default=None, help="root directory (default: $VABENCH_CACHE/demos)")
    ap.add_argument("--render", choices=list(RENDER_PRESETS), default=Render.PAPER, help="the run's render preset")
    ap.add_argument("--force", action="store_true", help="re-record even if a demo exists")
    args = ap.parse_args(argv)
    for task in args.task or demo_tasks():
        path = record(task, args.out, args.render, force=args.force)
        n = len(json.loads((path / "demo.json").read_text())["frames"])
        print(f"{task}: {n} frames in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
