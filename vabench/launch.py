"""Entry point: ``python -m vabench.launch +experiment=NAME [key=value ...]`` (Hydra).

This is the one way to run episodes. One Hydra job is one run folder (``results_dir/run_id``);
``-m`` sweeps (e.g. over ``summary=``) give one sub-folder per job. The config is validated before
any work starts; the episodes run on Ray (``ray.address=local|auto|<address>``) or in this process
(``ray.address=none``), through the same driver; the run folder gets one Parquet file per episode
under ``outcomes/``, and everything else under names starting with ``_`` (``_records/``,
``_learning/``, ``_run.json``; summaries in ``results_dir/_summaries/``), which Parquet readers
skip: ``pandas.read_parquet(run_folder)`` loads just the outcomes. A sweep folder too: Hydra's
``multirun.yaml`` is renamed ``_multirun.yaml`` (:class:`SweepFiles`), so
``pandas.read_parquet(sweep_folder)`` loads every job's outcomes as one table.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from vabench.actors.config import ConfigError, from_config  # also registers the model/_defaults node

SWEEP_FILE = "multirun.yaml"  # what Hydra writes into a sweep folder; Parquet readers fail on it


class SweepFiles(Callback):
    """Renames Hydra's ``multirun.yaml`` in a sweep folder to ``_multirun.yaml``, which Parquet
    readers skip: as soon as the first job starts, and again when the sweep ends."""

    def on_job_start(self, config: DictConfig, **kwargs) -> None:
        self._hide(config)

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        self._hide(config)

    @staticmethod
    def _hide(config: DictConfig) -> None:
        folder = Path(str(config.hydra.sweep.dir))
        try:
            (folder / SWEEP_FILE).replace(folder / f"_{SWEEP_FILE}")
        except FileNotFoundError:  # a single run, or another job of the sweep renamed it first
            pass


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    try:
        resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except Exception as e:  # a ??? left unset, a bad interpolation
        sys.exit(f"config error: {e}")
    try:
        run = from_config(resolved, Path(HydraConfig.get().runtime.output_dir))
    except ConfigError as e:
        sys.exit(f"config error: {e}")
    from vabench.actors.driver import run_experiment
    from vabench.analysis import success_matrix, to_markdown

    try:
        parallel = HydraConfig.get().launcher.get("_target_", "").endswith("JoblibLauncher")
        rows = run_experiment(run, line=HydraConfig.get().job.num if parallel else None)
    except KeyboardInterrupt:
        sys.exit(130)
    print()
    print(to_markdown(success_matrix(rows, track=run.track)))
    print(f"\nrun folder: {run.run_dir}  (python -m vabench.analysis {run.run_dir})")


if __name__ == "__main__":
    main()
