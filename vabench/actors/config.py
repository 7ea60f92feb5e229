"""The validated run configuration: everything is checked before any work starts, and every
error names the key, the value and what is allowed.

Hydra composes the YAML under ``conf/``; :func:`from_config` turns it into a frozen
:class:`RunConfig`. Keys never live in a config: a model names the environment variable that
holds its key (``api_key_env``), so the resolved config a run folder keeps has no secrets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from vabench.agents.harness import HarnessConfig
from vabench.agents.models import ModelConfig
from vabench.agents.summaries import parse_summary_mode
from vabench.envs import CAMERA_PRESETS, TASKS

PROTOCOLS = ("active", "passive")
TRACKS = ("base", "transfer", "long_horizon")
OFFLINE_MODELS = ("oracle", "random", "replay")
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=,+-]*$")
_SECRET_KEY = re.compile(r"(api_?key|token|secret|password)$", re.IGNORECASE)


class ConfigError(ValueError):
    """A configuration mistake, found before any episode runs."""


@dataclass(frozen=True)
class RayConfig:
    address: str = "local"
    num_cpus: int | None = None
    env_actors: int = 4
    actor_cpus: float = 0.5
    actor_gpus: float = 0.0


@dataclass(frozen=True)
class RunConfig:
    experiment: str
    run_id: str
    run_dir: Path
    model: ModelConfig
    max_concurrency: int
    protocols: tuple[str, ...]
    summary: str  # own | none | shared:<model>
    track: str
    tasks: tuple[str, ...]
    seeds: int | tuple[int, ...] | None  # None: every verified seed; N: the first N; tuple: these
    runs: int
    max_attempts: int
    episode_timeout_s: float
    camera: str
    harness: HarnessConfig
    ray: RayConfig
    summary_root: Path
    resolved: dict = field(default_factory=dict)  # the composed config, for the run folder


def _get(cfg: dict, key: str, where: str = ""):
    if key not in cfg:
        raise ConfigError(f"missing config key '{where}{key}'")
    return cfg[key]


def _int(value, key: str, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"'{key}' must be an integer >= {lo}, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise ConfigError(f"'{key}' must be {bound}, got {value}")
    return value


def _number(value, key: str, lo: float, inclusive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"'{key}' must be a number, got {value!r}")
    if value < lo or (not inclusive and value == lo):
        raise ConfigError(f"'{key}' must be {'>=' if inclusive else '>'} {lo}, got {value}")
    return float(value)


def _no_secrets(node, where: str) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if _SECRET_KEY.search(str(key)) and value not in (None, "", "???"):
                raise ConfigError(
                    f"'{where}{key}' looks like a secret; configs hold no keys. Put the key in an environment "
                    "variable and name that variable in model.api_key_env"
                )
            _no_secrets(value, f"{where}{key}.")


def _model(raw: dict) -> tuple[ModelConfig, int]:
    known = {
        "id",
        "name",
        "api_base",
        "api_key_env",
        "timeout_s",
        "max_retries",
        "backoff_initial_s",
        "backoff_max_s",
        "max_tokens",
        "temperature",
        "max_concurrency",
        "extra",
    }
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"unknown key(s) model.{', model.'.join(unknown)}; allowed: {', '.join(sorted(known))}")
    model_id = raw.get("id")
    if not isinstance(model_id, str) or not model_id.strip():
        raise ConfigError(f"'model.id' must be a model id ({', '.join(OFFLINE_MODELS)} or a LiteLLM string)")
    if model_id not in OFFLINE_MODELS and "/" not in model_id:
        raise ConfigError(
            f"'model.id' = {model_id!r}: use an offline agent ({', '.join(OFFLINE_MODELS)}) or a LiteLLM provider "
            "string such as openai/<name>, anthropic/<name>, gemini/<name>, hosted_vllm/<name>, ollama_chat/<name>"
        )
    extra = dict(raw.get("extra") or {})
    if model_id == "replay" and not extra.get("record"):
        raise ConfigError("'model.extra.record' must name the events.jsonl to replay when model.id=replay")
    cfg = ModelConfig(
        model=model_id,
        name=raw.get("name"),
        api_base=raw.get("api_base"),
        api_key_env=raw.get("api_key_env"),
        timeout_s=_number(raw.get("timeout_s", 120), "model.timeout_s", 0, inclusive=False),
        max_retries=_int(raw.get("max_retries", 6), "model.max_retries", 0),
        backoff_initial_s=_number(raw.get("backoff_initial_s", 1.0), "model.backoff_initial_s", 0),
        backoff_max_s=_number(raw.get("backoff_max_s", 60.0), "model.backoff_max_s", 0),
        max_tokens=_int(raw.get("max_tokens", 2048), "model.max_tokens", 1),
        temperature=raw.get("temperature"),
        extra=extra,
    )
    return cfg, _int(raw.get("max_concurrency", 8), "model.max_concurrency", 1)


def _tasks(raw, track: str, track_tasks: list[str]) -> tuple[str, ...]:
    names = list(track_tasks) if raw == "all" else raw
    if not isinstance(names, (list, tuple)) or not names or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"'tasks' must be 'all' or a non-empty list of task names, got {raw!r}")
    unknown = [n for n in names if n not in TASKS]
    if unknown:
        known = ", ".join(sorted(TASKS))
        raise ConfigError(f"'tasks': {', '.join(unknown)} not implemented yet (track {track}); known tasks: {known}")
    if len(set(names)) != len(names):
        raise ConfigError(f"'tasks' lists a task twice: {names}")
    return tuple(names)


def _seeds(raw) -> int | tuple[int, ...] | None:
    if raw == "all" or raw is None:
        return None
    if isinstance(raw, int) and not isinstance(raw, bool):
        return _int(raw, "seeds", 1)
    if isinstance(raw, (list, tuple)) and raw:
        return tuple(_int(s, "seeds[]", 0) for s in raw)
    raise ConfigError(f"'seeds' must be 'all', a positive count, or a list of non-negative seeds, got {raw!r}")


def from_config(cfg: dict, run_dir: Path) -> RunConfig:
    """Validate a composed config (a plain dict: ``OmegaConf.to_container(cfg, resolve=True)``)."""
    _no_secrets(cfg, "")
    run_id = str(_get(cfg, "run_id"))
    if not RUN_ID.match(run_id):
        raise ConfigError(f"'run_id' = {run_id!r}: use letters, digits and _ . = , + - (not starting with a symbol)")
    model, concurrency = _model(_get(cfg, "model"))
    protocols = _get(cfg, "protocols")
    if not isinstance(protocols, (list, tuple)) or not protocols or any(p not in PROTOCOLS for p in protocols):
        raise ConfigError(f"'protocols' must be a non-empty list of {', '.join(PROTOCOLS)}, got {protocols!r}")
    summary = _get(cfg, "summary")
    mode = summary.get("mode") if isinstance(summary, dict) else summary
    try:
        parse_summary_mode(mode)
    except ValueError as e:
        raise ConfigError(f"'summary.mode': {e}") from None
    track = _get(cfg, "track")
    if track not in TRACKS:
        raise ConfigError(f"'track' must be one of {', '.join(TRACKS)}, got {track!r}")
    camera = _get(cfg, "render").get("camera")
    if camera not in CAMERA_PRESETS:
        raise ConfigError(f"'render.camera' must be one of {', '.join(sorted(CAMERA_PRESETS))}, got {camera!r}")
    ray = dict(_get(cfg, "ray"))
    unknown = sorted(set(ray) - set(RayConfig.__dataclass_fields__))
    if unknown:
        raise ConfigError(
            f"unknown key(s) ray.{', ray.'.join(unknown)}; allowed: {', '.join(RayConfig.__dataclass_fields__)}"
        )
    ray_cfg = RayConfig(
        address=str(ray.get("address", "local")),
        num_cpus=None if ray.get("num_cpus") is None else _int(ray["num_cpus"], "ray.num_cpus", 1),
        env_actors=_int(ray.get("env_actors", 4), "ray.env_actors", 1),
        actor_cpus=_number(ray.get("actor_cpus", 0.5), "ray.actor_cpus", 0, inclusive=False),
        actor_gpus=_number(ray.get("actor_gpus", 0.0), "ray.actor_gpus", 0),
    )
    try:
        harness = HarnessConfig(**_get(cfg, "harness"))
    except TypeError as e:
        raise ConfigError(f"'harness': {e}; allowed keys: {', '.join(HarnessConfig.__dataclass_fields__)}") from None
    except ValueError as e:
        raise ConfigError(str(e)) from None
    root = cfg.get("summary_root")
    return RunConfig(
        experiment=str(_get(cfg, "experiment")),
        run_id=run_id,
        run_dir=Path(run_dir),
        model=model,
        max_concurrency=concurrency,
        protocols=tuple(protocols),
        summary=mode,
        track=track,
        tasks=_tasks(_get(cfg, "tasks"), track, _get(cfg, "track_tasks")),
        seeds=_seeds(_get(cfg, "seeds")),
        runs=_int(_get(cfg, "runs"), "runs", 1),
        max_attempts=_int(_get(cfg, "max_attempts"), "max_attempts", 1),
        episode_timeout_s=_number(_get(cfg, "episode_timeout_s"), "episode_timeout_s", 0, inclusive=False),
        camera=camera,
        harness=harness,
        ray=ray_cfg,
        summary_root=Path(root) if root else Path(run_dir) / "_summaries",
        resolved=cfg,
    )
