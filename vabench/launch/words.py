"""The words users type on the command line, checked before Hydra: every mistake is one line naming
it, the choices and the closest one, never Hydra's traceback. ``plan=true`` is ``plan.enabled``;
the condition's keys (the departure fields of vabench.core.condition.Condition: ``perturbation=blur:2``,
``budget_scale=0.5``, ...) are plain top-level keys; a group option
(``model=``, ``protocol=``, ``summary=``, ``track=``, ``+experiment=``, ``+study=``) must name a
file of its group. ``--help`` lists all of them."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from vabench.core.errors import ConfigError, UnknownName, closest
from vabench.run.config.choices import CONDITION_KEYS, MOVED, condition_keys
from vabench.run.config.run import TYPED_EXTRA

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

    import vabench.run.config.run  # noqa: F401 (registers the dataclasses' nodes)

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return OmegaConf.to_container(compose(config_name="config", overrides=overrides or []), resolve=False)


def misspelt(args: list[str]) -> str | None:
    """One line for the first ``key=value`` whose key the composed defaults do not have, with the
    closest key (Hydra itself only says "not in struct"), for a key that moved (:data:`MOVED`,
    ``+`` or not), or for a ``+key`` the config declares (a policy's ``model.extra.*``: no ``+``);
    ``~key``, ``hydra.*`` and group paths (``hydra/launcher=joblib``) are left to Hydra."""
    given = {a.split("=", 1)[0].lstrip("+"): a.partition("=")[2] for a in args if "=" in a and not a.startswith("-")}
    old = next((k for k in given if k in MOVED), None)
    if old:
        return f"'{old}' is now '{MOVED[old]}': {MOVED[old]}={given[old]}"
    words = [a.split("=", 1)[0] for a in args if "=" in a and not a.startswith(("-", "~", "++"))]
    words = [
        k for k in words if "/" not in k and not k.startswith(("hydra.", "+hydra.")) and k.lstrip("+") not in GROUPS
    ]
    if not words:
        return None
    chosen = [a for a in args if a.split("=", 1)[0].lstrip("+") in GROUPS and "," not in a]
    node = {**dict.fromkeys(GROUPS), **composed(chosen)}  # the groups chosen: summary=shared has keys none lacks
    free_extra = (node.get("model") or {}).get("id") not in TYPED_EXTRA  # model.extra.*: LiteLLM kwargs, free-form
    for word in words:  # a group is a word too (protocol=, model=)
        key = word.lstrip("+")
        if free_extra and key.startswith("model.extra."):
            continue
        where, depth = _deepest(node, key)
        if word.startswith("+") and depth is None:
            return f"'{key}' is a declared key: {key}={given[key]} (no +)"
        if not word.startswith("+") and depth is not None:
            return _unknown_key(key, depth, where)
    return None


def _deepest(node: dict, key: str) -> tuple:
    """(the node, the depth) where ``key`` leaves the config, or (its value, None): it is there."""
    where = node
    for depth, part in enumerate(key.split(".")):
        if not isinstance(where, dict):
            return where, None
        if part not in where:
            return where, depth
        where = where[part]
    return where, None


def _unknown_key(key: str, depth: int, where: dict) -> str:
    part = key.split(".")[depth]
    close = closest(part, where)
    if close:
        return f"unknown config key '{key}'; did you mean '{'.'.join(key.split('.')[:depth] + [close])}'?"
    return f"unknown config key '{key}'; known here: {', '.join(map(str, where))} (a new key: +{key}=...)"
