"""Config sections declared once, as frozen dataclasses: their defaults become Hydra's
``<section>/_defaults`` nodes (so YAML states only what differs), and :func:`build` turns a
composed section into its dataclass. Types are checked here from the annotations; ranges and
cross-field rules live in each dataclass's ``__post_init__`` and are reported with the key.
"""

from __future__ import annotations

import types
import typing
from dataclasses import MISSING, fields

from hydra.core.config_store import ConfigStore

from vabench.core.checks import named
from vabench.core.errors import ConfigError, closest

REQUIRED = "???"  # Hydra's mandatory value: a key the user must set


def unknown_keys(given, allowed, where: str) -> None:
    """Refuse keys that are not fields, naming the closest allowed one."""
    unknown = sorted(set(given) - set(allowed))
    if not unknown:
        return
    hints = [f"{where}{k}" + did_you_mean(k, allowed) for k in unknown]
    raise ConfigError(f"unknown key(s) {', '.join(hints)}; allowed: {', '.join(sorted(allowed))}")


def did_you_mean(key: str, allowed) -> str:
    close = closest(key, allowed)
    return f" (did you mean '{close}'?)" if close else ""


def defaults(cls) -> dict:
    """The dataclass's defaults as a plain dict."""
    out = {}
    for f in fields(cls):
        if f.default is not MISSING:
            value = f.default
        elif f.default_factory is not MISSING:
            value = f.default_factory()
        else:
            value = REQUIRED
        out[f.name] = str(value) if isinstance(value, str) else value
    return out


def register(section: str, cls, name: str = "_defaults", under: str = "") -> None:
    """Hydra's ``<section>/<name>`` node, composed by ``conf/config.yaml`` (or a model file);
    ``under``: the defaults go in that key of the section (a policy's ``model.extra``)."""
    node = {under: defaults(cls)} if under else defaults(cls)
    ConfigStore.instance().store(group=section, name=name, node=node)


def register_top(name: str, node: dict) -> None:
    """A node of top-level keys (``_run``: the run's options and the condition's keys), composed
    by ``conf/config.yaml``'s defaults list."""
    ConfigStore.instance().store(name=name, node={k: str(v) if isinstance(v, str) else v for k, v in node.items()})


def build(cls, raw: typing.Mapping, section: str):
    """``raw`` (a composed section, keys missing take the defaults) as ``cls``; every error names
    ``section.key`` and what is allowed."""
    by_key = {f.name: f for f in fields(cls)}
    unknown_keys(raw, by_key, named(section, ""))
    hints = typing.get_type_hints(cls)
    values = {}
    for key, f in by_key.items():
        value = raw.get(key, MISSING)
        if value is MISSING or value == REQUIRED:
            if f.default is MISSING and f.default_factory is MISSING:
                raise ConfigError(f"missing config key '{named(section, key)}'")
            continue
        values[f.name] = typed(value, hints[f.name], named(section, key))
    try:
        return cls(**values)
    except ValueError as e:
        raise ConfigError(str(e)) from None


_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string", dict: "a mapping"}


def typed(value, hint, key: str):
    """``value`` if it has the annotated type (an int is a float; None only where allowed)."""
    union = isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
    options = [typing.get_origin(t) or t for t in (typing.get_args(hint) if union else (hint,))]
    if value is None and type(None) in options:
        return None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    for t in options:
        if t is bool and isinstance(value, bool) or t is str and isinstance(value, str):
            return value
        if t is int and number and isinstance(value, int):
            return value
        if t is float and number:
            return float(value)
        if t is dict and isinstance(value, typing.Mapping):
            return dict(value)
    names = " or ".join("null" if t is type(None) else _WORDS.get(t, t.__name__) for t in options)
    raise ConfigError(f"'{key}' must be {names}, got {value!r}")
