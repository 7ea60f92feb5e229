"""The judge (beyond the paper): the nine trajectory criteria labelled by a model, or by the
rule-based proxies, and calibrated against people (docs/judge.md).

- :mod:`.evidence`: what the judge is shown of one episode (its record alone) and the rubric,
  composed from ``vabench.analysis.labels``;
- :mod:`.answer`: the reply, untrusted, checked into a label;
- :mod:`.passes`: a pass over a run folder, each sample an annotator ``judge-<model>-<k>``;
- :mod:`.price`: what a pass will cost before it runs (``judge.plan=true``);
- :mod:`.calibrate`: the stratified subset people annotate to measure the judge.

It reads run folders and calls models: a command layer above ``launch``, whose model words it takes.
The agreement of judges with people is an analysis table (``vabench.analysis.judging``).
"""

from .calibrate import subset
from .passes import NothingToJudge, judge

__all__ = ["NothingToJudge", "judge", "subset"]
