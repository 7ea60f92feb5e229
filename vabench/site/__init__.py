"""A static results site of run folders: ``python -m vabench.site RUN [RUN ...] --out DIR``.

Plain files (HTML, one stylesheet, PNG figures, CSV tables; no script, no server): the site opens
from disk through file:// and from any static host. HELM-style pages: a leaderboard per condition
(macro-averages, judged episodes with 95% Wilson intervals, the paired difference from the next
condition up on shared seeds, dollars per episode), per-task tables, every table and figure of
``vabench.analysis``, the cost table, and a page per episode with what the model saw and decided,
what the executor did and the checker's verdict. Each run says what the row-against-record check
(:func:`vabench.verify.compare.check_record`) found when the site was built.

Reads outcome rows and episode records only: no simulator, Ray, agent or actor imports.
"""

from .build import Built, Options, build

__all__ = ["Built", "Options", "build"]
