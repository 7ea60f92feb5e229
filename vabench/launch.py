"""Entry point: ``python -m vabench.launch +experiment=NAME [key=value ...]`` (Hydra).

This is the one way to run episodes. One Hydra job is one run folder (``results_dir/run_id``);
``-m`` sweeps (e.g. over ``summary=``) give one sub-folder per job. The results folder is checked
for writing before Hydra creates anything; the config is validated and the model's endpoint probed
before any work starts (a launch refused there leaves no run folder behind); the episodes run on
Ray (``ray.address=local|auto|<address>``) or in this process (``ray.address=none``), through the
same driver; the run folder gets one Parquet file per episode under ``outcomes/``, and everything
else under names starting with ``_`` (``_records/``, ``_learning/``, ``_run.json``; summaries in
``results_dir/_summaries/``), which Parquet readers skip: ``pandas.read_parquet(run_folder)``
loads just the outcomes. A sweep folder too: Hydra's ``multirun.yaml`` is renamed
``_multirun.yaml`` (:class:`SweepFiles`), so ``pandas.read_parquet(sweep_folder)`` loads every
job's outcomes as one table.

Exit status (:class:`Exit`): 0 every episode judged; 2 refused or stopped with one line saying why;
3 the run ended with episodes not judged (``infra_error`` rows: rerun the same ``run_id``);
130 interrupted; 1 a crash (a bug: please report the traceback).
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import uuid
from enum import IntEnum
from pathlib import Path

import hydra
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from vabench.config.run import ConfigError, from_config  # also registers the model/_defaults node

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


CONF = Path(__file__).resolve().parent.parent / "conf"


class Exit(IntEnum):
    """The launcher's exit status (README, "Run an evaluation")."""

    JUDGED = 0  # every episode of every job has a judged row
    CRASH = 1  # an unexpected error (Python's own status for a traceback)
    REFUSED = 2  # refused before any work, or stopped, with one line saying why
    UNJUDGED = 3  # the run ended, but some episodes are infra_error rows (rerun the same run_id)
    INTERRUPTED = 130


_worst = Exit.JUDGED  # over the jobs of this process (a multirun runs them one after another)
STATUS_FOLDER = "VABENCH_STATUS_FOLDER"  # environment: where a parallel sweep's jobs leave their exit status
_created: dict[str, Path] = {}  # run folder -> the first folder of its path that did not exist before launch


def run_dir_of(results_dir: str, run_id: str) -> str:
    """Hydra's ``hydra.run.dir`` / ``hydra.sweep.dir`` resolver: ``results_dir/run_id``, once it is
    known that the folder can be created (before Hydra creates it: a results folder that cannot be
    written is one line, not a traceback). Remembers what did not exist, for :func:`_discard`."""
    path = Path(str(results_dir)) / str(run_id)
    if str(path) not in _created:
        first_missing = None
        for folder in [path, *path.parents]:
            if folder.exists():
                break
            first_missing = folder
        problem = _cannot_write(folder)
        if problem:
            _exit(Exit.REFUSED, f"results_dir={results_dir}: {problem}; choose another results_dir=")
        _created[str(path)] = first_missing
    return str(path)


def _cannot_write(folder: Path) -> str | None:
    """Why nothing can be created inside ``folder`` (the nearest existing one), or None. A real
    try, removed at once: permission bits say nothing to root or on read-only mounts."""
    if not folder.is_dir():
        return f"{folder} is not a folder"
    probe = folder / f".vabench-write-check-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as e:
        return f"cannot write in {folder} ({e.strerror or type(e).__name__})"
    return None


def _discard(run_dir: Path) -> None:
    """A launch refused before any work leaves no folder it created: empty folders are removed up to
    the first one that did not exist before the launch (never anything with a file in it)."""
    base = next((Path(k) for k in _created if Path(k) == run_dir or Path(k) in run_dir.parents), None)
    if base is None:
        return
    last = _created[str(base)] or run_dir  # a sweep's job folder sits in results_dir/run_id
    for folder in [run_dir, *run_dir.parents]:
        if folder == base and _created[str(base)] is None:
            return  # it was there before the launch
        notes = [p for p in folder.iterdir()] if folder == base else []
        if notes and {p.name for p in notes} <= {SWEEP_FILE, f"_{SWEEP_FILE}"}:
            for note in notes:  # Hydra's note of a sweep this launch began and refused
                note.unlink()
        try:
            folder.rmdir()  # only when empty
        except OSError:
            return
        if folder == last:
            return


OmegaConf.register_new_resolver("vabench_run_dir", run_dir_of, replace=True)


def _exit(code: Exit, message: str | None = None) -> None:
    if message:
        print(message, file=sys.stderr)
    raise SystemExit(int(code))


def _refuse(run_dir: Path, message: str) -> None:
    _discard(run_dir)
    _exit(Exit.REFUSED, message)


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    """One job. In a sweep (``-m``) a job that is refused or stops leaves its status for the
    launcher's exit (:func:`_settle`) and the sweep goes on: one bad job never costs the others."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if HydraConfig.get().mode != RunMode.MULTIRUN:
        return _job(cfg)
    try:
        _job(cfg)
    except SystemExit as e:
        _settle(e.code if isinstance(e.code, int) else Exit.REFUSED)


def _job(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except Exception as e:  # a ??? left unset, a bad interpolation
        _refuse(run_dir, f"config error: {e}")
    try:
        run = from_config(resolved, run_dir, log=lambda m: print(m, file=sys.stderr))
    except ConfigError as e:
        _refuse(run_dir, f"config error: {e}")
    if run.probe:
        from vabench.run.probe import EndpointError, probe

        try:
            probe(run.model, log=lambda m: print(m, file=sys.stderr))
        except EndpointError as e:
            _refuse(run_dir, f"endpoint: {e}")
    from vabench.analysis import success_matrix, to_markdown
    from vabench.run.driver import run_experiment
    from vabench.runfolder.state import unjudged_summary

    parallel = HydraConfig.get().launcher.get("_target_", "").endswith("JoblibLauncher")
    try:
        rows = run_experiment(run, line=HydraConfig.get().job.num if parallel else None)
    except KeyboardInterrupt:
        _interrupted(parallel)
    except SystemExit as e:  # the driver stopped with one line saying why
        if isinstance(e.code, str):
            _exit(Exit.REFUSED, e.code)
        raise
    print()
    print(to_markdown(success_matrix(rows, track=run.track)))
    unjudged = unjudged_summary(rows)
    if unjudged:
        print("\n" + unjudged)
        _settle(Exit.UNJUDGED)
    print(f"\nrun folder: {run.run_dir}  (python -m vabench.analysis {run.run_dir})")


def _settle(code: int) -> None:
    """A job's status, for the launcher's exit (the worst over its jobs): kept in this process and,
    for a parallel sweep's jobs in other processes, in the launch's status folder."""
    global _worst
    _worst = max(int(_worst), int(code))
    folder = os.environ.get(STATUS_FOLDER)
    if folder and Path(folder).is_dir():
        (Path(folder) / f"{os.getpid()}-{uuid.uuid4().hex[:8]}").write_text(str(int(code)))


def _interrupted(parallel: bool) -> None:
    """Ctrl-C: by now every finished episode is saved and the run folder released. Ray's shutdown
    is the one teardown left that matters; the interpreter's own (seconds of module finalisation
    under load) is skipped, so the launcher is gone within seconds. A parallel sweep's job is a
    joblib worker: it leaves the usual way."""
    if parallel:
        _exit(Exit.INTERRUPTED)
    from vabench.actors.backends import shut_down

    shut_down()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(Exit.INTERRUPTED))


EXAMPLES = """\
usage: python -m vabench.launch [+experiment=NAME] [key=value ...] [-m]

Runs episodes into one run folder, results_dir/run_id (rerun the same run_id to resume).

examples:
  python -m vabench.launch +experiment=smoke                       # oracle, two tasks, on Ray
  python -m vabench.launch +experiment=smoke ray.address=none      # no Ray: in this process
  python -m vabench.launch model=servo protocol=both seeds=2 tasks=[grasp_single_cube,place_single_cube]
  python -m vabench.launch model=random protocol=both seeds=5 run_id=floor
  OPENAI_API_KEY=... python -m vabench.launch model=openai model.id=openai/gpt-4o summary=own
  python -m vabench.launch model=vllm model.id=hosted_vllm/Qwen/Qwen2.5-VL-7B-Instruct model.api_base=http://host:8000/v1
  python -m vabench.launch -m summary=own,none +experiment=summary_sources   # a sweep: one folder per job

lookups:
  python -m vabench.launch +experiment=main model=openai plan=true   # calls, tokens, dollars, time; runs nothing
                                                # (plan.calibrate=RUN, plan.difference=D: README, "Cost")
  python -m vabench.tasks                       # tasks: track, arms, step budget, verified seeds
  python -m vabench.launch --cfg job [...]      # the composed config, without running
  python -m vabench.launch --hydra-help         # Hydra's own options

exit status: 0 every episode judged; 2 refused or stopped (one line says why); 3 the run ended with
episodes not judged (infra_error rows; rerun the same run_id); 130 interrupted; 1 a crash.
"""


def help_text() -> str:
    """The examples, then each config group with its options and the top-level keys."""
    lines = [EXAMPLES, "config groups (group=option):"]
    for group in sorted(p for p in CONF.iterdir() if p.is_dir()):
        options = sorted(f.stem for f in group.glob("*.yaml"))
        plus = "+" if group.name == "experiment" else ""
        lines.append(f"  {plus}{group.name:<11} {', '.join(options)}")
    node = _defaults()
    keys = [k for k, v in node.items() if not isinstance(v, dict)]
    lines += ["", "top-level keys (key=value; conf/config.yaml explains each):", "  " + ", ".join(keys)]
    lines += ["", "sections (section.key=value; defaults and comments in their dataclasses, conf/README.md):"]
    lines += [f"  {k:<11} {', '.join(map(str, v))}" for k, v in node.items() if isinstance(v, dict)]
    return "\n".join(lines)


def _defaults(overrides: list[str] | None = None) -> dict:
    """The composed config (unresolved) with these group choices."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return OmegaConf.to_container(compose(config_name="config", overrides=overrides or []), resolve=False)


def misspelt(args: list[str]) -> str | None:
    """One line for the first ``key=value`` whose key the composed defaults do not have, with the
    closest key (Hydra itself only says "not in struct"); ``+key``, ``~key``, ``hydra.*``, group
    paths (``hydra/launcher=joblib``) and the free-form ``model.extra.*`` are left to Hydra."""
    from vabench.config.sections import closest

    keys = [a.split("=", 1)[0] for a in args if "=" in a and not a.startswith(("-", "+", "~"))]
    keys = [k for k in keys if "/" not in k and not k.startswith(("hydra.", "model.extra."))]  # group paths: Hydra's
    if not keys:
        return None
    groups = {p.name for p in CONF.iterdir() if p.is_dir() and p.name != "experiment"}
    chosen = [a for a in args if a.split("=", 1)[0].lstrip("+") in {*groups, "experiment"} and "," not in a]
    try:  # the defaults with the groups chosen (summary=shared has keys summary=none lacks)
        node = _defaults(chosen)
    except Exception:  # an unknown group option, ...: Hydra's own message says it
        return None
    for key in keys:
        where: dict = {**node, **{g: node.get(g) for g in groups}}
        for depth, part in enumerate(key.split(".")):
            if not isinstance(where, dict):
                break
            if part not in where:
                close = closest(part, where)
                full = ".".join(key.split(".")[:depth] + [close]) if close else None
                if full:
                    return f"unknown config key '{key}'; did you mean '{full}'?"
                return f"unknown config key '{key}'; known here: {', '.join(map(str, where))} (a new key: +{key}=...)"
            where = where[part]
    return None


def plan_args(args: list[str]) -> tuple[list[str], dict | None]:
    """The overrides without ``plan=...`` and ``plan.<key>=...``, and the plan's keys (None: no
    ``plan=true``). Values are YAML, as Hydra reads them."""
    import yaml

    rest, keys, on = [], {}, False
    for arg in args:
        key, _, value = arg.partition("=")
        if key == "plan":
            on = yaml.safe_load(value) is True
        elif key.startswith("plan."):
            keys[key[len("plan.") :]] = yaml.safe_load(value)
        else:
            rest.append(arg)
    if keys and not on:
        _exit(Exit.REFUSED, f"config error: plan.{next(iter(keys))} needs plan=true")
    return rest, keys if on else None


def plan(overrides: list[str], keys: dict) -> None:
    """Print the run's plan (vabench.plan.estimate): the composed config, validated, and nothing
    else: no key, no Ray, no request, no folder."""
    from vabench.config.sections import build
    from vabench.plan.estimate import PlanConfig
    from vabench.plan.report import plan_text

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # prices from the installed map, no network
    if any(a in ("-m", "--multirun") for a in overrides):
        _exit(Exit.REFUSED, "config error: plan=true plans one run; drop -m and plan each job")
    try:
        config = build(PlanConfig, keys, "plan")  # types, ranges, and unknown keys with the closest one
        resolved = OmegaConf.to_container(OmegaConf.create(_defaults(overrides)), resolve=True, throw_on_missing=True)
        run = from_config(
            resolved,
            Path(str(resolved["results_dir"])) / str(resolved["run_id"]),
            log=lambda m: print(m, file=sys.stderr),
        )
    except (ConfigError, ValueError) as e:
        _exit(Exit.REFUSED, f"config error: {e}")
    print(plan_text(run, config))


def cli() -> None:
    """``--help`` / ``-h`` print :func:`help_text`; ``plan=true`` prints the run's plan and runs
    nothing; anything else goes to Hydra. The exit status is the worst over the jobs run (:class:`Exit`)."""
    if any(a in ("--help", "-h") for a in sys.argv[1:]):
        print(help_text())
        return
    overrides, planned = plan_args(sys.argv[1:])
    wrong = misspelt(overrides)
    if wrong:
        _exit(Exit.REFUSED, f"config error: {wrong}")
    if planned is not None:
        plan(overrides, planned)
        return
    with tempfile.TemporaryDirectory(prefix="vabench-status-") as folder:
        os.environ[STATUS_FOLDER] = folder  # a parallel sweep's job processes inherit it
        main()
        codes = [int(p.read_text()) for p in Path(folder).iterdir()]
    raise SystemExit(max([int(_worst), *codes]))


if __name__ == "__main__":
    # Hydra imports vabench.launch for the SweepFiles callback: let that be this module, so its
    # resolver re-registration sees the same state (_created, _worst) as main.
    sys.modules.setdefault("vabench.launch", sys.modules[__name__])
    cli()
