"""``xamm-ingest table``: samples already flattened to CSV or Parquet, mapped to ``app_profiles``
columns by a TOML mapping (:mod:`xamm_ingest.readers.table` documents its format)."""

from __future__ import annotations

import argparse
from pathlib import Path

from xamm_data.tables.schema import APP_PROFILES
from xamm_ingest import profiles
from xamm_ingest.format import Format
from xamm_ingest.readers import table
from xamm_ingest.readers.base import ReadResult, Source
from xamm_ingest.sniff import TABLE_SUFFIXES
from xamm_ingest.sources import Task


def prepare(opts: dict) -> dict:
    """The mapping, read once before any table (a missing or bad one is the caller's mistake)."""
    if opts.get("mapping") is None:
        raise ValueError("table ingest needs --mapping FILE.toml")
    return {**opts, "table_mapping": table.load_mapping(opts["mapping"])}


def read(task: Task, opts: dict) -> ReadResult:
    """One table's rows, mapped and checked."""
    frame, dropped = table.read_table(
        Source.of(task.path, task.root),
        opts["table_mapping"],
        Path(opts["mapping"]),
        bounds=opts.get("bounds"),
    )
    return ReadResult(frame=profiles.conformed(frame), dropped=dropped)


def add_arguments(q: argparse.ArgumentParser) -> None:
    """``--mapping``."""
    q.add_argument(
        "--mapping",
        required=True,
        type=Path,
        help="TOML file mapping your columns to canonical ones",
    )


def options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """The mapping file."""
    return {"mapping": args.mapping}


FORMAT = Format(
    name="table",
    summary="samples already flattened to CSV/Parquet, with a column mapping",
    table=APP_PROFILES,
    plan=profiles.plan_files("table", TABLE_SUFFIXES),
    prepare=prepare,
    read=read,
    finish=profiles.finish,
    add_arguments=add_arguments,
    options=options,
    description="Read CSV/Parquet samples into app_profiles using a TOML mapping "
    "(see xamm_ingest.readers.table for its format).",
    examples=("xamm-ingest table samples.csv --mapping mapping.toml",),
)
