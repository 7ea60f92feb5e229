"""One Hydra job: one run folder. The composed config is validated (and, with ``plan=true``,
planned: the same composed config a run would use), the model's endpoint probed, then the run
goes through the driver. A refused or planning job leaves no folder behind. In a sweep the job
returns its exit status (:mod:`vabench.launch.sweep` keeps it) instead of leaving."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from vabench.agents.models.offline import HUMAN
from vabench.core.errors import Interrupted, RunStopped, VabenchError, flat
from vabench.launch.exits import Exit, leave
from vabench.launch.folders import discard
from vabench.launch.words import CONF
from vabench.run.config.run import RunConfig, from_config  # also registers the config's dataclass nodes


def _say(message: str) -> None:
    print(message, file=sys.stderr)


@hydra.main(version_base="1.3", config_path=str(CONF), config_name="config")
def main(cfg: DictConfig) -> int:
    """One job; in a sweep its exit status is its return value, so one bad job never costs the others."""
    if HydraConfig.get().mode != RunMode.MULTIRUN:
        return job(cfg)
    try:
        return job(cfg)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else int(Exit.REFUSED)


def _refuse(run_dir: Path, message: str) -> None:
    discard(run_dir)
    leave(Exit.REFUSED, message)


def _validated(cfg: DictConfig, run_dir: Path) -> RunConfig:
    try:
        resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except Exception as e:  # a ??? left unset, a bad interpolation
        _refuse(run_dir, f"config error: {e}")
    try:
        run = from_config(resolved, run_dir, log=_say)
    except VabenchError as e:  # ConfigError, UnknownName, a manifest or folder it names: one line
        _refuse(run_dir, f"config error: {flat(e)}")
    from vabench.agents.models.kinds import seated

    if seated(run.model.id):
        _refuse(run_dir, f"config error: model={run.model.id}: {seated(run.model.id)}")
    if run.options.probe and not run.plan.enabled:
        from vabench.run.probe import EndpointError, control_refusal, probe, trained_warning

        try:
            probe(run.model, log=_say)
        except EndpointError as e:
            _refuse(run_dir, f"endpoint: {e}")
        refusal = control_refusal(run)  # a checkpoint of the other interface
        if refusal:
            _refuse(run_dir, f"endpoint: {refusal}")
        warning = trained_warning(run)  # a checkpoint evaluated on seeds it was trained on
        if warning:
            _say(warning)
    return run


def job(cfg: DictConfig) -> int:
    """Validate, then plan (``plan=true``: print it, make nothing) or run and print the table."""
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    run = _validated(cfg, run_dir)
    if run.plan.enabled:
        from vabench.plan.report import plan_text

        discard(run_dir)
        print(plan_text(run, run.plan))
        return int(Exit.JUDGED)
    if run.model.id == HUMAN:  # people play through a page: the study's server instead of the driver
        return _study(run)
    return _run(run)


def _study(run: RunConfig) -> int:
    from vabench.human.serve import serve

    try:
        finished = serve(run, log=_say)
    except VabenchError as e:  # a busy port, a folder a driver holds: one line
        leave(Exit.REFUSED, flat(e))
    print(f"\nrun folder: {run.run_dir}  (python -m vabench.analysis {run.run_dir})")
    return int(Exit.JUDGED if finished else Exit.INTERRUPTED)


def _run(run: RunConfig) -> int:
    from vabench.analysis import success_matrix, to_markdown
    from vabench.run.driver import run_experiment
    from vabench.run.folder.state import unjudged_summary

    parallel = HydraConfig.get().launcher.get("_target_", "").endswith("JoblibLauncher")
    try:
        rows = run_experiment(run, line=HydraConfig.get().job.num if parallel else None)
    except Interrupted:
        _interrupted(parallel)
    except RunStopped as stop:  # one line saying why, and how to go on
        leave(Exit(stop.exit_status), stop.line(run.run_id))
    except VabenchError as e:  # a bad file or a misbehaving server: one line, not a traceback
        leave(Exit.REFUSED, flat(e))
    print()
    print(to_markdown(success_matrix(rows, track=run.track)))
    unjudged = unjudged_summary(rows)
    if unjudged:
        print("\n" + unjudged)
    print(f"\nrun folder: {run.run_dir}  (python -m vabench.analysis {run.run_dir})")
    return int(Exit.UNJUDGED if unjudged else Exit.JUDGED)


def _interrupted(parallel: bool) -> None:
    """Ctrl-C: by now every finished episode is saved and the run folder released; Ray's shutdown
    is the one teardown left that matters. A parallel sweep's job is a joblib worker: it leaves the
    usual way."""
    if parallel:
        leave(Exit.INTERRUPTED)
    from vabench.run.actors.backends import shut_down

    shut_down()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    # The one os._exit left: after Ray's shutdown the interpreter's own teardown (finalising every
    # module of SAPIEN, Ray and LiteLLM) takes seconds under load, and a user who pressed Ctrl-C
    # waits for nothing of it (benchmarks/ctrl_c.py measures the time to the prompt).
    os._exit(int(Exit.INTERRUPTED))
