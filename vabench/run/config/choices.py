"""The checks of a composed config's choices, each naming the key, what is allowed and the
closest allowed value: tasks and seeds, what an agent can play, the condition's keys, and where
summaries are kept. :func:`vabench.run.config.run.from_config` calls them in order."""

from __future__ import annotations

import copy
from pathlib import Path

from vabench.core.boundary import Participant
from vabench.core.checks import bound
from vabench.core.condition import KEYS, Condition, check, config_default, default, rule
from vabench.core.errors import ConfigError, UnknownName
from vabench.core.interventions import MANIFESTS, check_composes
from vabench.core.registry import Registry
from vabench.core.vocab import ControlMode, Intervention, ObservationProfile, Split, SummaryKind, SummaryMode
from vabench.results.layout import SUMMARIES
from vabench.run.config.sections import typed

CONDITION_KEYS = KEYS  # top-level keys, declared as Condition's fields (vabench.core.condition.key)
PROFILES = Registry("observation profile", ((p, p) for p in ObservationProfile), "observation=NAME")
SPLITS = Registry("split", ((s, s) for s in Split), "split=NAME")
# Keys of configs written before they moved (a run folder's run info), and where they live now.
MOVED = {
    "model.extra.budget_scale": "budget_scale",
    "harness.observation": "observation",
    "harness.intervention": "intervention",
    "render.preset": "render",
    "robot.name": "robot",
    "perturbation.name": "perturbation",
    "model.model": "model.id",  # ModelConfig.model, renamed id
}


def need(cfg: dict, key: str, where: str = ""):
    """``cfg[key]``, or a ConfigError naming the missing key."""
    if key not in cfg:
        raise ConfigError(f"missing config key '{where}{key}'")
    return cfg[key]


def moved(cfg: dict) -> dict:
    """``cfg`` with the keys of older configs (:data:`MOVED`) where they live now (verify reads a
    run folder's run info); a config of today comes back as it is. A top-level section left
    empty, or named as the key it became, goes."""
    out = copy.deepcopy(cfg)
    for old, new in MOVED.items():
        *path, key = old.split(".")
        node = out
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and key in node:
            value = node.pop(key)
            if len(path) == 1 and (path[0] == new or not node):
                del out[path[0]]
            *parent, leaf = new.split(".")  # "model.id": a key of a section
            (out.setdefault(parent[0], {}) if parent else out)[leaf] = value
    return out


def condition_keys(cfg: dict, agent: Participant | None = None) -> dict:
    """The condition's keys, each checked (:func:`vabench.core.condition.check`, its registry) and as its
    type; a key left null takes the agent's own default where the key allows one (a policy's
    ``budget_scale``), else the paper's value."""
    out = {}
    for k in CONDITION_KEYS:
        value = cfg.get(k, config_default(k))
        if value is None:
            value = getattr(agent, k, None) if rule(k, "agent") else None
            value = default(k) if value is None else value
        try:
            out[k] = check(k, value)
        except ValueError as e:  # UnknownName, a bad level, not a number: one line with the choices
            raise ConfigError(f"'{k}': {e}") from None
    if out["control"] == ControlMode.EE_DELTA and cfg.get("budget_scale") is None:  # its budget counts control steps
        out["budget_scale"] = default("budget_scale")
    return out


def conditions(cfg: dict, agent: Participant, protocols: tuple[str, ...], summary: SummaryMode, offline: bool, log):
    """One :class:`Condition` per protocol. ``intervention=expert_summary`` is the summary source
    ``expert``; a view intervention keeps the protocols it changes, and an offline agent reads no
    summary: ``log`` gets a line for each (the caller says them once the config is accepted)."""
    keys = condition_keys(cfg, agent)
    from vabench.envs.control import refusal

    why = refusal(agent, keys["control"])
    if why:
        raise ConfigError(why)
    if keys["intervention"] == Intervention.EXPERT_SUMMARY:
        keys["intervention"], summary = Intervention.NONE, SummaryMode(SummaryKind.EXPERT)
    kept = tuple(p for p in protocols if p in MANIFESTS[keys["intervention"]].protocols)
    if kept and kept != protocols:
        log(f"intervention={keys['intervention']} changes the {'/'.join(kept)} observation only: protocol {kept[0]}")
        protocols = kept
    try:
        check_composes(keys["intervention"], protocols, str(summary), offline)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if offline and summary.kind != SummaryKind.NONE:
        log(f"{agent.name} is an offline agent and reads no summary: summary {summary} -> none")
        summary = SummaryMode(SummaryKind.NONE)
    return tuple(Condition(agent.name, p, str(summary), **keys) for p in protocols)


def tasks_of(raw, track: str) -> tuple[str, ...]:
    """``all`` = every registered task of the track; a list must name tasks of that track."""
    from vabench.envs.tasks import TASKS, tasks_of_track

    names = list(tasks_of_track(track)) if raw == "all" else raw
    if not isinstance(names, (list, tuple)) or not names or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"'tasks' must be 'all' or a non-empty list of task names, got {raw!r}")
    unknown = [n for n in names if n not in TASKS]
    if unknown:
        raise ConfigError(f"'tasks': {UnknownName('task', unknown[0], TASKS, 'python -m vabench.tasks lists them')}")
    other = [f"{n} (track {TASKS[n].track})" for n in names if TASKS[n].track != track]
    if other:
        raise ConfigError(
            f"'tasks': {', '.join(other)} not on track {track}; set track= to the task's track, or list tasks "
            f"of track {track}: {', '.join(tasks_of_track(track))}"
        )
    if len(set(names)) != len(names):
        raise ConfigError(f"'tasks' lists a task twice: {names}")
    return tuple(names)


def playable(
    agent: Participant, tasks: tuple[str, ...], every: bool, seeds, protocols, log, robot: str, split: str = Split.EVAL
):
    """The tasks the agent can play: with ``tasks: all``, those it cannot (a two-arm task for a
    one-arm agent) are left out with one line; listed ones are refused, naming why. Explicit seeds
    outside a task's manifest are played with a warning: their scenes were never screened; under
    ``split=train`` an evaluation or demonstration seed is refused."""
    from vabench.envs.seeds import MANIFEST_DIR, manifest_path, split_seeds
    from vabench.envs.tasks import task_class

    keep = []
    for task in tasks:
        try:
            verified = split_seeds(task, robot, split)
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
        if split == Split.TRAIN:
            _no_eval_seeds(task, chosen)
        arms = tuple(task_class(task).arms)
        refused = [w for s in chosen for p in protocols if (w := agent.refuses(task, arms, s, p))]
        if refused and every and len(refused) == len(chosen) * len(protocols):
            log(f"tasks=all: {task} left out ({refused[0]})")
            continue
        if refused:
            raise ConfigError(f"'model' = {agent.name}: {refused[0]}")
        outside = sorted(set(chosen) - set(verified))
        if outside:
            where = manifest_path(task, robot, split).relative_to(MANIFEST_DIR)
            log(
                f"warning: seeds {', '.join(map(str, outside))} of {task} are not among its {len(verified)} verified "
                f"seeds (vabench/envs/seed_manifests/{where}): their scenes were never screened; rows of them "
                "do not compare with the paper's"
            )
        keep.append(task)
    if not keep:
        raise ConfigError(f"'tasks': {agent.name} can play none of the tasks of this track")
    return tuple(keep)


def _no_eval_seeds(task: str, chosen: list[int]) -> None:
    from vabench.envs.seeds import held_out

    held = sorted(set(chosen) & held_out(task))
    if held:
        raise ConfigError(
            f"'seeds': {held[0]} of {task} is an evaluation or demonstration seed (every robot's manifests count); "
            "not with split=train"
        )


def seeds_of(raw) -> int | tuple[int, ...] | None:
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


def summary_root(cfg: dict, run_dir: Path, render: str) -> Path:
    """The summary store, by default ``<results_dir>/_summaries/<render preset>``: one store per
    results folder, so a passive, transfer or long-horizon run (and every job of a multirun) reuses
    the summaries a base run learned (paper 5.1: "its own demonstration summary") instead of
    learning new ones; one per render preset, because a summary is learned from demos recorded at
    the preset's size (``summary_root=<path>`` names another results folder's ``_summaries``).
    Absolute: workers may run in another working directory."""
    if cfg.get("summary_root"):
        return (Path(cfg["summary_root"]) / render).absolute()
    if (run_dir / SUMMARIES).is_dir():  # a run begun before stores were shared: it keeps its own summaries
        return (run_dir / SUMMARIES).absolute()
    return (Path(str(need(cfg, "results_dir"))) / SUMMARIES / render).absolute()
