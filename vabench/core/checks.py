"""Range checks for the config dataclasses' ``__post_init__``: one wording for every bound, each
message naming the config key (``section.key``) so a launcher error points at what to change."""

from __future__ import annotations

from vabench.core.errors import ConfigError


def named(section: str, key: str) -> str:
    """A key as the config spells it: ``section.key``, or ``key`` at the top level (section "")."""
    return f"{section}.{key}" if section else key


def bound(value, key: str, lo: float, strict: bool = False):
    """``value`` if it is >= ``lo`` (> ``lo`` when ``strict``); ``key``: the config key, as spelt."""
    if value < lo or (strict and value == lo):
        raise ConfigError(f"'{key}' must be {'>' if strict else '>='} {lo:g}, got {value}")
    return value


def at_least(obj, section: str, lo: float, *keys: str, strict: bool = False) -> None:
    """Each ``obj.<key>`` (None allowed: unset) is >= ``lo`` (> ``lo`` when ``strict``)."""
    for key in keys:
        value = getattr(obj, key)
        if value is not None:
            bound(value, named(section, key), lo, strict)


def within(obj, section: str, lo: float, hi: float, *keys: str) -> None:
    """Each ``obj.<key>`` is in [``lo``, ``hi``]."""
    for key in keys:
        value = getattr(obj, key)
        if not lo <= value <= hi:
            raise ConfigError(f"'{named(section, key)}' must be in [{lo:g}, {hi:g}], got {value}")


def one_of(obj, section: str, key: str, allowed) -> None:
    value = getattr(obj, key)
    if value not in set(allowed):
        raise ConfigError(f"'{named(section, key)}' must be one of {', '.join(map(str, allowed))}, got {value!r}")
