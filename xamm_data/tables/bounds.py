"""Physical plausibility bounds shared by every reader: what ``xamm-ingest`` stores and what
``xamm predict`` reads from a file are held to the same limits, so a value one refuses the other
never predicts from.

The CLI sets them with ``--bound NAME=VALUE`` (``xamm-ingest``); :data:`DEFAULT_BOUNDS` is what the
region contract (:mod:`xamm_data.tables.regions`) and predict's input checks use.
"""

from __future__ import annotations

import dataclasses

from xamm_data.errors import BoundsError

__all__ = ["DEFAULT_BOUNDS", "Bounds"]


def _bound(default: float, description: str) -> float:
    return dataclasses.field(default=default, metadata={"description": description})


@dataclasses.dataclass(frozen=True)
class Bounds:
    """Physical plausibility bounds; a record outside them is rejected naming the rule.

    Every bound is a number above 0 and each lowest plausible value is below its highest, checked
    when the bounds are built (a frozen dataclass: every ingest holds them, and the check is two
    comparisons a bound, with no validation library to import)."""

    min_time_per_rep_s: float = _bound(1e-10, "shortest plausible time of one repetition (s)")
    max_time_per_rep_s: float = _bound(1e5, "longest plausible time of one repetition (s)")
    max_bytes_per_rep: float = _bound(1e16, "most bytes one repetition can move")
    max_flops_per_rep: float = _bound(1e16, "most flops one repetition can do")
    max_problem_size: float = _bound(1e12, "largest plausible problem size")
    min_runtime_s: float = _bound(1e-9, "shortest plausible application runtime (s)")
    max_runtime_s: float = _bound(1e7, "longest plausible application runtime (s), about 116 days")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise BoundsError(f.name, f"Input should be a number, not {v!r}")
            if not v > 0:  # nan is not above 0 either
                raise BoundsError(f.name, "Input should be greater than 0")
            object.__setattr__(self, f.name, float(v))
        # a lowest plausible value at or above the highest: every record would be dropped
        for low, high in (
            ("min_time_per_rep_s", "max_time_per_rep_s"),
            ("min_runtime_s", "max_runtime_s"),
        ):
            if getattr(self, low) >= getattr(self, high):
                raise BoundsError(
                    "",
                    f"{low} ({getattr(self, low):g}) is not below {high} "
                    f"({getattr(self, high):g}): nothing would be plausible",
                )

    @classmethod
    def names(cls) -> list[str]:
        """The bounds' names.

        Returns:
            Each bound's name, in the order the class declares them (what ``--bound`` accepts).
        """
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_items(cls, items: list[str] | None) -> Bounds:
        """Bounds from ``NAME=VALUE`` strings (the CLI's ``--bound``).

        Args:
            items: the strings (None: the defaults).

        Returns:
            The bounds.

        Raises:
            ValueError: a malformed item or an unknown name; the message names the valid ones.
        """
        values: dict[str, float] = {}
        for item in items or []:
            name, sep, value = item.partition("=")
            name = name.strip()
            if not sep or name not in cls.names():
                raise ValueError(
                    f"--bound {item!r}: expected NAME=VALUE with NAME one of "
                    f"{', '.join(cls.names())}"
                )
            if name in values:  # the last would win unseen
                raise ValueError(f"--bound {item!r}: {name} is given twice")
            try:
                values[name] = float(value)
            except ValueError:
                raise ValueError(f"--bound {item!r}: {value!r} is not a number") from None
        try:
            return cls(**values)
        except BoundsError as e:
            where = f" {e.name}={values[e.name]!r}" if e.name in values else ""
            raise ValueError(f"--bound{where}: {e.problem}") from None


DEFAULT_BOUNDS = Bounds()  # every default
