"""The paper's tables as tidy pandas DataFrames, computed from outcome rows only, one module per
table family:

- ``success``: the per-task matrix (Tables 7-9), macro-averages (Table 3, eq. 3), subtask progress (eq. 12);
- ``protocols``: active vs passive camera protocol (Tables 4, 10);
- ``feedback``: the observation-profile ablation, paper vs explained (laid out like Table 4);
- ``transfer``: held-out vs base (Tables 5, 15) and the long-horizon track (Table 5 "Long");
- ``sources``: demonstration-summary sources (Tables 6, 17, 18);
- ``local``: local models (Tables 19, 20);
- ``looks``: visual robustness (per perturbation, paired with none) and embodiments (per robot vs the Panda);
- ``infra``: the rows excluded from every rate.

``common`` holds the shared helpers and the rules every table follows (judged episodes only,
equal family weight in macro-averages, like-with-like comparisons). ``report`` renders the tables
as Markdown and CSV.
"""

from .common import NAN, SUBSET_NAMES, SUBSETS
from .feedback import feedback_ablation
from .infra import infra_summary
from .local import local_models
from .looks import embodiments, robustness
from .protocols import active_passive
from .sources import summary_source_macro, summary_sources
from .success import checkpoint_progress, macro_averages, success_matrix
from .transfer import heldout_vs_base, long_horizon

__all__ = [
    "NAN",
    "SUBSETS",
    "SUBSET_NAMES",
    "active_passive",
    "checkpoint_progress",
    "embodiments",
    "feedback_ablation",
    "heldout_vs_base",
    "infra_summary",
    "local_models",
    "long_horizon",
    "macro_averages",
    "robustness",
    "success_matrix",
    "summary_source_macro",
    "summary_sources",
]
