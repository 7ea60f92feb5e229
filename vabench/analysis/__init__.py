"""pandas over the Parquet outcome tables: the paper's tables, statistics and figures.

Reads outcome rows only (``vabench.results.outcomes``): no simulator, Ray, agent or actor imports.

    from vabench.analysis import load_runs, success_matrix, macro_averages, to_markdown
    df = load_runs("runs/main")
    print(to_markdown(macro_averages(df)))

Every table function returns a tidy DataFrame (rates in %, ``*_pct``; differences in pp,
``delta_pp``) with ``attrs['title']`` and ``attrs['notes']`` (family coverage against the paper's
11 / 3 / 14, excluded infra_error rows, matched runs, privileged rows, episodes run without the
summary their condition names). The CLI is ``python -m vabench.analysis RUN_FOLDER ... [--out DIR]
[--format md|csv|both] [--figures] [--annotations PATH ...] [--tallies CSV ...] [--proxies]
[--paired A B] [--seed-yield]``.

Trajectory diagnostics (paper C.9): ``tally`` (label input), ``diagnostics`` (gates, votes, Tables
11-14, 16, Figure 2c), ``agreement`` (Table 28, vote-rule sensitivity), ``proxies`` (automatic
labels from episode records, never mixed with human ones). Beyond the paper: ``paired`` (McNemar
and seed-cluster bootstrap on shared seeds), ``power`` (``python -m vabench.analysis.power``).
Table 21: ``seedyield``. What a study cost, per model and condition: ``costs``.
"""

from vabench.core.paper import PAPER_DUAL_ARM, PAPER_FAMILIES, PAPER_SINGLE_ARM

from .agreement import (
    ac1_pair,
    agreement_table,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    vote_rule_orderings,
    vote_rule_sensitivity,
)
from .attribution import attribution, recovers_most
from .costs import cost_table
from .diagnostic_plots import diagnostic_profile_radar, save_diagnostic_figures, subtask_progress_bars
from .diagnostics import (
    criterion_scores,
    diagnostic_components,
    diagnostic_profile,
    diagnostic_scores,
    episode_labels,
    label_concordance,
    module_overview,
)
from .load import NoOutcomesError, load_runs, prepare
from .paired import paired_comparison, paired_outcomes
from .plots import active_passive_bars, attribution_bars, save_figures, success_bars, success_heatmap
from .proxies import proxy_agreement, proxy_labels, proxy_scores
from .report import (
    available_diagnostics,
    available_tables,
    display,
    markdown_table,
    to_csv,
    to_markdown,
    write_table,
    write_tables,
)
from .seedyield import seed_yield
from .stats import mcnemar_exact, mean_sd, sign_test, wilson_interval
from .tables import (
    active_passive,
    checkpoint_progress,
    embodiments,
    feedback_ablation,
    heldout_vs_base,
    infra_summary,
    local_models,
    long_horizon,
    macro_averages,
    robustness,
    success_matrix,
    summary_source_macro,
    summary_sources,
)
from .tally import TallyError, annotation_tallies, attach_success, combine_tallies, read_tallies, tallies_from_labels

__all__ = [
    "NoOutcomesError",
    "PAPER_DUAL_ARM",
    "PAPER_FAMILIES",
    "PAPER_SINGLE_ARM",
    "TallyError",
    "ac1_pair",
    "active_passive",
    "active_passive_bars",
    "agreement_table",
    "annotation_tallies",
    "attach_success",
    "available_diagnostics",
    "available_tables",
    "checkpoint_progress",
    "cohen_kappa",
    "combine_tallies",
    "cost_table",
    "criterion_scores",
    "diagnostic_components",
    "diagnostic_profile",
    "diagnostic_profile_radar",
    "diagnostic_scores",
    "display",
    "embodiments",
    "episode_labels",
    "episodes_needed",
    "excess_sd",
    "feedback_ablation",
    "fleiss_kappa",
    "gwet_ac1",
    "heldout_vs_base",
    "infra_summary",
    "label_concordance",
    "load_runs",
    "local_models",
    "long_horizon",
    "macro_averages",
    "robustness",
    "markdown_table",
    "mcnemar_exact",
    "mean_sd",
    "module_overview",
    "attribution",
    "attribution_bars",
    "paired_comparison",
    "recovers_most",
    "paired_outcomes",
    "power_of",
    "prepare",
    "proxy_agreement",
    "proxy_labels",
    "proxy_scores",
    "read_tallies",
    "runs_needed",
    "sample_size_table",
    "save_diagnostic_figures",
    "save_figures",
    "seed_yield",
    "sign_test",
    "simulate_power",
    "subtask_progress_bars",
    "success_bars",
    "success_heatmap",
    "success_matrix",
    "summary_source_macro",
    "summary_sources",
    "tallies_from_labels",
    "to_csv",
    "to_markdown",
    "vote_rule_orderings",
    "vote_rule_sensitivity",
    "wilson_interval",
    "write_table",
    "write_tables",
]

_POWER = ("episodes_needed", "excess_sd", "power_of", "runs_needed", "sample_size_table", "simulate_power")


def __getattr__(name: str):
    """The power calculator's functions, imported on first use: ``python -m vabench.analysis.power``
    imports this package first, and an eager import here would make runpy warn."""
    if name in _POWER:
        from . import power

        return getattr(power, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
