"""``xamm-ingest table``: samples already flattened to CSV or Parquet, mapped to ``app_profiles``
columns by a TOML mapping (:mod:`xamm_ingest.readers.table` documents its format)."""

from __future__ import annotations

from pathlib import Path

from xamm_ingest import profiles
from xamm_ingest.readers import table
from xamm_ingest.readers.base import ReadResult, Source
from xamm_ingest.sniff import TABLE_SUFFIXES
from xamm_ingest.sources import Task

plan = profiles.plan_files("table", TABLE_SUFFIXES)


def prepare(opts: dict) -> dict:
    """The mapping, read once before any table (a missing or bad one is the caller's mistake)."""
    if opts.get("mapping") is None:
        raise ValueError("table ingest needs --mapping FILE.toml")
    return {**opts, "table_mapping": table.load_mapping(opts["mapping"])}


def read(task: Task, opts: dict) -> ReadResult:
    """One table's rows, mapped and checked."""
    frame, dropped = table.read_table(
        Source.of(task.path, task.root, task.sha256, task.link),
        opts["table_mapping"],
        Path(opts["mapping"]),
        bounds=opts.get("bounds"),
    )
    return ReadResult(frame=profiles.conformed(frame), dropped=dropped)
