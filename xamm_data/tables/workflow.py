"""The metadata a workflow recorded of each run (``run_metadata``: Benchpark/Ramble's system,
experiment, modifiers and variables), as columns."""

from __future__ import annotations

import re

import polars as pl

__all__ = ["metadata_columns"]


def _column(name: str) -> str:
    """``ramble.variable.n_ranks`` -> ``ramble_variable_n_ranks``."""
    return re.sub(r"[^0-9A-Za-z_]", "_", name)


def metadata_columns(
    frame: pl.DataFrame, names: list[str] | None = None, *, column: str = "run_metadata"
) -> pl.DataFrame:
    """``frame`` with one string column per name its ``run_metadata`` holds (dots and other
    characters become ``_``: ``benchpark_system``, ``ramble_variable_n_ranks``); null where a row
    does not have the name.

    Args:
        frame: ``benchmark_runs`` rows (``load_dataset(...)``).
        names: the names to make columns (default: every name any row has).
        column: the list-of-(name, value) column.

    Returns:
        The frame with the columns added (the list column kept).
    """
    if column not in frame.columns:
        raise ValueError(f"the frame has no {column} column (schema 1.6.0 and later)")
    pairs = (
        frame.select(pl.col(column).explode(empty_as_null=False)).get_column(column).drop_nulls()
    )
    have = sorted(set(pairs.struct.field("name").to_list())) if pairs.len() else []
    want = have if names is None else names
    clash = [n for n in want if _column(n) in frame.columns]
    if clash:
        raise ValueError(f"names {clash} would overwrite columns of the frame")
    return frame.with_columns(
        pl.col(column)
        .list.eval(pl.element().filter(pl.element().struct.field("name") == n))
        .list.first()
        .struct.field("value")
        .alias(_column(n))
        for n in want
    )
