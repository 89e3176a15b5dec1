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
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from xamm_data.schema import TableSchema, get_table
from xamm_data.table_files import parquet_bytes, write_part
from xamm_data.write_reports import PartitionReport, commit_record, config_key

if TYPE_CHECKING:  # the store's log imports this module; its class is only named here
    from xamm_data.store_log import StoreLog

__all__ = [
    "ConfigCounts",
    "append_once",
    "find_keys",
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
    return pl.scan_parquet(
        [str(loc.where(p)) for p in files.get_column("path")],
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


_SEEDS = (11, 53)  # two hashes of a configuration: 128 bits
MERGE_AT = 4096  # configurations first seen in a run, kept apart until there are this many


def _config_hashes(key: list[str]) -> list[pl.Expr]:
    return [pl.struct(key).hash(seed).alias(f"_h{i}") for i, seed in enumerate(_SEEDS)]


@dataclass
class _Counts:
    """Rows held per configuration hash, sorted by (``h0``, ``h1``)."""

    h0: np.ndarray
    h1: np.ndarray
    n: np.ndarray

    @classmethod
    def of(cls, frame: pl.DataFrame) -> _Counts:
        frame = frame.sort("_h0", "_h1")
        return cls(*(frame[c].to_numpy().copy() for c in ("_h0", "_h1", "_n")))

    @classmethod
    def empty(cls) -> _Counts:
        return cls(*(np.empty(0, dtype=t) for t in (np.uint64, np.uint64, np.int64)))

    def __len__(self) -> int:
        return len(self.h0)

    def merged(self, other: _Counts) -> _Counts:
        """Both (their configurations disjoint), sorted."""
        h0, h1 = np.concatenate([self.h0, other.h0]), np.concatenate([self.h1, other.h1])
        order = np.lexsort((h1, h0))
        return _Counts(h0[order], h1[order], np.concatenate([self.n, other.n])[order])


def _hash_counts(frame: pl.DataFrame | pl.LazyFrame, key: list[str]):
    return (
        frame.select(_config_hashes(key))
        .group_by("_h0", "_h1")
        .agg(pl.len().cast(pl.Int64).alias("_n"))
    )


class ConfigCounts:
    """Rows held per configuration of each partition, as of a table version, kept by a
    :class:`Store` between its own appends: while no other writer commits, numbering a batch's
    trials needs no scan of the rows already held, so a commit costs about the same at 10^4 and
    10^6 rows. A configuration is known by 128 bits of hash (24 bytes a configuration), looked up
    by binary search in sorted arrays: the counts read at the run's first append, and a small
    sorted set of configurations first seen since, merged in when it outgrows an eighth of them
    (so no commit copies all the counts). The first append of a run, or one after another
    writer's commit, reads the partition once."""

    def __init__(self) -> None:
        # (kind, machine) -> (version, the counts read, the configurations first seen since)
        self._by: dict[tuple[str, str], tuple[int, _Counts, _Counts]] = {}

    def held(
        self, kind: str, machine: str, version: int, lf: pl.LazyFrame, part, key
    ) -> pl.DataFrame:
        """Rows held per configuration of ``part`` (``key`` columns and ``_held``) at
        ``version``: from the counts kept since that version, else one scan of ``lf``."""
        cached = self._by.get((kind, machine))
        if cached is None or cached[0] != version:
            read = _Counts.of(_hash_counts(lf, key).collect(engine="streaming"))
            cached = (version, read, _Counts.empty())
            self._by[(kind, machine)] = cached
        wanted = part.select(key).unique().with_columns(_config_hashes(key))
        q0, q1 = wanted["_h0"].to_numpy(), wanted["_h1"].to_numpy()
        held = np.zeros(len(q0), dtype=np.int64)
        for counts in cached[1:]:  # a configuration is in one of the two
            at = find_keys(counts.h0, counts.h1, q0, q1)
            held[at >= 0] += counts.n[at[at >= 0]]
        return wanted.select(key).with_columns(pl.Series("_held", held, dtype=pl.Int64))

    def committed(self, kind: str, machine: str, before: int, after: int, part, key) -> None:
        """``part`` was committed as version ``after`` on ``before``: the kept counts follow,
        or are dropped when they described another version."""
        cached = self._by.pop((kind, machine), None)
        if cached is None or cached[0] != before:
            return
        _, read, recent = cached
        added = _Counts.of(_hash_counts(part, key))
        unseen = np.ones(len(added), dtype=bool)
        for counts in (read, recent):
            at = find_keys(counts.h0, counts.h1, added.h0, added.h1)
            np.add.at(counts.n, at[at >= 0], added.n[at >= 0])
            unseen &= at < 0
        recent = recent.merged(_Counts(added.h0[unseen], added.h1[unseen], added.n[unseen]))
        if len(recent) > max(MERGE_AT, len(read) // 8):
            read, recent = read.merged(recent), _Counts.empty()
        self._by[(kind, machine)] = (after, read, recent)


def find_keys(h0: np.ndarray, h1: np.ndarray, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """Index of each (``q0``, ``q1``) among the sorted keys (``h0`` sorted, ties by ``h1``), -1
    where it is not there."""
    at = np.searchsorted(h0, q0, side="left")
    out = np.full(len(q0), -1, dtype=np.int64)
    for i, j in enumerate(at):
        while j < len(h0) and h0[j] == q0[i]:  # equal first halves: rare, but kept exact
            if h1[j] == q1[i]:
                out[i] = j
                break
            j += 1
    return out


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
    version = store.commit_actions(kind, dt, actions, props)
    for machine, part in written:
        store.config_counts.committed(kind, machine, before, version, part, key)
    return reports, version


def _report(machine: str, before: int, added: int, path) -> PartitionReport:
    return PartitionReport(machine, before, 0, added, before + added, path)
