"""``python -m vabench.verify RUN|BUNDLE [--workers N] [--rescore OUT]``: exit 0 when every row
matches its record and every judged episode is reproduced, 1 on any difference, 2 when RUN|BUNDLE
is neither a run folder nor a bundle (a zip or tar of one, however repacked)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vabench.core.errors import command
from vabench.results.layout import OUTCOMES

from . import rescore, unpacked, verify
from .check import bundle_differences, outcome_rows


@command("python -m vabench.verify")
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vabench.verify", description=__doc__)
    ap.add_argument("run", type=Path, help="a run folder, or a bundle (python -m vabench.bundle)")
    ap.add_argument("--workers", type=int, default=1, help="processes re-simulating at once (default 1)")
    ap.add_argument("--rescore", type=Path, metavar="OUT", help="write the re-simulations as a new run folder OUT")
    args = ap.parse_args(argv)
    if not args.run.exists():
        ap.error(f"{args.run} does not exist: give a run folder or a bundle")
    run_dir, tmp = unpacked(args.run)  # NotABundle: one line, exit status 2
    try:
        if args.rescore is not None:
            return _rescore(run_dir, args.rescore, args.workers)
        report = verify(run_dir, args.workers)
    finally:
        if tmp is not None:
            tmp.cleanup()
    for line in report.provenance:
        print(f"provenance differs: {line}")
    for line in report.lines:
        print(line)
    print(report.summary())
    return 0 if report.ok else 1


def _rescore(run_dir: Path, out: Path, workers: int) -> int:
    from vabench.analysis.flips import flips
    from vabench.results.outcomes import read_rows

    tampered = bundle_differences(run_dir, outcome_rows(run_dir, write=False)[0])
    for key, reason in tampered:
        print(f"DIFF {key}: {reason}")
    if tampered:
        print(f"not rescored: the bundle is not as packed ({len(tampered)} files differ)")
        return 1
    new = rescore(run_dir, out, workers)
    print(flips(read_rows(run_dir / OUTCOMES), new).to_string())
    print(f"rescored {len(new)} episodes into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
