"""Readers' rows (one dict per row) into one frame, as ``pl.from_dicts(rows, schema=...,
strict=True)`` builds it, with each list-of-structs column (a profile's regions, its extra
metadata and counters) built from its elements as flat columns and grouped back by row.

polars' row-wise builders hold many times a nested column's own size for as long as the frame
lives, and the batch frame is the largest thing an archive ingest holds (its peak memory:
``benchmarks/bench_archive.py``). Built flat, the same column holds about its own size and costs
less time. A column of timezone-aware times (a run's date, UTC microseconds) is built from the
microseconds since the epoch, worked out once per distinct time: polars' builder converts each
aware ``datetime`` in Python, the costliest column of a RAJAPerf batch frame by far. A column
whose values are not plain lists of dicts (a null element, a value to convert), or times that
are not aware ``datetime`` objects, takes polars' own builder, so every frame equals what
``pl.from_dicts`` makes (tested).

A reader may give the columns every row of a source holds once
(:attr:`~xamm_ingest.readers.base.ReadResult.shared`: a RAJAPerf file's machine, variant,
compiler, path, hash ...): :func:`frame_of_sources` builds them once per source and repeats them,
where polars' builder would convert them once per row.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

from xamm_ingest.readers.base import ColumnRows

__all__ = ["frame_of_rows", "frame_of_sources"]

_ROW = "__row"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def frame_of_rows(rows: list[dict], schema: dict[str, Any]) -> pl.DataFrame:
    """``pl.from_dicts(rows, schema=schema, strict=True)``, its list-of-structs columns built
    flat.

    Args:
        rows: one dict per row (keys outside ``schema`` are ignored, missing ones are null).
        schema: the frame's columns and dtypes, in order.

    Returns:
        The frame; what ``pl.from_dicts`` raises for rows that do not fit is raised.
    """
    nested = [c for c, dt in schema.items() if _list_of_structs(dt)]
    times = [c for c, dt in schema.items() if _utc_microseconds(dt)]
    if not (nested or times) or not rows:
        return pl.from_dicts(rows, schema=schema, strict=True)
    flat = {c: dt for c, dt in schema.items() if c not in nested and c not in times}
    frame = (
        pl.from_dicts(rows, schema=flat, strict=True) if flat else pl.DataFrame(height=len(rows))
    )
    columns = [_nested_column(rows, c, schema[c]) for c in nested]
    columns += [_time_column(rows, c, schema[c]) for c in times]
    return frame.with_columns(columns).select(list(schema))


def frame_of_sources(
    sources: list[tuple[dict, list[dict]]], schema: dict[str, Any]
) -> pl.DataFrame:
    """:func:`frame_of_rows` of every source's rows, each row with its source's shared columns
    (which win over the row's own, as :meth:`~xamm_ingest.readers.base.ReadResult.full_rows`
    gives them), those built once per source where every source shares the same columns.

    Args:
        sources: (shared columns, rows) of each source.
        schema: the frame's columns and dtypes, in order.

    Returns:
        The frame; what :func:`frame_of_rows` raises for rows that do not fit is raised.
    """
    filled = [(shared, rows) for shared, rows in sources if rows]
    column_sets = {frozenset(shared) for shared, _ in filled}
    common = next(iter(column_sets)) if len(column_sets) == 1 else frozenset()
    once = [c for c in schema if c in common]
    if not once:  # none shared, or not the same columns in every source: row by row
        return frame_of_rows([{**r, **sh} if sh else r for sh, rs in filled for r in rs], schema)
    flat = [r for _, rs in filled for r in rs]
    own = {c: dt for c, dt in schema.items() if c not in once}
    firsts = frame_of_rows([sh for sh, _ in filled], {c: schema[c] for c in once})
    at = pl.Series([i for i, (_, rs) in enumerate(filled) for _ in rs], dtype=pl.UInt32)
    rows = frame_of_rows(flat, own) if own else pl.DataFrame(height=len(flat))
    return pl.concat([rows, firsts[at]], how="horizontal").select(list(schema))


def _list_of_structs(dtype: Any) -> bool:
    return isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct)


def _utc_microseconds(dtype: Any) -> bool:
    return isinstance(dtype, pl.Datetime) and dtype.time_unit == "us" and dtype.time_zone == "UTC"


def _time_column(rows: list[dict], name: str, dtype: pl.Datetime) -> pl.Series:
    """A UTC microseconds column from aware ``datetime`` values (or None), as integers since the
    epoch (exact: a ``datetime`` holds whole microseconds), each distinct time converted once;
    polars' own builder for any other value (a naive time, a string, a subclass)."""
    values = [r.get(name) for r in rows]
    since: dict[datetime, int] = {}
    for v in values:
        if v is None:
            continue
        if type(v) is not datetime:
            return _as_polars_builds(rows, name, dtype)
        if v not in since:
            if v.utcoffset() is None:  # naive: polars' reading of it
                return _as_polars_builds(rows, name, dtype)
            since[v] = (v - _EPOCH) // _MICROSECOND
    micros = [None if v is None else since[v] for v in values]
    return pl.Series(name, micros, dtype=pl.Int64).cast(dtype)


def _nested_column(rows: list[dict], name: str, dtype: pl.List) -> pl.Series:
    """One list-of-structs column: its elements as flat columns, grouped back by row (rows with
    an empty list get one; rows without a value, null); polars' own builder where a value is not
    a list of dicts or a field does not take its value as it is."""
    inner = dtype.inner
    assert isinstance(inner, pl.Struct)
    fields = [f.name for f in inner.fields]
    at: list[int] = []
    values: dict[str, list] = {f: [] for f in fields}
    empty: list[int] = []
    sizes: set[int] = set()  # the lengths of the rows' lists, a row without one as -1
    for i, r in enumerate(rows):
        v = r.get(name)
        if v is None:
            sizes.add(-1)
            continue
        if not _add_elements(v, values):
            return _as_polars_builds(rows, name, dtype)
        if not v:
            empty.append(i)
        sizes.add(len(v))
        at += [i] * len(v)
    if not at and not empty:  # no row has a value (a column a format never fills)
        return pl.repeat(None, len(rows), dtype=dtype, eager=True).alias(name)
    try:
        flat = pl.DataFrame(
            {_ROW: at, **values},
            schema={_ROW: pl.UInt32, **{f.name: f.dtype for f in inner.fields}},
            strict=True,
        )
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        return _as_polars_builds(rows, name, dtype)  # polars converts what strict refuses
    if len(sizes) == 1 and (k := sizes.pop()) > 0:
        # every row holds k elements (a file's counters, one each): the elements, k to a row
        column = flat.select(pl.struct(fields).alias(name)).to_series()
        return column.reshape((len(rows), k)).cast(dtype).alias(name)
    grouped = flat.group_by(_ROW, maintain_order=True).agg(pl.struct(fields).alias(name))
    everyone = pl.DataFrame({_ROW: pl.arange(0, len(rows), dtype=pl.UInt32, eager=True)})
    out = everyone.join(grouped, on=_ROW, how="left", maintain_order="left").get_column(name)
    if empty:
        mask = pl.Series([False] * len(rows)).scatter(empty, True)
        out = pl.select(pl.when(mask).then(pl.lit([], dtype=dtype)).otherwise(out)).to_series()
    return out.alias(name).cast(dtype)


def _add_elements(v: object, values: dict[str, list]) -> bool:
    """A row's elements (a list of dicts, or :class:`~xamm_ingest.readers.base.ColumnRows`) added
    to ``values``, field by field (a field an element lacks is null); False, adding none, for any
    other value."""
    if type(v) is ColumnRows:
        n = len(v)
        for f, column in values.items():
            column += v.columns.get(f) or [None] * n
        return True
    if type(v) is not list or any(type(e) is not dict for e in v):
        return False
    for f, column in values.items():
        column += [e.get(f) for e in v]
    return True


def _as_polars_builds(rows: list[dict], name: str, dtype: pl.DataType) -> pl.Series:
    # rows held as columns are given to polars as the dicts they hold
    plain = [{name: list(v)} if type(v := r.get(name)) is ColumnRows else {name: v} for r in rows]
    return pl.from_dicts(plain, schema={name: dtype}, strict=True).get_column(name)
