"""The rules a store applies to rows whatever writes them: trials numbered independently of the
ingest order, byte-identical copies of a source kept once, and a Parquet file's schema version
checked against this xamm's."""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl

from xamm_data.store.files import footer_metadata
from xamm_data.store.reports import config_key
from xamm_data.tables.schema import TableSchema, get_table
from xamm_data.tables.validate import ValidationError, validate

__all__ = ["dedupe_sources", "merge_numbered", "read_parquet_checked", "renumber_trials"]

_TRIAL_ORDER = ("run_date", "source_path", "source_sha256", "trial")


def renumber_trials(df: pl.DataFrame, schema: TableSchema) -> pl.DataFrame:
    """Set ``trial`` to the 0-based rank of each row among rows of identical configuration.

    Order: run date (unknown last), then source path, then source hash, then the reader's own
    trial number, so the numbering does not depend on ingest order; rows alike in all four (one
    file's runs of a configuration) keep their order in the file. The rows stay where they are
    (a sort would move every column, the nested ones too; the store sorts what it writes).
    """
    if "trial" not in schema.primary_key or df.is_empty():
        return df
    key = config_key(schema)
    # each row's place in that order (unique), then its rank among its configuration's rows
    place = pl.arg_sort_by(list(_TRIAL_ORDER), nulls_last=True, maintain_order=True).arg_sort()
    return df.with_columns((place.rank("ordinal").over(key) - 1).cast(pl.Int64).alias("trial"))


def merge_numbered(kept: pl.DataFrame, new: pl.DataFrame, schema: TableSchema) -> pl.DataFrame:
    """A partition's rows with new rows added, trials numbered as :func:`renumber_trials` numbers
    them, renumbering only the configurations both hold.

    ``kept`` was numbered by that rule when it was written, ``new`` among its own rows by the
    same rule; a configuration only one side holds keeps its numbers, so only the shared ones
    are numbered again.

    Args:
        kept: the partition's rows that stay.
        new: the rows added, numbered among themselves.
        schema: the table.

    Returns:
        Both, in no particular order.
    """
    both = pl.concat([kept, new], how="vertical")
    if "trial" not in schema.primary_key or kept.is_empty() or new.is_empty():
        return both
    key = config_key(schema)
    shared = new.select(key).unique().join(kept.select(key).unique(), on=key, nulls_equal=True)
    if shared.is_empty():
        return both
    inside = both.join(shared, on=key, how="semi", nulls_equal=True)
    outside = both.join(shared, on=key, how="anti", nulls_equal=True)
    return pl.concat([outside, renumber_trials(inside, schema)], how="vertical")


def dedupe_sources(df: pl.DataFrame, schema: TableSchema) -> pl.DataFrame:
    """Keep one copy of rows that came from byte-identical files (same hash and configuration).

    The same bytes under two paths are one measurement, not two trials: a later path's rows (in
    path order) whose configuration and hash an earlier path's rows have are dropped. Rows of one
    file are never dropped against each other: a table holds runs of one configuration side by
    side.

    Args:
        df: rows of one table, each naming its source's path and hash.
        schema: the table.

    Returns:
        The rows kept, in source path order (a file's own rows in their order).
    """
    if df.is_empty():
        return df
    paths = df.get_column("source_path")
    # nearly always no hash is held under two paths: nothing to drop, and the rows are in path
    # order already when their files were read in it (the window and the sort move every column)
    pairs = df.select("source_sha256", "source_path").unique()
    if not (paths.has_nulls() or pairs.get_column("source_sha256").is_duplicated().any()):
        return df if paths.is_sorted() else df.sort("source_path", maintain_order=True)
    first = pl.col("source_path").first().over([*config_key(schema), "source_sha256"])
    return df.sort("source_path", maintain_order=True).filter(pl.col("source_path") == first)


def read_parquet_checked(
    path: str | Path | bytes, kind: str, *, name: str | None = None
) -> pl.DataFrame:
    """Read a Parquet file written by xamm (a path, or its bytes called ``name``) and check its
    schema version against this xamm's."""
    schema = get_table(kind)
    info = footer_metadata(path, name)
    if info is not None:
        major = info.get("schema_version", "0").split(".")[0]
        if info.get("table") != kind or major != schema.version.split(".")[0]:
            raise ValidationError(
                kind,
                "*",
                f"file {name or ('the given bytes' if isinstance(path, bytes) else path)} holds "
                f"{info.get('table')} "
                f"v{info.get('schema_version')}, this xamm reads v{schema.version}",
                0,
                [],
            )
    src = io.BytesIO(path) if isinstance(path, bytes) else path
    return validate(pl.read_parquet(src, hive_partitioning=False), schema)
