"""Reading a store's tables: machines and row counts from the log, one partition or the whole table
at a version, each data file checked against its checksum and the log's entry as it is read."""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal, overload

import polars as pl

from xamm_data.store.delta_log import CorruptLogError
from xamm_data.store.files import (
    METADATA_KEY,
    CorruptDataError,
    footer_metadata,
    footer_rows,
    read_part,
)
from xamm_data.store.log import StoreLog, data_schema
from xamm_data.store.verify import duplicate_problem, entry_problem
from xamm_data.tables.schema import TableSchema
from xamm_data.tables.validate import conform

__all__ = ["StoreReading"]


class StoreReading(StoreLog):
    """Reading (see the module docstring)."""

    def machines(self, kind: str = "benchmark_runs", *, version: int | None = None) -> list[str]:
        """Machines with rows of ``kind`` in this store.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            version: the table version to list (default: the latest).

        Returns:
            The machine ids, sorted.
        """
        return sorted(set(self.live_files(kind, version).get_column("machine")))

    def has(self, kind: str, machine: str) -> bool:
        """Whether ``machine`` has rows of ``kind`` in this store.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            machine: a machine id.

        Returns:
            True when the latest version holds a data file of that partition.
        """
        return machine in self.machines(kind)

    def row_counts(self, kind: str) -> dict[str, int]:
        """Rows per machine of ``kind``, from the log's file statistics (no data file is read).

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).

        Returns:
            Machine id -> rows.
        """
        rows = self.live_files(kind).group_by("machine").agg(pl.col("rows").sum()).sort("machine")
        return dict(rows.iter_rows())

    def partition_files(
        self, kind: str, machine: str, *, version: int | None = None
    ) -> list[Path | str]:
        """The data files holding ``machine``'s rows of ``kind``.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            machine: a machine id.
            version: the table version (default: the latest).

        Returns:
            Paths, or URIs on an object store.
        """
        f = self.live_files(kind, version).filter(pl.col("machine") == machine)
        loc = self.location(kind)
        return [loc.where(p) for p in f.get_column("path")]

    def partition_path(self, kind: str, machine: str) -> Path | str:
        """The single data file of ``machine``'s partition (``xamm store optimize`` makes it
        one).

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            machine: a machine id.

        Returns:
            Its path, or URI on an object store.
        """
        files = self.partition_files(kind, machine)
        if len(files) != 1:
            raise FileNotFoundError(
                f"{kind} for {machine!r} in {self.root} has {len(files)} data "
                "files, not one" + ("; `xamm store optimize` merges them" if files else "")
            )
        return files[0]

    @overload
    def read(
        self,
        kind: str,
        machine: str,
        *,
        lazy: Literal[False] = ...,
        version: int | None = ...,
        as_of: datetime | None = ...,
        columns: Sequence[str] | None = ...,
    ) -> pl.DataFrame: ...

    @overload
    def read(
        self,
        kind: str,
        machine: str,
        *,
        lazy: Literal[True],
        version: int | None = ...,
        as_of: datetime | None = ...,
        columns: Sequence[str] | None = ...,
    ) -> pl.LazyFrame: ...

    @overload
    def read(
        self,
        kind: str,
        machine: str,
        *,
        lazy: bool,
        version: int | None = ...,
        as_of: datetime | None = ...,
        columns: Sequence[str] | None = ...,
    ) -> pl.DataFrame | pl.LazyFrame: ...

    def read(
        self,
        kind: str,
        machine: str,
        *,
        lazy: bool = False,
        version: int | None = None,
        as_of: datetime | None = None,
        columns: Sequence[str] | None = None,
    ) -> pl.DataFrame | pl.LazyFrame:
        """One machine's rows of ``kind``, every file verified before it is parsed.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            machine: a machine id.
            lazy: return a ``LazyFrame``.
            version: the table version to read (time travel).
            as_of: read the table as it was at this time.
            columns: only these columns, in this order (the others are never parsed: memory
                is that of the columns read).

        Returns:
            The rows, sorted by the table's key.
        """
        schema = data_schema(kind)
        files = self.live_files(kind, version, as_of)
        if machine not in set(files.get_column("machine")):
            raise FileNotFoundError(
                f"no {kind} for machine {machine!r} in store {self.root}"
                + (f" at version {version}" if version is not None else "")
            )
        lf = self.scan_partition(kind, schema, files, machine, columns=columns)
        return lf if lazy else lf.collect(engine="in-memory")

    def scan_partition(
        self,
        kind: str,
        schema: TableSchema,
        files: pl.DataFrame,
        machine: str,
        foreign_ok: bool = False,
        columns: Sequence[str] | None = None,
    ) -> pl.LazyFrame:
        """One machine's rows, verified now and parsed when collected (every read of a partition,
        eager ones collect it): each data file's bytes are checked against its checksum and the
        log's entry, and kept (compressed) for the scan. A query on the result parses only the
        columns and rows it needs, so an aggregate over a partition holds the aggregate, not the
        rows.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            schema: the table's schema.
            files: the live files (:meth:`live_files`).
            machine: a machine id.
            foreign_ok: read a file another tool wrote (no checksum in its name: ``xamm store
                optimize`` rewrites it).
            columns: only these columns, in this order.

        Returns:
            The rows, sorted by the table's key when the partition has several files.
        """
        loc = self.location(kind)
        schema = projected(schema, columns)
        parts = []
        for path, size, rows in (
            files.filter(pl.col("machine") == machine).select("path", "size", "rows").iter_rows()
        ):
            data = read_part(loc, path, table=kind, machine=machine, foreign_ok=foreign_ok)
            part = _scanned(data, schema, machine, every=columns is None)
            foreign = not part.filter(pl.col("machine") != machine).head(1).collect().is_empty()
            if problem := entry_problem(
                kind, loc, machine, path, size, rows, len(data), footer_rows(data),
                foreign_rows=foreign,
            ):  # fmt: skip
                raise CorruptLogError(problem)
            parts.append(part.with_columns(pl.lit(path).alias("_file")))
        if not parts:
            return schema.empty().lazy()
        if len(parts) > 1 and (
            problem := duplicate_problem(
                kind,
                loc,
                machine,
                pl.concat([p.select("source_sha256", "_file") for p in parts]).collect(),
            )
        ):
            raise CorruptLogError(problem)
        lf = pl.concat([p.drop("_file") for p in parts], how="vertical")
        lf = lf.sort(list(schema.primary_key), nulls_last=True) if len(parts) > 1 else lf
        return lf if columns is None else lf.select(columns)

    def scan(
        self,
        kind: str,
        *,
        machine: str | None = None,
        version: int | None = None,
        as_of: datetime | None = None,
    ) -> pl.LazyFrame:
        """Every machine's rows of ``kind`` (or one machine's), lazily.

        Read through polars' ``scan_delta`` once every data file it can read has been checked
        against its checksum (one at a time: memory is one file's, not the table's). Filters and
        column selections on the result reach the Parquet reader (predicate and projection
        pushdown); ``machine`` prunes the other partitions before anything is read.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            machine: one machine's partition only.
            version: the table version to read (time travel).
            as_of: read the table as it was at this time.

        Returns:
            The rows, sorted by machine and key.
        """
        schema = data_schema(kind)
        dt, files = self.snapshot(kind, version, as_of)
        if machine is not None:
            if machine not in set(files.get_column("machine")):
                raise FileNotFoundError(
                    f"no {kind} for machine {machine!r} in store {self.root}"
                    + (f" at version {version}" if version is not None else "")
                )
            files = files.filter(pl.col("machine") == machine)
        if files.is_empty():
            return schema.empty().lazy()
        loc = self.location(kind)
        for part_of, path, size, rows in files.select(
            "machine", "path", "size", "rows"
        ).iter_rows():
            # raises before anything is parsed
            data = read_part(loc, path, table=kind, machine=part_of)
            if problem := entry_problem(
                kind, loc, part_of, path, size, rows, len(data), footer_rows(data)
            ):
                raise CorruptLogError(problem)
        lf = pl.scan_delta(
            loc.uri, version=dt.version(), storage_options=loc.storage_options or None
        )
        if machine is not None:
            lf = lf.filter(pl.col("machine") == machine)
        have = set(lf.collect_schema().names())
        cols = [
            pl.col(c).cast(t) if c in have else pl.lit(None, dtype=t).alias(c)
            for c, t in schema.polars_schema.items()
        ]
        return lf.select(cols).sort(["machine", *schema.primary_key], nulls_last=True)

    def metadata(self, kind: str, machine: str) -> dict:
        """The ``xamm`` key-value metadata of a machine's (first) data file.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            machine: a machine id.

        Returns:
            Table name, schema version, units, primary key, the number of sources and the first
            of them, as written.
        """
        rel = self.live_files(kind).filter(pl.col("machine") == machine).get_column("path")[0]
        data = read_part(self.location(kind), rel, table=kind, machine=machine)
        md = footer_metadata(data)
        if md is None:
            raise CorruptDataError(f"{kind} / {machine}: {rel} has no {METADATA_KEY!r} metadata")
        return md


def projected(schema: TableSchema, columns: Sequence[str] | None) -> TableSchema:
    """``schema`` cut to ``columns`` and what reading checks (the partition, the source and the
    key); ``schema`` itself for None.

    Args:
        schema: the table's schema.
        columns: the columns asked for.

    Returns:
        The schema of the columns read.

    Raises:
        ValueError: a column the table does not have; the message lists the table's columns.
    """
    if columns is None:
        return schema
    unknown = [c for c in columns if c not in schema.names]
    if unknown:
        raise ValueError(
            f"{schema.name} has no column {', '.join(map(repr, unknown))}; its columns: "
            + ", ".join(schema.names)
        )
    keep = {*columns, schema.partition_by, "source_sha256", *schema.primary_key}
    return schema.with_columns(keep)


def _scanned(data: bytes, schema: TableSchema, machine: str, *, every: bool) -> pl.LazyFrame:
    """A verified data file's rows in ``schema``'s columns and types, lazily (``every``: the
    schema is the table's, not a projection of it). A file whose columns need more than a missing
    nullable column added (another type, a missing required column, or with ``every`` a column the
    table does not have: an older schema's file, another tool's) is parsed now and conformed, with
    the errors :func:`~xamm_data.tables.validate.conform` gives, as the eager read does."""
    held = pl.read_parquet_schema(io.BytesIO(data))
    wanted = schema.polars_schema
    if (
        any(held.get(c, t) != t for c, t in wanted.items())
        or any(c.name not in held and not c.nullable for c in schema.columns)
        or (schema.partition_by not in held and schema.partition_by in wanted)
        or (every and any(c not in wanted for c in held))
    ):
        part = _parsed(data, None if every else schema)
        if schema.partition_by not in part.columns:  # a file keeping it in its path only
            part = part.with_columns(pl.lit(machine).alias(schema.partition_by))
        return conform(part, schema).lazy()
    return pl.scan_parquet(io.BytesIO(data), hive_partitioning=False).select(
        pl.col(c) if c in held else pl.lit(None, dtype=t).alias(c) for c, t in wanted.items()
    )


def _parsed(data: bytes, schema: TableSchema | None) -> pl.DataFrame:
    """A verified data file's rows: every column, or ``schema``'s that the file holds."""
    if schema is None:
        return pl.read_parquet(io.BytesIO(data), hive_partitioning=False)
    held = pl.read_parquet_schema(io.BytesIO(data))
    return pl.read_parquet(
        io.BytesIO(data), columns=[c for c in schema.names if c in held], hive_partitioning=False
    )
