"""Re-simulating judged episodes from their records: the same spec on a fresh env of the run's
render preset, the recorded replies sent again in order by the replay agent
(:func:`vabench.agents.models.offline.replay`), the harness as the run configured it. No model is
called. Episodes run in this process (``workers=1``) or in ``workers`` child processes, each
with its own envs: one scene per process, like an env worker, so the result must not depend on
which process ran which episode."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from vabench.agents.episode import Episode, HarnessConfig, run_episode
from vabench.agents.models.offline import replay
from vabench.core.condition import Condition
from vabench.envs import EnvConfig, RecordingConfig, VABenchEnv
from vabench.results.episodes import EpisodeSpec
from vabench.verify.compare import plain

NO_RECORDING = RecordingConfig(enabled=False, video=False)  # verify needs no reviewer views


@dataclass(frozen=True)
class Job:
    """One episode to re-simulate: its original ``row``, its record (``events``), where the new
    record goes (``out``), the harness settings and recording the run used."""

    row: dict
    events: str
    out: str
    harness: HarnessConfig
    recording: RecordingConfig = NO_RECORDING
    then_stop: bool = False  # past the recorded replies the model stops (rescore) instead of diverging


def spec_of(row: dict) -> EpisodeSpec:
    """The episode spec a row names (its identity columns). A column the row's schema lacks (NaN
    where rows of two schema versions are read together) takes the paper's value."""
    return EpisodeSpec.of_row({k: plain(v) for k, v in row.items()})


class Resimulator:
    """Envs (one per condition look and recording setting) that re-run episodes one at a time."""

    def __init__(self):
        self.envs: dict[tuple, VABenchEnv] = {}

    def env(self, condition: Condition, recording: RecordingConfig) -> VABenchEnv:
        key = (condition.look, recording)
        if key not in self.envs:
            self.envs[key] = VABenchEnv(EnvConfig.of(condition, recording=recording))
        return self.envs[key]

    def run(self, job: Job) -> dict:
        """The re-simulated episode's row (its record in ``job.out``)."""
        spec = spec_of(job.row)
        part = {k: job.row[k] for k in ("run_id", "experiment")}
        episode = Episode(spec, int(job.row["attempt"]), None, part)
        env = self.env(spec.condition, job.recording)
        return run_episode(
            env, replay(Path(job.events), then_stop=job.then_stop), episode, Path(job.out), job.harness
        ).row()

    def close(self) -> None:
        for env in self.envs.values():
            env.close()


_WORKER: Resimulator | None = None


def _start() -> None:
    global _WORKER
    _WORKER = Resimulator()


def _run(job: Job) -> dict:
    return _WORKER.run(job)


def resimulate(jobs: list[Job], workers: int = 1):
    """Yield ``(job, new row)`` as episodes finish (in order of ``jobs``)."""
    if workers <= 1:
        sim = Resimulator()
        try:
            for job in jobs:
                yield job, sim.run(job)
        finally:
            sim.close()
        return
    ctx = multiprocessing.get_context("spawn")  # no forked simulator state
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_start) as pool:
        yield from zip(jobs, pool.map(_run, jobs), strict=True)
