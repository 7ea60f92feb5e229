"""``python -m vabench.launch +experiment=NAME [key=value ...]`` (Hydra): the one way to run episodes.

One Hydra job is one run folder (``results_dir/run_id``); ``-m`` sweeps give one sub-folder per
job. The parts: :mod:`.words` (the words users type, ``--help``, misspelt keys and values, each
refused in one line before Hydra), :mod:`.folders` (the run folder: checked for writing before
Hydra makes it, and removed when the launch is refused), :mod:`.job` (one Hydra job: validate,
probe, plan or run, print the table), :mod:`.sweep` (a sweep folder's files and its jobs' exit
statuses), :mod:`.cli` (the entry point and its exit status, :class:`~.exits.Exit`).
"""

from vabench.launch.exits import Exit

__all__ = ["Exit"]
