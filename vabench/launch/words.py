"""The words users type on the command line, checked before Hydra: every mistake is one line naming
it, the choices and the closest one, never Hydra's traceback. ``plan=true`` is ``plan.enabled``;
the condition's keys (``intervention=object_poses``, ``perturbation=blur:2``, ``robot=ur5``,
``render=paper``, ``observation=explained``) are plain top-level keys; a group option
(``model=``, ``protocol=``, ``summary=``, ``track=``, ``+experiment=``, ``+study=``) must name a
file of its group. ``--help`` lists all of them."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from vabench.config.choices import CONDITION_KEYS, MOVED, condition_keys
from vabench.errors import ConfigError, UnknownName, closest

CONF = Path(__file__).resolve().parents[2] / "conf"
GROUPS = tuple(sorted(p.name for p in CONF.iterdir() if p.is_dir()))
ADDED = ("experiment", "study")  # groups named with +: no default in the defaults list


def canonical(args: list[str]) -> list[str]:
    """``args`` with the shorthands users type spelt as the config has them (``plan=true`` is
    ``plan.enabled=true``)."""
    return [f"plan.enabled={a.partition('=')[2]}" if a.partition("=")[0] == "plan" else a for a in args]


def _options(group: str) -> list[str]:
    return sorted(f.stem for f in (CONF / group).glob("*.yaml"))


def wrong_word(args: list[str]) -> str | None:
    """One line for the first group option or condition value no registry holds, or None."""
    for arg in args:
        key, eq, value = arg.partition("=")
        name = key.lstrip("+")
        if not eq or arg.startswith("-") or "/" in name:
            continue
        values = [v.strip() for v in value.split(",")]  # a sweep names several
        if name in GROUPS:
            bad = next((v for v in values if v not in _options(name)), None)
            if bad is not None:
                return str(UnknownName(name, bad, _options(name), f"{key}=NAME"))
        elif name in CONDITION_KEYS:
            try:
                for v in values:
                    condition_keys({name: v})
            except ConfigError as e:
                return str(e)
    return None


def composed(overrides: list[str] | None = None) -> dict:
    """The composed config (unresolved) with these group choices."""
    from hydra import compose, initialize_config_dir

    import vabench.config.run  # noqa: F401 (registers the dataclasses' nodes)

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return OmegaConf.to_container(compose(config_name="config", overrides=overrides or []), resolve=False)


def misspelt(args: list[str]) -> str | None:
    """One line for the first ``key=value`` whose key the composed defaults do not have, with the
    closest key (Hydra itself only says "not in struct"); ``+key``, ``~key``, ``hydra.*``, group
    paths (``hydra/launcher=joblib``) and the free-form ``model.extra.*`` are left to Hydra."""
    keys = [a.split("=", 1)[0] for a in args if "=" in a and not a.startswith(("-", "+", "~"))]
    keys = [k for k in keys if "/" not in k and not k.startswith(("hydra.", "model.extra.")) and k not in GROUPS]
    if not keys:
        return None
    chosen = [a for a in args if a.split("=", 1)[0].lstrip("+") in GROUPS and "," not in a]
    node = composed(chosen)  # the groups chosen: summary=shared has keys summary=none lacks
    for key in keys:
        if key in MOVED:
            return f"'{key}' is now '{MOVED[key]}': {MOVED[key]}={_value(args, key)}"
        where = {**dict.fromkeys(GROUPS), **node}  # a group is a word too (protocol=, model=)
        for depth, part in enumerate(key.split(".")):
            if not isinstance(where, dict):
                break
            if part not in where:
                return _unknown_key(key, depth, where)
            where = where[part]
    return None


def _value(args: list[str], key: str) -> str:
    return next(a.partition("=")[2] for a in args if a.partition("=")[0] == key)


def _unknown_key(key: str, depth: int, where: dict) -> str:
    part = key.split(".")[depth]
    close = closest(part, where)
    if close:
        return f"unknown config key '{key}'; did you mean '{'.'.join(key.split('.')[:depth] + [close])}'?"
    return f"unknown config key '{key}'; known here: {', '.join(map(str, where))} (a new key: +{key}=...)"
