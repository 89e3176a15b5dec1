"""The registry of ingest formats: what each one finds, reads and finishes (Thicket's
``from_<format>``).

Each format module registers an :class:`IngestFormat`; :mod:`xamm_ingest.dispatch` drives them all
the same way (discovery -> per-source read -> per-source checks -> one commit).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from xamm_data.registry import Registry
from xamm_data.schema import TableSchema
from xamm_ingest.readers.base import ReadResult
from xamm_ingest.sources import Plan, Task


@dataclass(frozen=True)
class IngestFormat:
    """One input format.

    ``plan(paths, opts)`` finds the sources; ``read(task, opts)`` reads one into a
    :class:`ReadResult`; ``finish(frame, report, opts)`` does what needs every source at once
    (merging, features).
    """

    name: str
    table: TableSchema
    plan: Callable[[list[Path], dict], Plan]
    read: Callable[[Task, dict], ReadResult]
    finish: Callable[[pl.DataFrame, object, dict], pl.DataFrame]
    summary: str


FORMATS: Registry[IngestFormat] = Registry("format")


def register(fmt: IngestFormat) -> IngestFormat:
    """Add a format to :data:`FORMATS` under its name."""
    return FORMATS.add(fmt.name, fmt)


def get_format(name: str) -> IngestFormat:
    """The format called ``name``; an :class:`~xamm_data.registry.UnknownNameError` lists the valid
    ones."""
    return FORMATS.get(name)
