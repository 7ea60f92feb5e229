"""``python -m vabench.site RUN [RUN ...] --out DIR [--media link|copy|none] [--no-check]
[--page-size N] [--paired A B] [--no-figures]``: the static results site of the run folders."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vabench.core.errors import command

from .build import Options, build
from .episodes import MEDIA


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m vabench.site", description=__doc__.split(":", 1)[1].strip())
    p.add_argument("folders", nargs="+", type=Path, metavar="RUN", help="run folder(s), or folders of runs")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="the site folder (new, or a site to rebuild)")
    p.add_argument("--media", choices=MEDIA, default="link",
                   help="episode frames and videos: link into the run folders (default), copy beside the pages, "
                   "or leave out")  # fmt: skip
    p.add_argument("--no-check", action="store_true", help="skip the row-against-record check (runs say: not checked)")
    p.add_argument("--page-size", type=int, default=200, help="episodes per list page (default 200)")
    p.add_argument("--paired", nargs=2, action="append", default=[], metavar=("A", "B"),
                   help="also B against A on shared seeds (labels or short words, as the analysis CLI)")  # fmt: skip
    p.add_argument("--no-figures", action="store_true", help="leave the analysis figures out")
    return p


@command("vabench.site")
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.page_size < 1:
        parser().error("--page-size must be at least 1")
    opts = Options(args.media, not args.no_check, args.page_size, [tuple(x) for x in args.paired], not args.no_figures)
    built = build(args.folders, args.out, opts)
    name, size = built.largest
    print(f"vabench.site: {built.pages} pages ({built.episodes} episodes) in {built.out} in {built.seconds:.1f} s; "
          f"largest page {name} ({size / 1024:.0f} KiB); open {built.out / 'index.html'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
