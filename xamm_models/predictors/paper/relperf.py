"""Relative performance targets (xAMM paper Section IV-A, eq. 1) and preprocessing (IV-B).

**Direction, used everywhere in xamm**: relR(M_s -> M_t) = R_{M_t} / R_{M_s}, runtime on the target
over runtime on the source, exactly eq. 1. So relR > 1 means the application is *slower* on the
target and relR < 1 faster. (The paper's prose says "relR > 1 indicates how much faster the
application runs on the target", which contradicts its own formula; xamm follows the formula.)

Pairs are formed only between samples of the same application, parameters and configuration
(``keys``; nulls match nulls), on different targets. Targets are ``machine:device``. When problem
sizes differ across machines the samples' runtimes must already be per iteration; the frames built
by :mod:`xamm_models.features` are, and say so in ``runtime_per_iteration``.
"""

from __future__ import annotations

import polars as pl

from xamm_data.machines.targets import Target

DEFAULT_KEYS = ("app", "app_params", "threads", "ranks")


def with_target(df: pl.DataFrame) -> pl.DataFrame:
    if "target" in df.columns:
        return df
    return df.with_columns(Target.expr().alias("target"))


def drop_invalid(
    df: pl.DataFrame, features: list[str], runtime: str = "runtime_s"
) -> tuple[pl.DataFrame, dict]:
    """Drop samples with a missing or non-finite feature or a missing/non-positive runtime; report
    counts per reason."""
    checks = {
        f"{runtime} missing or <= 0": ~(
            pl.col(runtime).is_not_null() & (pl.col(runtime) > 0) & pl.col(runtime).is_finite()
        ),
    }
    for f in features:
        checks[f"{f} missing or not finite"] = (
            pl.col(f).is_null() | ~pl.col(f).cast(pl.Float64).is_finite()
        )
    flags = df.select([e.fill_null(True).alias(k) for k, e in checks.items()])
    report = {k: int(v) for k, v in flags.sum().row(0, named=True).items() if v}
    bad = (
        flags.select(pl.any_horizontal(pl.all())).to_series()
        if flags.width
        else pl.Series([False] * df.height)
    )
    report["dropped"] = int(bad.sum())
    report["kept"] = df.height - report["dropped"]
    return df.filter(~bad), report


def pair_relative(
    df: pl.DataFrame,
    keys: tuple[str, ...] = DEFAULT_KEYS,
    runtime: str = "runtime_s",
    carry: list[str] | None = None,
) -> pl.DataFrame:
    """All (source, target) pairs of matching samples with relR = runtime(target) /
    runtime(source). Several samples of one configuration on one target (trials) are averaged
    first.

    Args:
        df: samples with ``machine`` and ``device`` (or ``target``), the keys and ``runtime``.
        keys: the columns that make two samples the same application run.
        runtime: the runtime column.
        carry: the source sample's columns to keep (its features).

    Returns:
        The keys, ``source``, ``target``, ``relR``, the ``carry`` columns and
        ``runtime_source``/``runtime_target``.
    """
    df = with_target(df)
    carry = list(carry or [])
    keys = [k for k in keys if k in df.columns]
    per = df.group_by([*keys, "target"]).agg(
        pl.col(runtime).mean().alias("_rt"), *[pl.col(c).mean() for c in carry]
    )
    tgt = per.select(
        *keys, pl.col("target").alias("target_t"), pl.col("_rt").alias("runtime_target")
    )
    pairs = per.join(tgt, on=keys, how="inner", nulls_equal=True).filter(
        pl.col("target") != pl.col("target_t")
    )
    return pairs.select(
        *keys,
        pl.col("target").alias("source"),
        pl.col("target_t").alias("target"),
        (pl.col("runtime_target") / pl.col("_rt")).alias("relR"),
        pl.col("_rt").alias("runtime_source"),
        "runtime_target",
        *carry,
    ).sort([*keys, "source", "target"], nulls_last=True)
