"""``xplat-rajaperf``: a cross-platform benchmark built from the public RAJAPerf data.

The paper's application data set (649 samples, 5 apps, PAPI counters on quartz, ruby, corona) is not
public. This data set stands in for it: every RAJAPerf kernel is an application
(:mod:`xamm_models.kernel_apps`), its features are what a profile on the source would give, and the
target is relR to every other machine/processor at a matching configuration (same kernel, same
power-of-two problem-size bucket; per-iteration runtimes).

Versioned by content: ``version`` is the SHA-256 (first 16 hex digits) of the frame's columns and
values, so the same benchmark runs always give the same version.
"""

from __future__ import annotations

import polars as pl

from xamm_data.hashing import frame_sha256
from xamm_models.kernel_apps import FEATURES, kernel_app_samples

NAME = "xplat-rajaperf"

CAVEATS = (
    "RAJAPerf versions differ across machines (quartz/lassen runs: 2022-2023 RAJAPerf 1.10 / 2022.3; H100 and "
    "MI300A: the 2026 FCR benchmark), so kernel sets differ: only kernels run on both ends of a pair are paired.",
    "Problem sizes differ: the H100/MI300A sweeps and quartz/lassen runs share few sizes; samples are matched on "
    "round(log2(problem size)) and compared per iteration.",
    "Each target keeps its fastest variant and tuning per kernel and size; trials are averaged.",
    "A kernel is not an application: kernels are short, regular loops; relR between a CPU and a GPU spans four "
    "orders of magnitude, which dominates MAPE.",
    "Two machines (quartz CPU, lassen GPU) come from LLNL's Caliper files, two nodes (H100, MI300A) from RAJAPerf CSV "
    "files without hostnames; the MI300A node's CPU and GPU share memory (APU).",
)


def build(runs: pl.DataFrame) -> pl.DataFrame:
    """The data set from ``benchmark_runs`` rows (all machines)."""
    df = kernel_app_samples(runs)
    return df.with_columns(pl.col("app").str.split("_").list.first().alias("group"))


def version(df: pl.DataFrame) -> str:
    """The data set's version: the first 16 hex digits of its content hash."""
    return frame_sha256(df)[:16]


def card(df: pl.DataFrame) -> str:
    """A Markdown card: construction, machines, sizes, caveats."""
    per = (df.group_by("machine", "device").agg(pl.len().alias("samples"), pl.col("app").n_unique().alias("kernels"),
                                                 pl.col("size_bucket").min().alias("min_log2_size"),
                                                 pl.col("size_bucket").max().alias("max_log2_size"))
           .sort("machine", "device"))
    rows = "\n".join(f"| {r['machine']}:{r['device']} | {r['samples']} | {r['kernels']} | 2^{r['min_log2_size']} - 2^{r['max_log2_size']} |"
                     for r in per.iter_rows(named=True))
    caveats = "\n".join(f"- {c}" for c in CAVEATS)
    return f"""# {NAME} (version {version(df)})

RAJAPerf kernels as applications, for cross-platform relative-performance prediction.

## Construction
From the `benchmark_runs` table: one sample per (machine:device, kernel, round(log2 problem size)); runtime is
seconds per iteration of the fastest variant and tuning, trials averaged. Features: {', '.join(FEATURES)}.
Targets: relR = runtime(target) / runtime(source) between samples of the same kernel and size bucket.

## Machines
| target | samples | kernels | problem sizes |
|---|---|---|---|
{rows}

## Caveats
{caveats}
"""
