"""The validated run configuration: everything is checked before any work starts, and every
error names the key, the value and what is allowed.

Hydra composes the YAML under ``conf/``; :func:`from_config` turns it into a frozen
:class:`RunConfig`. Keys never live in a config: a model names the environment variable that
holds its key (``api_key_env``), so the resolved config a run folder keeps has no secrets. Every
default is declared once, in a dataclass: ``model.*`` (:class:`ModelConfig`), ``harness.*``,
``ray.*``, ``recording.*``, the run's options (:class:`RunOptions`), the condition's keys (the
departure fields of :class:`~vabench.core.condition.Condition`) and a policy's ``model.extra.*``
(:class:`~vabench.agents.models.policy.PolicyConfig`); :mod:`vabench.run.config.sections` registers them as
Hydra's nodes, so YAML states only what differs, and ranges are checked once, in each dataclass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from vabench.agents.chat.harness_config import HarnessConfig
from vabench.agents.chat.model import Model, ModelConfig
from vabench.agents.models.kinds import check_model_id, make_model, reads_no_summary
from vabench.agents.models.policy import PolicyConfig
from vabench.core.checks import at_least, within
from vabench.core.condition import Condition, config_default
from vabench.core.vocab import PROTOCOLS, TRACKS, SummaryMode, summary_mode
from vabench.envs import RecordingConfig
from vabench.results.layout import OUTCOMES
from vabench.run.config.choices import (
    CONDITION_KEYS,
    conditions,
    moved,
    need,
    playable,
    seeds_of,
    summary_root,
    tasks_of,
)
from vabench.run.config.sections import ConfigError, build, register, register_top, unknown_keys

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=,+-]*$")
_SECRET_KEY = re.compile(r"(api_?key|token|secret|password)$", re.IGNORECASE)


NO_RAY = "none"
RAY_TIMES = ("place_timeout_s", "starve_timeout_s", "check_every_s", "hang_s", "stuck_s")  # seconds, > 0


@dataclass(frozen=True)
class RayConfig:
    address: str = "local"  # local | auto | ray://host:10001 | host:port | none (no Ray: in this process)
    num_cpus: int | None = None  # CPUs of the private Ray (address=local); None: Ray counts them
    env_actors: int = 4  # env worker processes (Ray actors), each hosting episodes_per_actor episodes
    episodes_per_actor: int = 8  # episodes one env actor hosts at once (threads; one scene each)
    actor_cpus: float = 0.5  # CPUs Ray books per env worker (oversubscribed: model latency dominates)
    actor_gpus: float = 0.0  # GPUs (a fraction) per env worker, for rendering on a GPU node
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
class PlanConfig:
    """``plan.*``: ``plan=true`` prints what the run will cost and runs nothing (vabench.plan)."""

    enabled: bool = False  # plan=true: print the plan, run nothing, make no folder
    calibrate: str | None = None  # a previous run folder: expected calls, tokens, time and success from its rows
    difference: float | None = None  # a success-rate difference to detect at 80 % power (two-sided, alpha 0.05)
    baseline: float | None = None  # the baseline success rate for plan.difference; None: calibrated, else 0.3
    run_sd: float = 0.0  # SD of a condition's success rate across runs (vabench.analysis.power)

    def __post_init__(self):
        within(self, "plan", -1.0, 1.0, *(k for k in ("difference",) if self.difference is not None))
        within(self, "plan", 0.0, 1.0, *(k for k in ("baseline",) if self.baseline is not None))
        at_least(self, "plan", 0, "run_sd")
        asked = [k for k in ("calibrate", "difference", "baseline") if getattr(self, k) is not None]
        if asked and not self.enabled:
            raise ConfigError(f"'plan.{asked[0]}' needs plan=true")
        if self.calibrate is not None and not (Path(self.calibrate) / OUTCOMES).is_dir():
            raise ConfigError(f"'plan.calibrate' = {self.calibrate}: not a run folder (it has no outcomes/)")


@dataclass(frozen=True)
class HumanConfig:
    """``human.*``: model=human serves a page per operator (vabench.human, docs/human.md)."""

    operators: int = 1  # people playing at once: one URL each (op1, op2, ...), each row names its operator
    host: str = "127.0.0.1"  # listen address; beyond loopback a token is required (VABENCH_REVIEW_TOKEN or made)
    port: int = 8766  # 0 picks a free one

    def __post_init__(self):
        at_least(self, "human", 1, "operators")
        within(self, "human", 0, 65535, "port")


@dataclass(frozen=True)
class RunConfig:
    experiment: str
    run_id: str
    run_dir: Path
    model: ModelConfig
    conditions: tuple[Condition, ...]  # one per protocol, in the order asked
    track: str
    tasks: tuple[str, ...]
    seeds: int | tuple[int, ...] | None  # None: every verified seed; N: the first N; tuple: these
    options: RunOptions
    recording: RecordingConfig
    harness: HarnessConfig
    ray: RayConfig
    summary_root: Path
    demo_root: Path | None  # None: the cache ($VABENCH_CACHE/demos)
    plan: PlanConfig = field(default_factory=PlanConfig)  # plan=true: print what the run will cost, run nothing
    human: HumanConfig = field(default_factory=HumanConfig)  # model=human: the operators' page
    privileged: bool = False  # the agent reads simulator state (the oracle)
    resolved: dict = field(default_factory=dict)  # the composed config, for the run folder

    @property
    def condition(self) -> Condition:
        """The run's condition (the first protocol's; the others differ only in the protocol)."""
        return self.conditions[0]

    @property
    def split(self) -> str:
        """Whose seeds it plays: the evaluation manifests, or the training split's (a condition key)."""
        return self.condition.split

    @property
    def protocols(self) -> tuple[str, ...]:
        return tuple(c.protocol for c in self.conditions)

    @property
    def summary(self) -> SummaryMode:
        """The summary its episodes read (an offline agent's: none, whatever was asked)."""
        return self.condition.summary

    @property
    def render(self) -> str:
        return self.condition.render

    @property
    def identity(self) -> dict:
        """The run's part of every outcome row (the episode's part is EpisodeSpec.identity)."""
        return {"run_id": self.run_id, "experiment": self.experiment}


def _no_secrets(node, where: str) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if _SECRET_KEY.search(str(key)) and value not in (None, "", "???"):
                raise ConfigError(
                    f"'{where}{key}' looks like a secret; configs hold no keys. Put the key in an environment "
                    "variable and name that variable in model.api_key_env"
                )
            _no_secrets(value, f"{where}{key}.")


register("model", ModelConfig)
register("harness", HarnessConfig)
register("ray", RayConfig)
register("recording", RecordingConfig)
register("plan", PlanConfig)
register("human", HumanConfig)
# Agents whose model.extra is a typed node (model.extra.<key>=, no +); every other model's extra is free-form
# (LiteLLM kwargs, an offline agent's settings): Hydra takes a new key there as it is.
TYPED_EXTRA = {"policy": PolicyConfig}
for _kind, _settings in TYPED_EXTRA.items():
    register("model", _settings, f"_{_kind}", under="extra")
register_top(
    "_run",
    {
        **{k: config_default(k) for k in CONDITION_KEYS},
        **{f: getattr(RunOptions(), f) for f in RunOptions.__dataclass_fields__},
    },
)


def model_config(raw: dict) -> tuple[ModelConfig, Model]:
    """A validated ModelConfig and the agent it makes. Keys the config leaves out take
    ModelConfig's defaults (a hand-built config need not compose model/_defaults)."""
    unknown_keys(raw, ModelConfig.__dataclass_fields__, "model.")
    try:
        model_id = check_model_id(raw.get("id"))
    except ValueError as e:
        raise ConfigError(f"'model.id': {e}") from None
    cfg = build(ModelConfig, {**raw, "id": model_id}, "model")
    try:
        agent = make_model(cfg)  # cheap: no request, no LiteLLM import; checks extra and reads a replay record
    except (ValueError, OSError) as e:
        raise ConfigError(f"'model': {e}") from None
    return cfg, agent


def _choices(cfg: dict) -> tuple[tuple[str, ...], SummaryMode, str]:
    """The run's protocols, summary mode and track, each one of the allowed words."""
    protocols = need(cfg, "protocols")
    if not isinstance(protocols, (list, tuple)) or not protocols or any(p not in PROTOCOLS for p in protocols):
        raise ConfigError(f"'protocols' must be a non-empty list of {', '.join(PROTOCOLS)}, got {protocols!r}")
    if len(set(protocols)) != len(protocols):
        raise ConfigError(f"'protocols' lists a protocol twice: {protocols}")
    summary = need(cfg, "summary")
    try:
        mode = summary_mode(summary.get("mode") if isinstance(summary, dict) else summary)
    except ValueError as e:
        raise ConfigError(f"'summary.mode': {e}") from None
    track = need(cfg, "track")
    if track not in TRACKS:
        raise ConfigError(f"'track' must be one of {', '.join(TRACKS)}, got {track!r}")
    return tuple(protocols), mode, track


def from_config(cfg: dict, run_dir: Path, log=print) -> RunConfig:
    """Validate a composed config (a plain dict: ``OmegaConf.to_container(cfg, resolve=True)``;
    one a run folder kept from an older vabench is read with its keys where they live now);
    ``log`` gets notes and warnings (tasks left out, seeds outside the manifests)."""
    _no_secrets(cfg, "")
    cfg = moved(cfg)
    run_id = str(need(cfg, "run_id"))
    if not RUN_ID.match(run_id):
        raise ConfigError(f"'run_id' = {run_id!r}: use letters, digits and _ . = , + - (not starting with a symbol)")
    model, agent = model_config(need(cfg, "model"))
    protocols, mode, track = _choices(cfg)
    notes: list[str] = []  # said once the whole config is accepted: a refusal is one line
    conds = conditions(cfg, agent, protocols, mode, reads_no_summary(model.id), notes.append)
    ray = dict(cfg.get("ray") or {})
    if ray.get("address", NO_RAY) is None:
        ray["address"] = NO_RAY
    seeds, split = seeds_of(need(cfg, "seeds")), conds[0].split  # older runs name none: eval
    every = need(cfg, "tasks") == "all"
    protos = [c.protocol for c in conds]
    tasks = playable(agent, tasks_of(cfg["tasks"], track), every, seeds, protos, notes.append, conds[0].robot, split)
    run = RunConfig(
        experiment=str(need(cfg, "experiment")),
        run_id=run_id,
        run_dir=Path(run_dir),
        model=model,
        conditions=conds,
        track=track,
        tasks=tasks,
        seeds=seeds,
        options=build(RunOptions, {k: cfg[k] for k in RunOptions.__dataclass_fields__ if k in cfg}, ""),
        recording=build(RecordingConfig, cfg.get("recording") or {}, "recording"),
        harness=build(HarnessConfig, cfg.get("harness") or {}, "harness"),
        ray=build(RayConfig, ray, "ray"),
        summary_root=summary_root(cfg, Path(run_dir), conds[0].render),
        demo_root=Path(cfg["demo_root"]) if cfg.get("demo_root") else None,
        plan=build(PlanConfig, cfg.get("plan") or {}, "plan"),
        human=build(HumanConfig, cfg.get("human") or {}, "human"),
        privileged=bool(agent.privileged),
        resolved=cfg,
    )
    for note in notes:
        log(note)
    return run
