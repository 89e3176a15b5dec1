"""Time units: the one table every reader and the CLI use to turn a unit's spelling into seconds."""

from __future__ import annotations

_SECONDS: dict[float, tuple[str, ...]] = {
    1.0: ("s", "sec", "secs", "second", "seconds"),
    1e-3: ("ms", "msec", "msecs", "millisecond", "milliseconds"),
    1e-6: ("us", "usec", "usecs", "µs", "μs", "microsecond", "microseconds"),
    1e-9: ("ns", "nsec", "nsecs", "nanosecond", "nanoseconds"),
}
TIME_UNITS: dict[str, float] = {name: scale for scale, names in _SECONDS.items() for name in names}
CANONICAL = {1.0: "sec", 1e-3: "ms", 1e-6: "usec", 1e-9: "ns"}


def seconds_per(unit: str) -> float:
    """Seconds in one ``unit`` (any usual spelling, case-insensitive); ``ValueError`` names the
    accepted ones."""
    key = str(unit).strip()
    scale = TIME_UNITS.get(key, TIME_UNITS.get(key.lower()))
    if scale is None:
        raise ValueError(f"unknown time unit {unit!r}; expected one of {accepted()}")
    return scale


def canonical(unit: str) -> str:
    """The canonical spelling (``sec``, ``ms``, ``usec``, ``ns``) of a time unit."""
    return CANONICAL[seconds_per(unit)]


def accepted() -> str:
    """The accepted spellings, grouped by unit, for messages and ``--help``."""
    return "; ".join(", ".join(names) for names in _SECONDS.values())
