"""A table of regions (``.csv`` or ``.parquet`` with a ``region`` column) that ``xamm predict``
reads (:mod:`xamm_ingest.readers.table_regions`); nothing is stored from it."""

from __future__ import annotations

from pathlib import Path

from xamm_data.tables.regions import RegionProfile
from xamm_ingest.format import Format
from xamm_ingest.readers.table_regions import read_table_regions
from xamm_ingest.sniff import table_columns


def guess(path: Path) -> bool:
    """A ``.csv``/``.parquet`` file with a ``region`` column."""
    return "region" in (table_columns(path) or [])


def read_regions(path: Path, opts: dict) -> RegionProfile:
    """The table's regions."""
    return read_table_regions(Path(path))


FORMAT = Format(
    name="region-table",
    summary=".csv/.parquet table of regions (a region column; exclusive_s or time_s, ...)",
    guess=guess,
    read_regions=read_regions,
)
