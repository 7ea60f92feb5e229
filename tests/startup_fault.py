"""The launcher as a user runs it, but with env workers whose first starts fail, as on a busy node
(tests/test_ray_startup.py): ``python -m tests.startup_fault <launcher overrides>``. The first
``$VABENCH_TEST_FAILS_N`` worker starts of the run (counted by folders made in
``$VABENCH_TEST_FAILS``, which every Ray worker process sees) raise in the constructor."""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

from vabench.run.actors import worker


class FailsFirst(worker.EpisodeWorker):
    def __init__(self, config):
        folder, n = Path(os.environ["VABENCH_TEST_FAILS"]), int(os.environ["VABENCH_TEST_FAILS_N"])
        for k in range(n):
            try:
                (folder / str(k)).mkdir()  # atomic: each failing start is one process's
            except FileExistsError:
                continue
            raise RuntimeError(f"injected: start {k + 1} of this run's workers fails")
        super().__init__(config)


if __name__ == "__main__":
    worker.EpisodeWorker = FailsFirst  # what the backend starts; Ray's workers import it from this module
    sys.argv = ["vabench.launch", *sys.argv[1:]]
    runpy.run_module("vabench.launch", run_name="__main__")
