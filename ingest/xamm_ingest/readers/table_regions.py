"""A table of regions (``.csv`` or ``.parquet``) read for prediction: ``region`` and
``exclusive_s`` (or ``time_s``, seconds), optionally ``inclusive_s``, ``calls``, ``bytes``,
``flops``, ``parent``, ``category`` (``compute``, ``communication`` or ``io``; else from the
region's label)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from xamm_data.store.parquet_depth import read_parquet
from xamm_data.tables.regions import (
    ProfileMeta,
    RegionProfile,
    RegionProfileError,
    category_expr,
    check_regions,
    conform_regions,
)

__all__ = ["read_table_regions"]


def _read_table_file(path: Path) -> pl.DataFrame:
    try:
        if path.suffix.lower() == ".parquet":
            return read_parquet(path, "")
        return pl.read_csv(path, infer_schema_length=10000)
    except Exception as e:  # polars' and pyarrow's errors for a damaged or foreign file
        raise RegionProfileError(
            f"{path}: cannot read it as a table ({type(e).__name__}: "
            f"{str(e).splitlines()[0][:160]}); expected one row per region"
        ) from None


def read_table_regions(path: Path) -> RegionProfile:
    """A CSV or Parquet table of regions (see the module docstring).

    Args:
        path: the table.

    Returns:
        The profile, checked.
    """
    df = _read_table_file(path)
    if df.height == 0:
        raise RegionProfileError(f"{path}: no regions; expected one row per timed region")
    if "exclusive_s" not in df.columns and "time_s" in df.columns:
        df = df.rename({"time_s": "exclusive_s"})
    missing = [c for c in ("region", "exclusive_s") if c not in df.columns]
    if missing:
        raise RegionProfileError(
            f"{path}: no column {' or '.join(missing)}; a region table needs region and "
            "exclusive_s (or time_s, seconds), and may add inclusive_s, calls, bytes, flops, "
            f"parent, category (it has {', '.join(df.columns)})"
        )
    bad = [
        c
        for c in ("exclusive_s", "inclusive_s", "calls", "bytes", "flops")
        if c in df.columns and not df.schema[c].is_numeric()
    ]
    if bad:
        raise RegionProfileError(f"{path}: columns {bad} hold text, not numbers")
    region = pl.col("region").cast(pl.String)
    df = df.with_columns(region.alias("region"))
    if "name" not in df.columns:
        df = df.with_columns(region.str.split("/").list.last().alias("name"))
    if "parent" not in df.columns:
        df = df.with_columns(
            pl.when(region.str.contains("/"))
            .then(region.str.replace(r"/[^/]*$", ""))
            .alias("parent")
        )
    has_work = any(c in df.columns for c in ("bytes", "flops"))
    df = df.with_columns(
        pl.lit("table: bytes and flops as given" if has_work else "none: time only").alias(
            "work_from"
        ),
        *(() if "category" in df.columns else (category_expr("name"),)),
    )
    regions = conform_regions(df)
    check_regions(regions, str(path))
    meta = ProfileMeta(
        path=str(path), format="region-table", app=path.stem, time_from="column exclusive_s"
    )
    return RegionProfile(meta, regions)
