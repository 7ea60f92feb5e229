"""The validated run configuration: everything is checked before any work starts, and every
error names the key, the value and what is allowed.

Hydra composes the YAML under ``conf/``; :func:`from_config` turns it into a frozen
:class:`RunConfig`. Keys never live in a config: a model names the environment variable that
holds its key (``api_key_env``), so the resolved config a run folder keeps has no secrets. The
defaults of every ``model.*``, ``harness.*``, ``ray.*`` and ``recording.*`` key are their
dataclasses' (:mod:`vabench.config.sections` registers them as Hydra's ``<section>/_defaults``), so
YAML states only what differs; ranges are checked once, in each dataclass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from vabench.agents.harness_config import HarnessConfig
from vabench.agents.models import Model, ModelConfig
from vabench.agents.registry import check_model_id, is_offline, make_model
from vabench.checks import at_least, bound
from vabench.config.sections import ConfigError, build, register, typed, unknown_keys
from vabench.envs import RENDER_PRESETS, PerturbationConfig, RecordingConfig
from vabench.interventions import check_composes
from vabench.vocab import PROTOCOLS, TRACKS, Robot, SummaryMode, summary_mode

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=,+-]*$")
_SECRET_KEY = re.compile(r"(api_?key|token|secret|password)$", re.IGNORECASE)


NO_RAY = "none"
RAY_TIMES = ("place_timeout_s", "starve_timeout_s", "check_every_s", "hang_s", "stuck_s")  # seconds, > 0


@dataclass(frozen=True)
class RayConfig:
    address: str = "local"  # local | auto | ray://host:10001 | host:port | none (no Ray: in this process)
    num_cpus: int | None = None
    env_actors: int = 4
    episodes_per_actor: int = 8  # episodes one env actor hosts at once (threads; one scene each)
    actor_cpus: float = 0.5
    actor_gpus: float = 0.0
    place_timeout_s: float = 120.0  # a worker not placed and started this long (x load) is given up while one is live
    starve_timeout_s: float = 600.0  # no worker live this long (x load): the run stops as interrupted (resumable)
    check_every_s: float = 15.0  # how often the backstop looks at the workers
    hang_s: float = 300.0  # a busy worker with no evidence of progress this long (x load) is killed
    stuck_s: float = 600.0  # an episode inside one simulator call this long (x load): its worker is killed

    def __post_init__(self):
        at_least(self, "ray", 1, "num_cpus", "env_actors", "episodes_per_actor")
        at_least(self, "ray", 0, "actor_cpus", strict=True)
        at_least(self, "ray", 0, "actor_gpus")
        at_least(self, "ray", 0, *RAY_TIMES, strict=True)

    @property
    def in_process(self) -> bool:
        return self.address == NO_RAY


@dataclass(frozen=True)
class RunOptions:
    """The run's top-level numbers and switches (Hydra's ``_run`` node: config.yaml composes it)."""

    runs: int = 1  # repetitions of the whole suite (the paper reports 3)
    max_attempts: int = 3  # infrastructure attempts per episode and run (crashes, outages); never task failures
    retry_infra: bool = True  # a rerun retries infra_error rows with a fresh max_attempts; false keeps them
    episode_timeout_s: float = 3600.0  # an episode working this long (rate-limit waits excluded) ends as infra
    probe: bool = True  # one 1-token request to the model's endpoint before any work (offline agents: none)

    def __post_init__(self):
        at_least(self, "", 1, "runs", "max_attempts")
        at_least(self, "", 0, "episode_timeout_s", strict=True)


@dataclass(frozen=True)
class RunConfig:
    experiment: str
    run_id: str
    run_dir: Path
    model: ModelConfig
    model_name: str  # the id written to rows (ModelConfig.name, or the agent's own name)
    privileged: bool  # the agent reads simulator state (the oracle)
    protocols: tuple[str, ...]
    summary: SummaryMode
    track: str
    tasks: tuple[str, ...]
    seeds: int | tuple[int, ...] | None  # None: every verified seed; N: the first N; tuple: these
    runs: int
    max_attempts: int
    retry_infra: bool  # a rerun retries infra_error rows (a fresh budget of max_attempts)
    episode_timeout_s: float
    render: str  # the render preset (vabench.envs.render): image sizes and encodings per protocol, demos
    recording: RecordingConfig
    harness: HarnessConfig
    ray: RayConfig
    summary_root: Path
    demo_root: Path | None  # None: the cache ($VABENCH_CACHE/demos)
    robot: str = Robot.PANDA  # the embodiment (robot=NAME; vabench.envs.sim.embodiments)
    perturbation: PerturbationConfig = field(default_factory=PerturbationConfig)  # the look (vabench.envs.perturb)
    probe: bool = True  # the launcher probes the model's endpoint before any work (vabench.run.probe)
    resolved: dict = field(default_factory=dict)  # the composed config, for the run folder

    @property
    def identity(self) -> dict:
        """The run's part of every outcome row (the episode's part is EpisodeSpec.identity)."""
        return {"run_id": self.run_id, "experiment": self.experiment}


def _get(cfg: dict, key: str, where: str = ""):
    if key not in cfg:
        raise ConfigError(f"missing config key '{where}{key}'")
    return cfg[key]


def _no_secrets(node, where: str) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if _SECRET_KEY.search(str(key)) and value not in (None, "", "???"):
                raise ConfigError(
                    f"'{where}{key}' looks like a secret; configs hold no keys. Put the key in an environment "
                    "variable and name that variable in model.api_key_env"
                )
            _no_secrets(value, f"{where}{key}.")


MODEL_KEYS = {"model": "id"}  # ModelConfig.model is ``model.id`` in the config


register("model", ModelConfig, MODEL_KEYS)
register("harness", HarnessConfig)
register("ray", RayConfig)
register("recording", RecordingConfig)
register("", RunOptions)
register("perturbation", PerturbationConfig)


def _model(raw: dict) -> tuple[ModelConfig, Model]:
    """A validated ModelConfig, the agent's row name and its privilege. Keys the config leaves out
    take ModelConfig's defaults (a hand-built config need not compose model/_defaults)."""
    unknown_keys(raw, [MODEL_KEYS.get(k, k) for k in ModelConfig.__dataclass_fields__], "model.")
    try:
        model_id = check_model_id(raw.get("id"))
    except ValueError as e:
        raise ConfigError(f"'model.id' = {e}") from None
    cfg = build(ModelConfig, {**raw, "id": model_id}, "model", MODEL_KEYS)
    try:
        agent = make_model(cfg)  # cheap: no request, no LiteLLM import; checks extra and reads a replay record
    except (ValueError, OSError) as e:
        raise ConfigError(f"'model': {e}") from None
    return cfg, agent


def _tasks(raw, track: str) -> tuple[str, ...]:
    """``all`` = every registered task of the track; a list must name tasks of that track."""
    from vabench.envs.tasks import TASKS, tasks_of_track

    names = list(tasks_of_track(track)) if raw == "all" else raw
    if not isinstance(names, (list, tuple)) or not names or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"'tasks' must be 'all' or a non-empty list of task names, got {raw!r}")
    unknown = [n for n in names if n not in TASKS]
    if unknown:
        raise ConfigError(f"'tasks': {', '.join(unknown)} not registered; registered tasks: {', '.join(sorted(TASKS))}")
    other = [f"{n} (track {TASKS[n].track})" for n in names if TASKS[n].track != track]
    if other:
        raise ConfigError(
            f"'tasks': {', '.join(other)} not on track {track}; set track= to the task's track, or list tasks "
            f"of track {track}: {', '.join(tasks_of_track(track))}"
        )
    if len(set(names)) != len(names):
        raise ConfigError(f"'tasks' lists a task twice: {names}")
    return tuple(names)


def _playable(agent: Model, tasks: tuple[str, ...], every: bool, seeds, protocols, log, robot: str = Robot.PANDA):
    """The tasks the agent can play: with ``tasks: all``, those it cannot (a two-arm task for a
    one-arm agent) are left out with one line; listed ones are refused, naming why. Explicit seeds
    outside a task's manifest are played with a warning: their scenes were never screened."""
    from vabench.envs.seeds import eval_seeds
    from vabench.envs.tasks import task_class

    keep = []
    for task in tasks:
        try:
            verified = eval_seeds(task, robot)
        except FileNotFoundError as e:
            if not every:
                raise ConfigError(f"'robot' = {robot}: {e}") from None
            log(f"tasks=all: {task} left out ({e})")  # another robot's task not yet screened
            continue
        if not verified and (seeds is None or isinstance(seeds, int)):  # explicit seeds are played as named
            why = f"{robot} cannot do it (vabench/envs/seed_manifests/{robot}/{task}.json, 'declared')"
            if not every:
                raise ConfigError(f"'tasks': {task}: {why}")
            log(f"tasks=all: {task} left out ({why})")
            continue
        chosen = verified if seeds is None else verified[:seeds] if isinstance(seeds, int) else list(seeds)
        arms = tuple(task_class(task).arms)
        refused = [w for s in chosen for p in protocols if (w := agent.refuses(task, arms, s, p))]
        if refused and every and len(refused) == len(chosen) * len(protocols):
            log(f"tasks=all: {task} left out ({refused[0]})")
            continue
        if refused:
            raise ConfigError(f"'model' = {agent.name}: {refused[0]}")
        outside = sorted(set(chosen) - set(verified))
        if outside:
            log(
                f"warning: seeds {', '.join(map(str, outside))} of {task} are not among its {len(verified)} verified "
                f"seeds (vabench/envs/seed_manifests/{task}.json): their scenes were never screened; rows of them "
                "do not compare with the paper's"
            )
        keep.append(task)
    if not keep:
        raise ConfigError(f"'tasks': {agent.name} can play none of the tasks of this track")
    return tuple(keep)


def _seeds(raw) -> int | tuple[int, ...] | None:
    if raw == "all" or raw is None:
        return None
    try:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return bound(raw, "seeds", 1)
        if isinstance(raw, (list, tuple)) and raw:
            return tuple(bound(typed(s, int, "seeds[]"), "seeds[]", 0) for s in raw)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    raise ConfigError(f"'seeds' must be 'all', a positive count, or a list of non-negative seeds, got {raw!r}")


def _summary_root(cfg: dict, run_dir: Path, render: str) -> Path:
    """The summary store, by default ``<results_dir>/_summaries/<render preset>``: one store per
    results folder, so a passive, transfer or long-horizon run (and every job of a multirun) reuses
    the summaries a base run learned (paper 5.1: "its own demonstration summary") instead of
    learning new ones; one per render preset, because a summary is learned from demos recorded at
    the preset's size (``summary_root=<path>`` names another results folder's ``_summaries``).
    Absolute: workers may run in another working directory."""
    if cfg.get("summary_root"):
        return (Path(cfg["summary_root"]) / render).absolute()
    if (run_dir / "_summaries").is_dir():  # a run begun before stores were shared: it keeps its own summaries
        return (run_dir / "_summaries").absolute()
    return (Path(str(_get(cfg, "results_dir"))) / "_summaries" / render).absolute()


def _robot(raw) -> str:
    """``robot.name`` (conf/robot/; default panda, also for a run folder's config from before
    embodiments, which has no ``robot``); the robot's seeds are its own manifests."""
    name = (raw or {}).get("name", Robot.PANDA) if isinstance(raw, dict | None) else raw
    if name not in set(Robot):
        raise ConfigError(
            f"'robot.name' must be one of {', '.join(Robot)}, got {name!r} (robot=NAME picks conf/robot/NAME)"
        )
    return str(name)


def _choices(cfg: dict) -> tuple[tuple[str, ...], SummaryMode, str, str]:
    """The run's protocols, summary mode, track and render preset, each one of the allowed words."""
    protocols = _get(cfg, "protocols")
    if not isinstance(protocols, (list, tuple)) or not protocols or any(p not in PROTOCOLS for p in protocols):
        raise ConfigError(f"'protocols' must be a non-empty list of {', '.join(PROTOCOLS)}, got {protocols!r}")
    if len(set(protocols)) != len(protocols):
        raise ConfigError(f"'protocols' lists a protocol twice: {protocols}")
    summary = _get(cfg, "summary")
    try:
        mode = summary_mode(summary.get("mode") if isinstance(summary, dict) else summary)
    except ValueError as e:
        raise ConfigError(f"'summary.mode': {e}") from None
    track = _get(cfg, "track")
    if track not in TRACKS:
        raise ConfigError(f"'track' must be one of {', '.join(TRACKS)}, got {track!r}")
    render = (_get(cfg, "render") or {}).get("preset")
    if render not in RENDER_PRESETS:
        raise ConfigError(f"'render.preset' must be one of {', '.join(RENDER_PRESETS)}, got {render!r}")
    return tuple(protocols), mode, track, render


def from_config(cfg: dict, run_dir: Path, log=print) -> RunConfig:
    """Validate a composed config (a plain dict: ``OmegaConf.to_container(cfg, resolve=True)``);
    ``log`` gets warnings (tasks left out, seeds outside the manifests)."""
    _no_secrets(cfg, "")
    run_id = str(_get(cfg, "run_id"))
    if not RUN_ID.match(run_id):
        raise ConfigError(f"'run_id' = {run_id!r}: use letters, digits and _ . = , + - (not starting with a symbol)")
    model, agent = _model(_get(cfg, "model"))
    protocols, mode, track, render = _choices(cfg)
    ray = dict(cfg.get("ray") or {})
    if ray.get("address", NO_RAY) is None:
        ray["address"] = NO_RAY
    seeds = _seeds(_get(cfg, "seeds"))
    options = build(RunOptions, {k: cfg[k] for k in RunOptions.__dataclass_fields__ if k in cfg}, "")
    robot = _robot(cfg.get("robot"))
    run = RunConfig(
        experiment=str(_get(cfg, "experiment")),
        run_id=run_id,
        run_dir=Path(run_dir),
        model=model,
        model_name=agent.name,
        privileged=bool(agent.privileged),
        protocols=protocols,
        summary=mode,
        track=track,
        tasks=_playable(
            agent, _tasks(_get(cfg, "tasks"), track), _get(cfg, "tasks") == "all", seeds, protocols, log, robot
        ),
        seeds=seeds,
        runs=options.runs,
        max_attempts=options.max_attempts,
        retry_infra=options.retry_infra,
        episode_timeout_s=options.episode_timeout_s,
        render=render,
        recording=build(RecordingConfig, cfg.get("recording") or {}, "recording"),
        harness=build(HarnessConfig, cfg.get("harness") or {}, "harness"),
        ray=build(RayConfig, ray, "ray"),
        summary_root=_summary_root(cfg, Path(run_dir), render),
        demo_root=Path(cfg["demo_root"]) if cfg.get("demo_root") else None,
        probe=options.probe,
        robot=robot,
        perturbation=build(PerturbationConfig, cfg.get("perturbation") or {}, "perturbation"),
        resolved=cfg,
    )
    try:  # an intervention composes with the run's protocols and summary mode, or the error names what does not
        check_composes(run.harness.intervention, run.protocols, run.summary, is_offline(run.model.model))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return run
