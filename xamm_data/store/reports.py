"""What a write to the store did, and the pieces of it both ways of writing share
(:meth:`Store.write <xamm_data.store.store.Store.write>`, which merges, and :meth:`Store.append
<xamm_data.store.store.Store.append>`, which adds)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from xamm_data._version import __version__
from xamm_data.store.delta_log import log_prev
from xamm_data.store.locations import TableLocation
from xamm_data.tables.schema import TableSchema

__all__ = ["PartitionReport", "WriteReport", "commit_record", "config_key"]


@dataclass
class PartitionReport:
    """What one write did to one machine partition."""

    machine: str
    rows_before: int
    rows_replaced: int
    rows_added: int
    rows_after: int
    path: Path | str  # the partition's new data file (a URI on object storage)


@dataclass
class WriteReport:
    """What :meth:`Store.write` did, per machine partition."""

    kind: str
    partitions: list[PartitionReport] = field(default_factory=list)
    duplicate_sources_dropped: int = 0
    already_held: int = 0  # Store.append: rows of sources the table held already, left out
    version: int | None = None  # the table version this write committed (None: nothing changed)
    attempts: int = 0

    @property
    def rows_written(self) -> int:
        return sum(p.rows_added for p in self.partitions)


def config_key(schema: TableSchema) -> list[str]:
    """The columns whose equal values make rows trials of one configuration (the key without
    ``trial``)."""
    return [c for c in schema.primary_key if c != "trial"]


def commit_record(new: pl.DataFrame, reports: list, d: TableLocation, dt) -> str:
    """What a commit ingested, as the JSON its ``xamm`` commit property holds."""
    what = {
        "xamm_version": __version__,
        "rows": {r.machine: r.rows_added for r in reports},
        "log_prev": log_prev(d, dt.version() if dt is not None else None),
        "sources": sorted(set(new.get_column("source_path")))[:200],
        "n_sources": new.get_column("source_sha256").n_unique(),
    }
    return json.dumps(what, sort_keys=True)
