"""``python -m vabench.analysis RUN_FOLDER [RUN_FOLDER ...] [--out DIR] [--format md|csv|both] [--figures]``

Prints the tables the rows support as Markdown on stdout; with ``--out`` also writes each table
(``.md`` with notes and/or ``.csv`` with the tidy numbers) and, with ``--figures``, PNG figures.
"""

from __future__ import annotations

import argparse
import sys

from .load import NoOutcomesError, load_runs
from .report import available_tables, to_markdown, write_tables


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m vabench.analysis",
        description="VA-Bench paper tables from the Parquet outcome rows of one or more run folders.",
    )
    p.add_argument("folders", nargs="+", metavar="RUN_FOLDER", help="run folder(s); read recursively")
    p.add_argument("--out", metavar="DIR", help="write the tables (and figures) into DIR")
    p.add_argument("--format", choices=("md", "csv", "both"), default="both", help="file format(s) under --out")
    p.add_argument("--figures", action="store_true", help="also write PNG figures under --out")
    p.add_argument("--experiment", action="append", metavar="NAME", help="only rows of this experiment (repeatable)")
    p.add_argument(
        "--local-models", nargs="+", metavar="MODEL", help="also print Tables 19/20 for these (locally served) models"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.figures and not args.out:
        parser().error("--figures needs --out DIR")
    try:
        df = load_runs(*args.folders)
    except NoOutcomesError as e:
        print(f"vabench.analysis: {e}", file=sys.stderr)
        return 2
    if args.experiment:
        df = df[df["experiment"].isin(args.experiment)]
        if df.empty:
            print(f"vabench.analysis: no rows of experiment(s) {', '.join(args.experiment)}", file=sys.stderr)
            return 2
    tables = available_tables(df, args.local_models)
    print("\n".join(to_markdown(frame) for frame in tables.values()))
    if args.out:
        written = write_tables(tables, args.out, args.format)
        if args.figures:
            from .plots import save_figures

            written += save_figures(df, args.out)
        print(f"vabench.analysis: wrote {len(written)} file(s) to {args.out}", file=sys.stderr)
    return 0
