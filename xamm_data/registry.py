"""One registry pattern for every registry (timm's ``_registry.py`` is the model).

A :class:`Registry` maps names to objects: fill it with the :meth:`Registry.register` decorator (or
:meth:`Registry.add`), list names with shell patterns (``list("xeon*")``), and look one up with
:meth:`Registry.get`, whose failure lists the valid names and proposes the closest. Machines,
embedders, regressors and ingest formats each keep one.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from xamm_data.errors import XammError

T = TypeVar("T")


class UnknownNameError(XammError, KeyError):
    """A name no registry entry has; the message lists the known names and the closest one."""

    def __init__(self, kind: str, name: str, known: list[str], cutoff: float = 0.5):
        self.kind, self.name, self.known = kind, name, known
        # a name that is not text (None, a number) resembles no name: no suggestion, say so
        text = isinstance(name, str)
        close = difflib.get_close_matches(name.lower(), known, n=1, cutoff=cutoff) if text else []
        self.suggestion = close[0] if close else None
        hint = f" Did you mean {close[0]!r}?" if close else ("" if text else " Expected text.")
        super().__init__(f"unknown {kind} {name!r}.{hint} Known: {', '.join(known)}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0]


class Registry(Generic[T]):
    """Named entries of one ``kind`` (``"machine"``, ``"embedder"``, ...)."""

    def __init__(
        self, kind: str, error: Callable[[str, str, list[str]], Exception] = UnknownNameError
    ):
        self.kind, self._error = kind, error
        self._items: dict[str, T] = {}
        self._aliases: dict[str, str] = {}

    def add(self, name: str, obj: T, aliases: tuple[str, ...] = ()) -> T:
        """Register ``obj`` under ``name`` (and case-insensitive ``aliases``); a name taken twice is
        an error."""
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        taken = [a for a in (name, *aliases) if self._aliases.get(a.lower(), name) != name]
        if taken:
            raise ValueError(f"{self.kind} {name!r}: {taken[0]!r} is already a name of "
                             f"{self._aliases[taken[0].lower()]!r}")  # fmt: skip
        self._items[name] = obj
        for a in (name, *aliases):
            self._aliases[a.lower()] = name
        return obj

    def add_alias(self, name: str, alias: str) -> None:
        """Another name for the registered ``name``; one that names another entry is refused."""
        owner = self._aliases.get(alias.lower(), name)
        if owner != name or name not in self._items:
            raise ValueError(f"{self.kind} alias {alias!r} is already a name of {owner!r}")
        self._aliases[alias.lower()] = name

    def replace(self, name: str, obj: T) -> None:
        """Put ``obj`` in place of the registered ``name``'s entry (its names stay)."""
        if name not in self._items:
            raise self._error(self.kind, name, self.list())
        self._items[name] = obj

    def register(self, name: str, **extra) -> Callable[[T], T]:
        """Decorator: register the decorated object under ``name``; ``extra`` is kept as
        ``.registry_info``."""

        def deco(obj: T) -> T:
            if extra:
                obj.registry_info = extra  # type: ignore[attr-defined]
            return self.add(name, obj)

        return deco

    def canonical(self, name: str) -> str | None:
        """The registered name for a name or alias (case-insensitive), else None."""
        return name if name in self._items else self._aliases.get(str(name).lower())

    def get(self, name: str) -> T:
        """The entry for ``name`` (or an alias); :class:`UnknownNameError` lists the valid names."""
        key = self.canonical(name)
        if key is None:
            raise self._error(self.kind, name, self.list())
        return self._items[key]

    def in_order(self) -> list[str]:
        """Registered names in the order they were registered."""
        return list(self._items)

    def remove(self, name: str) -> None:
        """Unregister ``name`` and its aliases (a plug-in withdrawn, a test's own entry)."""
        key = self.canonical(name)
        if key is None:
            raise self._error(self.kind, name, self.list())
        del self._items[key]
        self._aliases = {a: n for a, n in self._aliases.items() if n != key}

    def list(self, pattern: str = "*") -> list[str]:
        """Registered names matching a shell-style ``pattern``, sorted."""
        return sorted(n for n in self._items if fnmatch.fnmatch(n, pattern))

    def __contains__(self, name: str) -> bool:
        return self.canonical(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.list())

    def __len__(self) -> int:
        return len(self._items)
