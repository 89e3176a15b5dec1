"""Appending new sources to a store table without rewriting what it holds.

:meth:`Store.write <xamm_data.store.Store.write>` merges a batch into each partition it touches and
rewrites the partition: right for a run of a few hundred files, quadratic for a centre's archive
committed in batches. :meth:`Store.append <xamm_data.store.Store.append>` adds one new data file
per partition and batch instead, in one Delta commit, so a batch costs the same however large the
table has grown. It reads only two narrow things of the rows already there, through a streaming
scan of one partition that reads the columns it needs and keeps only the matches:

* which of the batch's sources (by SHA-256) are already in the table: their rows are left out, so
  re-running an interrupted ingest never holds a source twice;
* how many rows each of the batch's configurations already has: a new row's ``trial`` continues
  after them, in the order the rows were appended, so an ingest committed in batches of any size
  numbers trials alike.
"""

from __future__ import annotations

import json
import time

import polars as pl

from xamm_data.store.files import parquet_bytes, write_part
from xamm_data.store.log import StoreLog
from xamm_data.store.parquet_depth import checked_depth
from xamm_data.store.reports import PartitionReport, commit_record, config_key
from xamm_data.tables.schema import TableSchema, get_table

__all__ = [
    "append_once",
    "numbered_within",
    "present_sources",
    "source_keys",
]


def _lazy(
    store: StoreLog, kind: str, files: pl.DataFrame, machine: str | None
) -> pl.LazyFrame | None:
    """The rows of a snapshot's live ``files`` (one partition's when ``machine`` is given), lazily,
    in the table's current schema (columns an older file lacks are null).

    Scanned as Parquet from the file list the snapshot already holds: polars' ``scan_delta`` would
    replay the log again and load pyarrow's libraries into the ingest process to do it.
    """
    if machine is not None:
        files = files.filter(pl.col("machine") == machine)
    if files.is_empty():
        return None
    loc = store.location(kind)
    paths = [str(loc.where(p)) for p in files.get_column("path")]
    for p in paths:  # a local file polars would fail on is refused first (remote: left to it)
        checked_depth(p)
    return pl.scan_parquet(
        paths,
        schema=get_table(kind).polars_schema,
        missing_columns="insert",
        extra_columns="ignore",
        cast_options=pl.ScanCastOptions(integer_cast="upcast", float_cast="upcast"),
        hive_partitioning=False,
        storage_options=loc.storage_options or None,
    )


def present_sources(store: StoreLog, kind: str, sha256s: list[str]) -> set[str]:
    """Which of ``sha256s`` the latest version of ``kind`` already holds rows of.

    Args:
        store: the store.
        kind: a data table.
        sha256s: the SHA-256 of each source to look for.

    Returns:
        The hashes found.
    """
    if not sha256s:
        return set()
    lf = _lazy(store, kind, store.snapshot(kind)[1], None)
    if lf is None:
        return set()
    wanted = pl.Series(sorted(set(sha256s)), dtype=pl.String)
    found = (
        lf.select("source_sha256").filter(pl.col("source_sha256").is_in(wanted.implode())).unique()
    )
    return set(found.collect(engine="streaming").get_column("source_sha256").to_list())


def source_keys(store: StoreLog, kind: str) -> pl.DataFrame:
    """The first 128 bits of each source hash the latest version of ``kind`` holds, as two
    ``UInt64`` columns ``hi`` and ``lo``, sorted: 16 bytes a source, read in one streaming scan,
    so that a resumed ingest tells what is held by a search in memory, never a scan per batch.

    Args:
        store: the store.
        kind: a data table.

    Returns:
        The keys (empty before the first write).
    """
    lf = _lazy(store, kind, store.snapshot(kind)[1], None)
    if lf is None:
        return pl.DataFrame(schema={"hi": pl.UInt64, "lo": pl.UInt64})
    sha = pl.col("source_sha256")
    part = {
        n: sha.str.slice(a, 16).str.to_integer(base=16, dtype=pl.UInt64)
        for n, a in (("hi", 0), ("lo", 16))
    }
    return lf.select(**part).unique().collect(engine="streaming").sort("hi", "lo")


def numbered_within(df: pl.DataFrame, schema: TableSchema) -> pl.DataFrame:
    """``trial`` = the rank of each row among the batch's rows of its configuration, in the order
    the rows are given.

    Args:
        df: a batch of rows.
        schema: their table.

    Returns:
        The rows, numbered.
    """
    if "trial" not in schema.primary_key or df.is_empty():
        return df
    return df.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over(config_key(schema)).alias("trial")
    )


def _numbered(part: pl.DataFrame, held: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """``trial`` = the rows already held of the configuration + the rank within this batch."""
    part = part.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(key).alias("trial"))
    part = part.join(held, on=key, how="left", nulls_equal=True, maintain_order="left")
    return part.with_columns((pl.col("trial") + pl.col("_held").fill_null(0)).alias("trial")).drop(
        "_held"
    )


def _held_sources(lf: pl.LazyFrame, sha256s: pl.Series) -> pl.Series:
    """Which of ``sha256s`` the stored rows ``lf`` already hold (a streaming scan of their
    ``source_sha256``: at a million rows the largest cost of a commit)."""
    wanted = sha256s.unique().implode()
    found = lf.select("source_sha256").filter(pl.col("source_sha256").is_in(wanted))
    return found.unique().collect(engine="streaming").get_column("source_sha256")


def append_once(
    store: StoreLog, new: pl.DataFrame, schema: TableSchema, unheld_at: int | None = None
):
    """One attempt: add ``new``'s sources not yet held as one new file per partition, one commit.

    Args:
        store: the store.
        new: validated rows (sources deduplicated).
        schema: their table.
        unheld_at: a table version at which the caller has checked that none of ``new``'s sources
            is held; while it is still the latest version, the stored sources are not scanned.

    Returns:
        (per-partition reports, the new version or None when nothing was new), as
        :meth:`Store.write`'s merge returns.
    """
    from deltalake.transaction import AddAction, CommitProperties  # delta-rs: imported on use

    kind, loc = schema.name, store.location(schema.name)
    dt, files = store.snapshot(kind)
    vouched = dt is not None and unheld_at is not None and dt.version() == unheld_at
    key, now = config_key(schema), int(time.time() * 1000)
    actions, reports, written = [], [], []
    for machine in sorted(new.get_column(schema.partition_by).unique().to_list()):
        part = new.filter(pl.col(schema.partition_by) == machine)
        rows_before = int(files.filter(pl.col("machine") == machine).get_column("rows").sum())
        lf = _lazy(store, kind, files, machine) if rows_before else None
        if lf is not None:
            if not vouched:
                held_now = _held_sources(lf, part.get_column("source_sha256"))
                part = part.filter(~pl.col("source_sha256").is_in(held_now.implode()))
            held = store.config_counts.held(kind, machine, dt.version(), lf, part, key)
        else:
            held = pl.DataFrame(schema={**{c: part.schema[c] for c in key}, "_held": pl.Int64})
        if part.is_empty():
            continue
        part = _numbered(part, held, key).sort(list(schema.primary_key), nulls_last=True)
        written.append((machine, part))
        rel, size = write_part(loc, machine, parquet_bytes(part, schema))
        stats = json.dumps({"numRecords": part.height})
        actions.append(AddAction(rel, size, {"machine": machine}, now, True, stats))
        reports.append(_report(machine, rows_before, part.height, loc.where(rel)))
    if not actions:
        return reports, None
    record = commit_record(new, reports, loc, dt)
    props = CommitProperties(custom_metadata={"xamm": record})
    before = dt.version() if dt is not None else -1  # read first: the commit moves ``dt`` on
    # a checkpoint this commit owes is written by the caller once the batch is let go
    version = store.commit_actions(kind, dt, actions, props, checkpoint=False)
    for machine, part in written:
        store.config_counts.committed(kind, machine, before, version, part, key)
    return reports, version


def _report(machine: str, before: int, added: int, path) -> PartitionReport:
    return PartitionReport(machine, before, 0, added, before + added, path)
