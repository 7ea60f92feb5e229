"""A sweep folder's files. Hydra's ``multirun.yaml`` becomes ``_multirun.yaml`` (Parquet readers
skip ``_`` names, so ``pandas.read_parquet(sweep_folder)`` reads every job's outcomes). Each job
leaves its exit status in ``_jobs/job<N>.json``, in whichever process it ran (a parallel sweep's
jobs run in joblib's); when the sweep ends the launcher reads them, takes the worst as its own exit
status and removes them. A refused or stopped job never stops the others."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hydra.core.utils import JobStatus
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

from vabench.launch.exits import Exit
from vabench.launch.folders import SWEEP_FILE, discard

JOBS = "_jobs"
worst: dict[str, int] = {}  # sweep folder ("": a single run) -> the worst exit status of its jobs


def _folder(config: DictConfig) -> Path:
    return Path(str(config.hydra.sweep.dir))


def _hide(folder: Path) -> None:
    try:
        (folder / SWEEP_FILE).replace(folder / f"_{SWEEP_FILE}")
    except FileNotFoundError:  # a single run, or another job of the sweep renamed it first
        pass


class SweepFiles(Callback):
    """The sweep folder's files, kept by Hydra's callbacks (``conf/config.yaml``)."""

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        shutil.rmtree(_folder(config) / JOBS, ignore_errors=True)  # a resumed sweep: this launch's statuses only

    def on_job_start(self, config: DictConfig, **kwargs) -> None:
        _hide(_folder(config))

    def on_job_end(self, config: DictConfig, job_return, **kwargs) -> None:
        """In the job's own process: its exit status (its return value; a crash is 1), kept here
        for a single run and in the sweep folder for a sweep's job."""
        done = job_return.status == JobStatus.COMPLETED
        code = int(job_return.return_value or 0) if done else int(Exit.CRASH)
        if config.hydra.mode != RunMode.MULTIRUN:
            worst[""] = code
            return
        folder = _folder(config) / JOBS
        folder.mkdir(parents=True, exist_ok=True)
        status = {"job": int(config.hydra.job.num), "exit": code, "overrides": list(config.hydra.overrides.task)}
        (folder / f"job{config.hydra.job.num}.json").write_text(json.dumps(status))

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        folder = _folder(config)
        _hide(folder)
        codes = [json.loads(p.read_text())["exit"] for p in sorted((folder / JOBS).glob("job*.json"))]
        worst[str(folder)] = max(codes, default=int(Exit.JUDGED))
        shutil.rmtree(folder / JOBS, ignore_errors=True)  # read: the sweep folder holds the jobs' folders only
        discard(folder)  # every job refused: no folder is left
