"""pandas over the Parquet outcome tables: the paper's tables, statistics and figures.

Reads outcome rows only (``vabench.outcomes``): no simulator, Ray, agent or actor imports.

    from vabench.analysis import load_runs, success_matrix, macro_averages, to_markdown
    df = load_runs("runs/main")
    print(to_markdown(macro_averages(df)))

Every table function returns a tidy DataFrame (rates in %, ``*_pct``; differences in pp,
``delta_pp``) with ``attrs['title']`` and ``attrs['notes']`` (family coverage against the paper's
11 / 3 / 14, excluded infra_error rows, matched runs, privileged rows, episodes run without the
summary their condition names). The CLI is ``python -m vabench.analysis RUN_FOLDER ... [--out DIR]
[--format md|csv|both] [--figures]``.
"""

from vabench.paper import PAPER_DUAL_ARM, PAPER_FAMILIES, PAPER_SINGLE_ARM

from .load import NoOutcomesError, load_runs, prepare
from .plots import active_passive_bars, save_figures, success_bars, success_heatmap
from .report import available_tables, display, markdown_table, to_csv, to_markdown, write_table, write_tables
from .stats import mean_sd, sign_test, wilson_interval
from .tables import (
    active_passive,
    checkpoint_progress,
    feedback_ablation,
    heldout_vs_base,
    infra_summary,
    local_models,
    long_horizon,
    macro_averages,
    success_matrix,
    summary_source_macro,
    summary_sources,
)

__all__ = [
    "PAPER_DUAL_ARM",
    "PAPER_FAMILIES",
    "PAPER_SINGLE_ARM",
    "NoOutcomesError",
    "active_passive",
    "feedback_ablation",
    "active_passive_bars",
    "available_tables",
    "checkpoint_progress",
    "display",
    "heldout_vs_base",
    "infra_summary",
    "load_runs",
    "local_models",
    "long_horizon",
    "macro_averages",
    "markdown_table",
    "mean_sd",
    "prepare",
    "save_figures",
    "sign_test",
    "success_bars",
    "success_heatmap",
    "success_matrix",
    "summary_source_macro",
    "summary_sources",
    "to_csv",
    "to_markdown",
    "wilson_interval",
    "write_table",
    "write_tables",
]
