"""RAJAPerf kernels treated as applications: the public stand-in for the paper's application data.

Each (target, kernel, size bucket) becomes one application sample whose features are what a profile
on that machine would give. The size bucket is round(log2(problem size)): runs of a kernel at
similar sizes on different machines form one configuration, so pairs only compare like with like
(the H100 and MI300A sweeps give different sizes for the same sweep factor; quartz ran 1M-8M).

* the kernel's per-iteration work: log10 bytes, flops and iterations per rep, arithmetic intensity
  (flops / byte), log10 problem size;
* the measured behaviour: log10 seconds per iteration, log10 bandwidth and flop rate;
* top-down fractions where the source has them (else null and dropped by feature selection).

``runtime_s`` is seconds **per iteration** (``runtime_per_iteration`` is true), because sizes within
a bucket still differ by up to 2x, so relR compares per-iteration times. The fastest variant and
tuning per target is used (a user moving to a machine runs its best implementation), and trials are
averaged.
"""

from __future__ import annotations

import polars as pl

FEATURES = (
    "f_log_bytes_per_iter",
    "f_log_flops_per_iter",
    "f_log_iters_per_rep",
    "f_arith_intensity",
    "f_log_problem_size",
    "f_log_s_per_iter",
    "f_log_bandwidth",
    "f_log_flop_rate",
)


def feature_exprs() -> list[pl.Expr]:
    """:data:`FEATURES` from per-rep columns ``bytes_per_rep``, ``flops_per_rep``, ``problem_size``,
    iterations per rep in ``_iters`` and seconds per iteration in ``_s_iter``; log10(0) becomes the
    floor -12, and the arithmetic intensity of a kernel with no bytes 0."""
    raw = {
        "f_log_bytes_per_iter": (pl.col("bytes_per_rep") / pl.col("_iters")).log10(),
        "f_log_flops_per_iter": (pl.col("flops_per_rep") / pl.col("_iters")).log10(),
        "f_log_iters_per_rep": pl.col("_iters").log10(),
        "f_arith_intensity": (pl.col("flops_per_rep") / pl.col("bytes_per_rep")).fill_nan(0.0),
        "f_log_problem_size": pl.col("problem_size").cast(pl.Float64).log10(),
        "f_log_s_per_iter": pl.col("_s_iter").log10(),
        "f_log_bandwidth": (pl.col("bytes_per_rep") / pl.col("_iters") / pl.col("_s_iter")).log10(),
        "f_log_flop_rate": (pl.col("flops_per_rep") / pl.col("_iters") / pl.col("_s_iter")).log10(),
    }
    return [pl.when(e.is_infinite()).then(-12.0).otherwise(e).alias(f) for f, e in raw.items()]


def _rate_features() -> list[pl.Expr]:
    """The features of one kernel's per-iteration figures (``_iters``, ``_s_iter`` per sample)."""
    return [
        pl.col("_iters").log10().alias("f_log_iters_per_rep"),
        (pl.col("flops_per_rep") / pl.col("bytes_per_rep")).alias("f_arith_intensity"),
        pl.col("problem_size").cast(pl.Float64).log10().alias("f_log_problem_size"),
        pl.col("_s_iter").log10().alias("f_log_s_per_iter"),
        (pl.col("bytes_per_rep") / pl.col("_iters") / pl.col("_s_iter"))
        .log10()
        .alias("f_log_bandwidth"),
        (pl.col("flops_per_rep") / pl.col("_iters") / pl.col("_s_iter"))
        .log10()
        .alias("f_log_flop_rate"),
    ]


def kernel_app_samples(runs: pl.DataFrame) -> pl.DataFrame:
    """One app sample per (machine, device, kernel, size index) from ``benchmark_runs`` rows."""
    iters = pl.coalesce(pl.col("iterations_per_rep"), pl.col("problem_size").cast(pl.Float64))
    base = runs.with_columns(
        (pl.col("time_per_rep_s") / iters).alias("_s_iter"),
        iters.alias("_iters"),
    ).with_columns(
        pl.col("problem_size").cast(pl.Float64).log(2).round().cast(pl.Int64).alias("size_bucket"),
    )
    per = (
        base.group_by("machine", "device", "kernel", "size_bucket", "variant", "tuning")
        .agg(
            pl.col("_s_iter").mean(),
            pl.col("_iters").mean(),
            pl.col("problem_size").mean(),
            pl.col("bytes_per_rep").mean(),
            pl.col("flops_per_rep").mean(),
            pl.col("source_sha256").sort().first().alias("source_sha256"),
        )
        .sort("_s_iter")
        .group_by("machine", "device", "kernel", "size_bucket", maintain_order=True)
        .first()
    )
    return (
        per.select(
            pl.col("kernel").alias("app"),
            pl.format('{{"size_bucket":{}}}', pl.col("size_bucket")).alias("app_params"),
            "machine",
            "device",
            "kernel",
            "size_bucket",
            pl.lit(None, dtype=pl.Int64).alias("threads"),
            pl.lit(None, dtype=pl.Int64).alias("ranks"),
            pl.col("_s_iter").alias("runtime_s"),
            pl.lit(True).alias("runtime_per_iteration"),
            (pl.col("bytes_per_rep") / pl.col("_iters")).log10().alias("f_log_bytes_per_iter"),
            (pl.col("flops_per_rep") / pl.col("_iters")).log10().alias("f_log_flops_per_iter"),
            *_rate_features(),
            "variant",
            "tuning",
            "source_sha256",
        )
        .with_columns(
            # log10(0) = -inf for kernels with no flops or bytes: mark them as a floor value, not
            # missing
            [
                pl.when(pl.col(f).is_infinite()).then(-12.0).otherwise(pl.col(f)).alias(f)
                for f in FEATURES
            ]
        )
        .with_columns(pl.col("f_arith_intensity").fill_nan(0.0))
        .sort("machine", "device", "app", "size_bucket")
    )
