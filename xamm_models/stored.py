"""What models read from a store or a table file: benchmark runs, application samples, and the
table version a model trained on a store records."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from xamm_data.store.parquet_depth import read_parquet
from xamm_data.store.store import Store
from xamm_models.features import kernel_app_samples

__all__ = ["data_version", "load_app_samples", "load_benchmark_runs"]


def load_benchmark_runs(path: Path, version: int | None = None) -> pl.DataFrame:
    """benchmark_runs rows from a store root (at its latest table version, or ``version``) or a
    Parquet file.

    Args:
        path: a store root or a Parquet file.
        version: the table version to read (a store only; default the latest).
    """
    if path.is_dir():
        return Store(path).scan("benchmark_runs", version=version).collect()
    return read_parquet(path)


def data_version(path: Path) -> int | None:
    """The benchmark_runs table version a store root is at (None for a file): what a model trained
    on it records.

    Args:
        path: a store root or a file.
    """
    return Store(path).version("benchmark_runs") if Path(path).is_dir() else None


def load_app_samples(path: Path, version: int | None = None) -> pl.DataFrame:
    """Application samples from a Parquet/CSV file, or RAJAPerf kernels-as-apps from a store root
    (``version``: that table version, e.g. the one a trained predictor recorded).

    Args:
        path: a Parquet or CSV file, or a store root.
        version: the store's table version to read (default the latest).
    """
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    if path.is_dir():
        return kernel_app_samples(load_benchmark_runs(path, version))
    return read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path)
