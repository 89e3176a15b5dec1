"""Benchmark samples: ``benchmark_runs`` pivoted to one sample per run configuration, one feature
per kernel.

This is the paper's machine-benchmark vector Z = [z_1 .. z_n] (Section III-A). Rules, all explicit:

* **Target**: a sample belongs to ``machine:device`` (``lassen:gpu`` from CUDA variants,
  ``quartz:cpu`` from Seq/OpenMP variants); a node's CPU and GPU are separate targets.
* **Sample key**: machine, device, variant, compiler, compiler flags, threads, ranks, trial and the
  size index. The size index is the dense rank of the kernel's problem size within that key (0 =
  smallest), so the i-th size of every kernel lines up whether a run used one ``--size`` for all
  kernels (Caliper runs) or swept sizes per kernel (the H100/MI300A CSV sweeps).
* **Tuning**: the fastest tuning of each (kernel, variant, ...) is kept: a machine's signature
  describes what it can do, not the tuning sweep.
* **Feature value**: log10 of seconds per iteration (time per rep / iterations per rep; problem size
  when iterations are unknown). Logs because kernels span six orders of magnitude.
* **Kernel alignment across machines** (:func:`align_kernels`): RAJAPerf versions and runs differ in
  their kernel sets. ``intersection`` (default) keeps the kernels every target has, so nothing is
  imputed; ``union`` (or ``min_coverage`` < 1) keeps kernels present on that fraction of targets and
  leaves the others null, to be imputed by the embedder's training mean. The list is stored with
  every embedder and signature.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from xamm_data.machines.targets import Target

SAMPLE_KEYS = (
    "machine",
    "device",
    "variant",
    "compiler",
    "compiler_flags",
    "threads",
    "ranks",
    "trial",
    "size_index",
)


def long_values(runs: pl.DataFrame) -> pl.DataFrame:
    """Per (sample key, kernel): the fastest tuning's log10 seconds per iteration."""
    keys_no_size = [k for k in SAMPLE_KEYS if k != "size_index"]
    iters = pl.coalesce(pl.col("iterations_per_rep"), pl.col("problem_size").cast(pl.Float64))
    return (
        runs.with_columns((pl.col("time_per_rep_s") / iters).log10().alias("value"))
        .group_by([*keys_no_size, "kernel", "problem_size"])
        .agg(pl.col("value").min())
        .with_columns(
            pl.col("problem_size")
            .rank("dense")
            .over([*keys_no_size, "kernel"])
            .cast(pl.Int64)
            .sub(1)
            .alias("size_index")
        )
        .with_columns(Target.expr().alias("target"))
    )


def align_kernels(
    runs: pl.DataFrame, rule: str = "intersection", min_coverage: float | None = None
) -> list[str]:
    """The kernels used as features.

    Args:
        runs: ``benchmark_runs`` rows.
        rule: ``intersection`` (on every target) or ``union``.
        min_coverage: with ``union``, the fraction of targets a kernel must be on (default: any).

    Returns:
        The kernel names, sorted.
    """
    if rule not in ("intersection", "union"):
        raise ValueError(f"unknown alignment rule {rule!r}; expected 'intersection' or 'union'")
    cov = 1.0 if rule == "intersection" else (min_coverage if min_coverage is not None else 0.0)
    per = runs.select(Target.expr().alias("t"), "kernel").unique()
    n_targets = per.get_column("t").n_unique()
    counts = per.group_by("kernel").len()
    keep = counts.filter(
        pl.col("len") >= max(1, cov * n_targets) if cov > 0 else pl.col("len") >= 1
    )
    return sorted(keep.get_column("kernel").to_list())


def benchmark_samples(runs: pl.DataFrame, kernels: Iterable[str]) -> pl.DataFrame:
    """Wide samples: ``target``, the sample keys and one column per kernel (null where that
    kernel is missing); sorted by their keys, so the same runs always give the same samples.

    Args:
        runs: ``benchmark_runs`` rows.
        kernels: the kernels used as features.

    Returns:
        The samples.
    """
    kernels = list(kernels)
    lv = long_values(runs.filter(pl.col("kernel").is_in(kernels)))
    keys = ["target", *SAMPLE_KEYS]
    wide = lv.pivot(on="kernel", index=keys, values="value", aggregate_function="min")
    for k in kernels:
        if k not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(k))
    return wide.select(*keys, *kernels).sort(keys, nulls_last=True)
