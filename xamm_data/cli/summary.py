"""Short human summaries of xamm tables."""

from __future__ import annotations

import polars as pl


def summarize_benchmark_runs(df: pl.DataFrame) -> pl.DataFrame:
    """One row per (machine, device): kernels, variants, tunings, problem sizes, trials, rows,
    sources."""
    if df.is_empty():
        return pl.DataFrame()
    return (
        df.group_by("machine", "device")
        .agg(
            pl.col("kernel").n_unique().alias("kernels"),
            pl.col("variant").unique().sort().str.join(",").alias("variants"),
            pl.col("tuning").n_unique().alias("tunings"),
            pl.col("problem_size").n_unique().alias("problem_sizes"),
            (pl.col("trial").max() + 1).alias("max_trials"),
            pl.len().alias("rows"),
            pl.col("source_sha256").n_unique().alias("source_files"),
            pl.col("time_per_rep_s").median().alias("median_time_per_rep_s"),
        )
        .sort("machine", "device")
    )


def print_frame(df: pl.DataFrame, title: str | None = None, *, file=None) -> None:
    """Print a small frame as a table (rich when available)."""
    try:
        from rich.console import Console  # only when something is printed
        from rich.table import Table  # only when something is printed
    except ImportError:  # pragma: no cover
        print(df, file=file)
        return
    table = Table(title=title)
    for c in df.columns:
        table.add_column(c, overflow="fold")
    for row in df.iter_rows():
        table.add_row(
            *("" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v)) for v in row)
        )
    Console(file=file, width=160).print(table)
