"""``python -m vabench.analysis RUN_FOLDER ... [--annotations PATH ...] [--tallies CSV ...] [--proxies]
[--labels both|human|judge] [--paired A B] [--seed-yield] [--out DIR] [--format md|csv|both] [--figures]``

Prints the tables the inputs support as Markdown on stdout; with ``--out`` also writes each table
(``.md`` with notes and/or ``.csv`` with the tidy numbers) and, with ``--figures``, PNG figures.
Labels (paper C.9) come from ``--annotations`` (label files or folders) and from the
``_annotations/`` folder of every run folder given, and/or from tally CSVs; ``--proxies`` adds the
automatic proxy labels computed from the episode records; ``--labels`` keeps people's labels, a
judge's (``python -m vabench.judge``) or both, and where a run holds both the judge-vs-people table
is printed; ``--paired A B`` compares two conditions
on their shared seeds; ``--seed-yield`` prints Table 21 from the committed seed manifests.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vabench.core.errors import command

from . import labels as L
from .load import NoOutcomesError, load_runs
from .report import available_diagnostics, available_tables, to_markdown, write_tables
from .tally import LABELLERS


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m vabench.analysis",
        description="VA-Bench paper tables from the Parquet outcome rows of one or more run folders.",
    )
    p.add_argument("folders", nargs="*", metavar="RUN_FOLDER", help="run folder(s); read recursively")
    p.add_argument("--out", metavar="DIR", help="write the tables (and figures) into DIR")
    p.add_argument("--format", choices=("md", "csv", "both"), default="both", help="file format(s) under --out")
    p.add_argument("--figures", action="store_true", help="also write PNG figures under --out")
    p.add_argument("--experiment", action="append", metavar="NAME", help="only rows of this experiment (repeatable)")
    p.add_argument(
        "--local-models", nargs="+", metavar="MODEL", help="also print Tables 19/20 for these (locally served) models"
    )
    p.add_argument("--annotations", nargs="+", action="extend", default=[], metavar="PATH",
                   help="label files or folders (run folders' _annotations/ are read anyway)")  # fmt: skip
    p.add_argument("--tallies", nargs="+", action="extend", default=[], metavar="CSV", help="tally CSV(s) of labels")
    p.add_argument("--rule", choices=("majority", "strict", "permissive"), default="majority",
                   help="vote rule of the diagnostic scores (default majority, as the paper)")  # fmt: skip
    p.add_argument("--proxies", action="store_true", help="automatic proxy labels from the episode records")
    p.add_argument("--labels", choices=LABELLERS, default="both",
                   help="whose labels count: people's, judges' (annotators judge-*) or both")  # fmt: skip
    p.add_argument(
        "--paired",
        nargs=2,
        action="append",
        metavar=("A", "B"),
        help="B vs A on shared seeds; full condition labels or short words, e.g. 'servo active' 'servo passive'",
    )
    p.add_argument("--seed-yield", action="store_true", help="Table 21 from the committed seed manifests")
    return p


@command("vabench.analysis")
def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.figures and not args.out:
        ap.error("--figures needs --out DIR")
    if not (args.folders or args.tallies or args.seed_yield):
        ap.error("give RUN_FOLDER(s), --tallies CSV or --seed-yield")
    if (args.annotations or args.proxies or args.paired) and not args.folders:
        ap.error("--annotations, --proxies and --paired need RUN_FOLDER(s)")
    df, tables = None, {}
    if args.folders:
        df = load_runs(*args.folders)
        if args.experiment:
            df = df[df["experiment"].isin(args.experiment)]
            if df.empty:
                raise NoOutcomesError(f"no rows of experiment(s) {', '.join(args.experiment)}")
        tables = available_tables(df, args.local_models)
    tables.update(_paired(df, args.paired or []))
    tally = _tally(df, args)
    proxies = _proxies(args.folders) if args.proxies else None
    if proxies is not None and proxies.empty:
        why = " ".join(proxies.attrs.get("notes", [])) or "no judged row with an episode record"
        print(f"vabench.analysis: no proxy labels ({why})", file=sys.stderr)
    tables.update(available_diagnostics(tally, df, proxies, args.rule))
    tables.update(_judged(df, args))
    if args.seed_yield:
        from .seedyield import seed_yield

        tables["seed_yield"] = seed_yield()
    said: set[str] = set()  # a note common to several tables is printed once, under the first
    print("\n".join(to_markdown(frame, said) for frame in tables.values()))
    if args.out:
        written = write_tables(tables, args.out, args.format)
        if args.figures:
            from .diagnostic_plots import save_diagnostic_figures
            from .plots import save_figures

            written += save_figures(df, args.out) if df is not None else []
            written += save_diagnostic_figures(args.out, df, tables.get("diagnostic_profile"))
        print(f"vabench.analysis: wrote {len(written)} file(s) to {args.out}", file=sys.stderr)
    return 0


def _paired(df, pairs) -> dict:
    from .paired import paired_comparison

    return {f"paired_{i + 1}": paired_comparison(df, a, b) for i, (a, b) in enumerate(pairs)}


def _tally(df, args):
    from .tally import annotation_tallies, attach_success, combine_tallies, read_tallies

    sources = list(args.annotations) + [f for f in args.folders if (Path(f) / L.ANNOTATIONS).is_dir()]
    parts = [annotation_tallies(df, *sources, who=args.labels)] if sources else []
    if args.tallies:
        t = read_tallies(*args.tallies)
        parts.append(attach_success(t, df) if df is not None else t)
    return combine_tallies(*parts) if parts else None


def _judged(df, args) -> dict:
    """The judge-vs-people table where the label files hold both (vabench.analysis.judging)."""
    from .judging import judge_agreement

    sources = list(args.annotations) + [f for f in args.folders if (Path(f) / L.ANNOTATIONS).is_dir()]
    table = judge_agreement(df, *sources) if sources else None
    return {"judge_agreement": table} if table is not None and len(table) else {}


def _proxies(folders):
    from .proxies import proxy_labels

    return proxy_labels(*folders)
