"""One registry pattern for every named kind of thing (tasks, model kinds, robots, render presets,
perturbation kinds, interventions, protocols, tracks): a read-only mapping filled at import, that
refuses a name registered twice and answers an unknown name with :class:`~vabench.core.errors.UnknownName`
(a ``ValueError``: the choices and the closest one). This module imports nothing else from vabench."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

from vabench.core.errors import UnknownName

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Names of one kind (``what``, as a message says it: "task", "robot") and their values;
    ``how`` tells the user how to name one (``robot=NAME``)."""

    def __init__(self, what: str, items: Iterable[tuple[str, T]] = (), how: str = ""):
        self.what, self.how = what, how
        self._items: dict[str, T] = {}
        for name, value in items:
            self.add(name, value)

    def add(self, name: str, value: T) -> T:
        """File ``value`` under ``name``; the same name twice (with another value) is a mistake."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"a {self.what} needs a non-empty name, got {name!r}")
        if name in self._items and self._items[name] is not value:
            raise ValueError(f"{self.what} {name!r} is registered twice")
        self._items[str(name)] = value
        return value

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of :meth:`add`."""
        return lambda value: self.add(name, value)

    def __getitem__(self, name: str) -> T:
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise UnknownName(self.what, name, self._items, self.how) from None

    def check(self, name: object) -> str:
        """``name`` itself when registered (as a plain str), else :class:`UnknownName`."""
        self[name]  # noqa: B018 (the lookup is the check)
        return str(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._items

    def get(self, name, default=None):
        return self._items.get(name, default) if isinstance(name, str) else default

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def remove(self, name: str) -> None:
        """Take ``name`` out again: for a test that registers a probe for the length of a block."""
        self._items.pop(name, None)

    def copy(self) -> Registry[T]:
        """A registry with the same entries (a test registers into it, not into the real one)."""
        return Registry(self.what, self._items.items(), self.how)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}: {', '.join(self._items)})"
