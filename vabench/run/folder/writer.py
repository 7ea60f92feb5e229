"""What a driver writes into its run folder, and the one rule for every write: never into a
folder another driver has taken over (:mod:`vabench.run.folder.lock`).

Rows and records reach the run folder through the driver from any node (a worker that cannot see
the folder sends its record back with its row), so a cluster needs no shared filesystem.
"""

from __future__ import annotations

from pathlib import Path

from vabench.results.episodes import EpisodeSpec
from vabench.results.outcomes import OutcomeRow, write_row
from vabench.results.outcometable import landed
from vabench.run.folder.lock import RunLock, RunLocked
from vabench.run.folder.scratch import land


class RunWriter:
    def __init__(self, run_dir: Path, lock: RunLock, log=print):
        self.run_dir, self.lock, self.log = run_dir, lock, log

    def hold(self) -> None:
        """Raise :class:`RunLocked` if another driver took this run folder over."""
        if not self.lock.held():
            raise RunLocked(f"{self.lock.path}: another driver took this run folder over; stopping")

    def row(self, spec: EpisodeSpec, row: OutcomeRow | dict) -> None:
        """An episode's outcome file; the run's outcome table (:mod:`vabench.results.outcometable`) follows."""
        self.hold()
        write_row(spec.outcome_path(self.run_dir), row)
        landed(self.run_dir)

    def files(self, files: dict[str, bytes], rel: str | Path) -> None:
        """A record (or learning record) sent back by a worker, at ``rel`` in the run folder."""
        self.hold()
        land(files, self.run_dir / rel)

    def partial(self, backend, workers: list) -> None:
        """Keep the records of episodes cut short by a stop that live in their worker's scratch
        (another node), where the next attempt then sets them aside; in-place ones are there."""
        for worker in workers:
            for rel, files in backend.partial(worker).items():
                try:
                    land(files, self.run_dir / rel)
                except (OSError, ValueError) as e:
                    self.log(f"could not keep the partial record {rel}: {type(e).__name__}: {e}")
