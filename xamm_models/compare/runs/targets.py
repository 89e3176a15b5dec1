"""A target's runs, read and compared: :func:`target_runs` reads a target's ``benchmark_runs``
(store, Hub or the embedded snapshot), :func:`compare` compares a new target with references
(:func:`~xamm_models.compare.runs.comparison.compare_runs`) and :func:`describe_runs` says what a
set of runs is (sources, dates, compilers, variants, configurations).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from xamm_data.hub.datasets import load_dataset
from xamm_data.machines.targets import Target
from xamm_models.benchmark.spec import SIZE_RATIO
from xamm_models.compare.runs.comparison import Comparison, compare_runs

__all__ = ["COMPARED", "compare", "describe_runs", "target_runs"]

#: The columns a comparison reads: what is matched (kernel, variant, work and time per repetition),
#: the node configuration, what the runs are (:func:`describe_runs`) and what a certificate rests
#: on. Reading no others keeps a machine with a thousand runs to the memory of what is compared.
COMPARED = (
    "machine", "device", "suite", "suite_version", "kernel", "group", "variant", "backend",
    "tuning", "compiler", "compiler_flags", "problem_size", "threads", "ranks", "gpus",
    "omp_max_threads", "block_size", "trial", "time_per_rep_s", "iterations_per_rep",
    "kernels_per_rep", "bytes_per_rep", "flops_per_rep", "checksum_status", "source_path",
    "source_sha256", "run_date",
)  # fmt: skip


#: The columns read only to say what the runs are and which files they came from.
DESCRIBED = ("compiler", "compiler_flags", "source_path", "source_sha256")


def target_runs(name: str, *, store=None) -> tuple[str, pl.DataFrame]:
    """A target's ``benchmark_runs`` rows from the store, else the Hub at a pinned revision, else
    the embedded snapshot (as :func:`~xamm_data.hub.datasets.load_dataset`).

    Args:
        name: ``machine`` or ``machine:device``; a bare machine must have runs on one device only.
        store: the local store (default ``$XAMM_HOME/store``).

    Returns:
        (``machine:device``, its rows: the :data:`COMPARED` columns only, those of
        :data:`DESCRIBED` categorical).

    Raises:
        ValueError: no runs on the device named, or a bare machine with runs on several.
    """
    t = Target.parse(name)
    runs = load_dataset(t.machine, store=store, columns=COMPARED)
    devices = sorted(runs.get_column("device").drop_nulls().unique().to_list())
    if t.device is None:
        if len(devices) != 1:
            raise ValueError(
                f"{t.machine} has runs on {' and '.join(devices) or 'no device'}; name one: "
                + ", ".join(f"{t.machine}:{d}" for d in devices)
            )
        t = Target(t.machine, devices[0])
    # one value per source file, repeated on each of its rows: held once each
    rows = runs.filter(pl.col("device") == t.device).with_columns(
        pl.col(DESCRIBED).cast(pl.Categorical)
    )
    if rows.is_empty():
        raise ValueError(f"{t.machine} has no runs on {t.device} (it has {', '.join(devices)})")
    return str(t), rows


def compare(
    new: str,
    refs: list[str] | str,
    *,
    store: str | Path | None = None,
    family: str | None = None,
    size_ratio: float = SIZE_RATIO,
) -> Comparison:
    """Compare a new target with reference targets, kernel by kernel.

    Args:
        new: the new target (``machine`` or ``machine:device``).
        refs: one or more reference targets.
        store: the local store the runs are read from (default ``$XAMM_HOME/store``; machines not
            there come from the Hub at a pinned revision or the embedded snapshot).
        family: the variant family (``Base``, ``RAJA``, ``BabelStream``, ...; default: the first
            every target ran).
        size_ratio: how far apart matched problem sizes may be (default: the benchmark's 1.5;
            wider compares sizes whose cache regimes may differ, and the report says so).

    Returns:
        The :class:`Comparison`.
    """
    refs = [refs] if isinstance(refs, str) else list(refs)
    if not refs:
        raise ValueError("compare needs at least one reference target")
    runs = dict(target_runs(n, store=store) for n in [new, *refs])
    names = list(runs)
    if len(names) != len(refs) + 1:
        raise ValueError(f"a target is named twice: {new} {' '.join(refs)}")
    if size_ratio < 1:
        raise ValueError(f"size_ratio is a factor of at least 1, not {size_ratio}")
    return compare_runs(runs, names[0], names[1:], family=family, size_ratio=size_ratio)


def describe_runs(rows: pl.DataFrame) -> dict:
    """What a set of ``benchmark_runs`` rows is: rows, source files, first and last run date
    (ISO 8601), and the distinct compilers, compiler flags, variants and configurations
    (``ranks x threads``), each sorted.

    Args:
        rows: the rows.

    Returns:
        The description.
    """

    def distinct(c: str) -> list[str]:
        if c not in rows.columns:
            return []
        return sorted(str(x) for x in rows.get_column(c).drop_nulls().unique().to_list())

    dates = rows.get_column("run_date").drop_nulls() if "run_date" in rows.columns else None
    when = lambda d: d.isoformat() if d is not None else None  # noqa: E731
    configs = (
        rows.select("ranks", "threads").unique().iter_rows() if "ranks" in rows.columns else []
    )
    return {
        "rows": rows.height,
        "sources": len(distinct("source_sha256")) or len(distinct("source_path")),
        "first_run": when(dates.min()) if dates is not None and dates.len() else None,
        "last_run": when(dates.max()) if dates is not None and dates.len() else None,
        "compilers": distinct("compiler"),
        "flags": distinct("compiler_flags"),
        "variants": distinct("variant"),
        "configurations": sorted({f"{r}x{t}" for r, t in configs}),
    }
