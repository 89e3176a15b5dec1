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


def target_runs(name: str, *, store=None) -> tuple[str, pl.LazyFrame]:
    """A target's ``benchmark_runs`` rows from the store, else the Hub at a pinned revision, else
    the embedded snapshot (as :func:`~xamm_data.hub.datasets.load_dataset`), lazily: each query on
    them (a comparison's samples, :func:`describe_runs`) parses what it needs and keeps its
    result, so a target's thousand runs cost the memory of what is compared, not of the rows.

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
    runs = load_dataset(t.machine, store=store, columns=COMPARED, lazy=True)
    have = runs.select(pl.col("device").drop_nulls().unique()).collect(engine="streaming")
    devices = sorted(have.get_column("device").to_list())
    if t.device is None:
        if len(devices) != 1:
            raise ValueError(
                f"{t.machine} has runs on {' and '.join(devices) or 'no device'}; name one: "
                + ", ".join(f"{t.machine}:{d}" for d in devices)
            )
        t = Target(t.machine, devices[0])
    if t.device not in devices:
        raise ValueError(f"{t.machine} has no runs on {t.device} (it has {', '.join(devices)})")
    # one value per source file, repeated on each of its rows: held once each
    rows = runs.filter(pl.col("device") == t.device).with_columns(
        pl.col(DESCRIBED).cast(pl.Categorical)
    )
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


def describe_runs(rows: pl.DataFrame | pl.LazyFrame) -> dict:
    """What a set of ``benchmark_runs`` rows is: rows, source files, first and last run date
    (ISO 8601), and the distinct compilers, compiler flags, variants and configurations
    (``ranks x threads``), each sorted.

    Args:
        rows: the rows (a ``LazyFrame`` is read in one query of its distinct values).

    Returns:
        The description.
    """
    have = set(rows.collect_schema().names())
    distinct = [c for c in ("source_sha256", "source_path", *_LISTED) if c in have]
    got = (
        rows.lazy()
        .select(
            pl.len().alias("_rows"),
            *(pl.col(c).drop_nulls().unique().cast(pl.String).implode() for c in distinct),
            *(
                [pl.col("run_date").min().alias("_first"), pl.col("run_date").max().alias("_last")]
                if "run_date" in have
                else []
            ),
            *(
                [pl.struct("ranks", "threads").unique().implode().alias("_configs")]
                if "ranks" in have
                else []
            ),
        )
        .collect(engine="streaming")
        .row(0, named=True)
    )
    listed = {c: sorted(got.get(c) or []) for c in ("source_sha256", "source_path", *_LISTED)}
    when = lambda d: d.isoformat() if d is not None else None  # noqa: E731
    return {
        "rows": got["_rows"],
        "sources": len(listed["source_sha256"]) or len(listed["source_path"]),
        "first_run": when(got.get("_first")),
        "last_run": when(got.get("_last")),
        "compilers": listed["compiler"],
        "flags": listed["compiler_flags"],
        "variants": listed["variant"],
        "configurations": sorted(
            {f"{c['ranks']}x{c['threads']}" for c in got.get("_configs") or []}
        ),
    }


#: The columns :func:`describe_runs` lists the distinct values of.
_LISTED = ("compiler", "compiler_flags", "variant")
