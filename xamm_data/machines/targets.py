"""``machine:device``: the one type for a prediction target (a node's CPU and GPU are separate
targets)."""

from __future__ import annotations

import re
from typing import NamedTuple

import polars as pl

from xamm_data.identifiers import check_name

_TARGET = re.compile(r"^(?P<machine>[^:\s]+)(:(?P<device>cpu|gpu))?$")


class Target(NamedTuple):
    """A machine and, when it matters, its device: ``Target.parse("lassen:gpu")``, ``str(t) ==
    "lassen:gpu"``."""

    machine: str
    device: str | None = None

    @classmethod
    def parse(cls, text: str) -> Target:
        """``"lassen:gpu"`` -> ``Target("lassen", "gpu")``; a bare name has device None; anything
        else is a ValueError."""
        m = _TARGET.match(str(text).strip())
        if not m:
            raise ValueError(f"bad target {text!r}: expected MACHINE or MACHINE:cpu or MACHINE:gpu")
        return cls(check_name(m.group("machine"), where=f"target {text!r}"), m.group("device"))

    def __str__(self) -> str:
        return f"{self.machine}:{self.device}" if self.device else self.machine

    @staticmethod
    def expr(machine: str = "machine", device: str = "device") -> pl.Expr:
        """The ``machine:device`` string of each row, as a polars expression."""
        return pl.concat_str(pl.col(machine), pl.lit(":"), pl.col(device))

    @staticmethod
    def device_expr(column: str) -> pl.Expr:
        """The device part of a column of ``machine:device`` strings."""
        return pl.col(column).str.split(":").list.last()


def scenario_expr(arrow: str = "->") -> pl.Expr:
    """The scenario of each (source, target) row: ``CPU->GPU`` and so on.

    Args:
        arrow: what joins the two device kinds.

    Returns:
        A polars expression named ``scenario``.
    """
    dev = [Target.device_expr(c).str.to_uppercase() for c in ("source", "target")]
    return pl.concat_str(dev[0], pl.lit(arrow), dev[1]).alias("scenario")
