"""A table of regions (``.csv`` or ``.parquet`` with a ``region`` column) that ``xamm predict``
reads (:mod:`xamm_ingest.readers.table_regions`); nothing is stored from it."""

from __future__ import annotations

from pathlib import Path

from xamm_data.tables.regions import RegionProfile
from xamm_ingest.readers.table_regions import read_table_regions


def read_regions(path: Path, opts: dict) -> RegionProfile:
    """The table's regions."""
    return read_table_regions(Path(path))
