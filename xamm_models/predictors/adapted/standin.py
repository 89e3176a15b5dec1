"""The public stand-in platform of few-shot adaptation: thicket-tutorial quartz runs with Caliper
top-down counters, described by columns the xAMM predictor never saw. The zoo builds the pretrained
``adapted`` model on it (:func:`platform_pairs`) and :mod:`xamm_models.studies.adaptation` measures
the adaptation curves on it (:func:`counter_runs`).
"""

from __future__ import annotations

import polars as pl

from xamm_models.features import feature_exprs

__all__ = [
    "COUNTER_SOURCE",
    "PLATFORM",
    "PLATFORM_FEATURES",
    "SOURCE_FEATURES",
    "TOPDOWN",
    "counter_runs",
    "platform_pairs",
]

SOURCE_FEATURES = [
    "f_log_bytes_per_iter",
    "f_log_flops_per_iter",
    "f_log_iters_per_rep",
    "f_arith_intensity",
    "f_log_problem_size",
    "f_log_kernels",
]

TOPDOWN = (
    "topdown_retiring",
    "topdown_frontend_bound",
    "topdown_backend_bound",
    "topdown_bad_speculation",
    "topdown_branch_mispredict",
    "topdown_machine_clears",
    "topdown_frontend_latency",
    "topdown_frontend_bandwidth",
    "topdown_memory_bound",
    "topdown_core_bound",
    "topdown_ext_mem_bound",
    "topdown_l1_bound",
    "topdown_l2_bound",
    "topdown_l3_bound",
)
COUNTER_SOURCE = "quartz-topdown:cpu"


def counter_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """``benchmark_runs`` rows with top-down counters (thicket-tutorial quartz: many compilers and
    -O levels) as samples described by :data:`SOURCE_FEATURES` and :data:`TOPDOWN`, labelled with
    log10 seconds per iteration."""
    iters = pl.coalesce(pl.col("iterations_per_rep"), pl.col("problem_size").cast(pl.Float64))
    r = runs.drop_nulls(list(TOPDOWN)).with_columns(
        iters.alias("_iters"), (pl.col("time_per_rep_s") / iters).alias("_s_iter")
    )
    r = r.with_columns(*feature_exprs()).with_columns(
        pl.col("kernels_per_rep").fill_null(1.0).clip(1.0).log10().alias("f_log_kernels")
    )
    return r.select("kernel", *SOURCE_FEATURES, *TOPDOWN, pl.col("f_log_s_per_iter"))


PLATFORM = "quartz-topdown:cpu"
PLATFORM_FEATURES = [*TOPDOWN, "f_log_s_per_iter", *SOURCE_FEATURES[:5]]


def platform_pairs(runs: pl.DataFrame, ds, *, max_buckets: int = 2) -> pl.DataFrame:
    """The public stand-in for :func:`~xamm_models.predictors.adapted.predictor.adapt`:
    thicket-tutorial quartz runs (many compilers and -O levels) as profiles of a platform
    :data:`PLATFORM` described by :data:`PLATFORM_FEATURES` (14 Caliper top-down counters, the time
    and workload figures; the xAMM predictor's columns lack the counters and include bandwidth and
    flop rate the platform lacks). One profile per kernel and build (its directory; the fastest
    tuning), paired with every ``xplat-rajaperf`` target's sample of the same kernel at the nearest
    size bucket within ``max_buckets`` (a factor 4 by default): ``relR`` = the target's seconds per
    iteration over the profile's."""
    iters = pl.coalesce(pl.col("iterations_per_rep"), pl.col("problem_size").cast(pl.Float64))
    r = runs.drop_nulls(list(TOPDOWN)).with_columns(
        iters.alias("_iters"),
        (pl.col("time_per_rep_s") / iters).alias("_s_iter"),
        pl.col("source_path").str.split("/").list.get(-2).alias("app_params"),
        pl.col("problem_size").cast(pl.Float64).log(2).round().cast(pl.Int64).alias("_bucket"),
    )
    r = (
        r.with_columns(*feature_exprs())
        .sort("_s_iter")
        .group_by("kernel", "app_params", maintain_order=True)
        .first()
    )
    prof = r.select(
        pl.col("kernel").alias("app"), "app_params", "_bucket", "_s_iter", *PLATFORM_FEATURES
    ).sort("app", "app_params")
    tgt = ds.samples.select("app", "target", "size_bucket", pl.col("runtime_s").alias("_t"))
    near = (
        prof.select("app", "_bucket")
        .unique()
        .join(tgt, on="app")
        .with_columns((pl.col("size_bucket") - pl.col("_bucket")).abs().alias("_d"))
        .filter(pl.col("_d") <= max_buckets)
        .sort("_d", "size_bucket")
        .group_by("app", "_bucket", "target")
        .first()
    )
    return (
        prof.join(near, on=["app", "_bucket"])
        .with_columns(
            (pl.col("_t") / pl.col("_s_iter")).alias("relR"), pl.lit(PLATFORM).alias("source")
        )
        .select(
            pl.concat_str("app", pl.lit("|"), "app_params").alias("sample"),
            "app",
            "app_params",
            "source",
            "target",
            "relR",
            *PLATFORM_FEATURES,
        )
        .sort("sample", "target")
    )
