"""Synthetic machines under a known law (a roofline with a per-kernel efficiency), shared by the
default predictor's and the contract's tests. Code paths only: no accuracy claim."""

from __future__ import annotations

import numpy as np
import polars as pl

MACHINES = {
    "a:cpu": (1e10, 1e11, 1e12, 1e-6),
    "b:gpu": (1e10, 1e12, 5e13, 5e-6),
    "c:gpu": (2e10, 2e12, 8e13, 4e-6),
    "d:cpu": (2e10, 2e11, 2e12, 2e-6),
}
GROUPS = ("G1", "G2", "G3", "G4", "G5")


def kernels(rng, n_kernels=60):
    """Kernels with a work profile and a hidden 'efficiency' that slows every machine alike (log10
    decades), plus a machine-specific part the physics cannot know."""
    return pl.DataFrame(
        {
            "app": [f"{GROUPS[i % 5]}_K{i}" for i in range(n_kernels)],
            "group": [GROUPS[i % 5] for i in range(n_kernels)],
            "log2_bytes": rng.uniform(14, 32, n_kernels),
            "ai": 10 ** rng.uniform(-2, 1.5, n_kernels),
            "eff": rng.uniform(0.0, 0.6, n_kernels),
        }
    )


def measured(
    target: str, b: np.ndarray, f: np.ndarray, eff: np.ndarray, noise: np.ndarray
) -> np.ndarray:
    bw_s, bw_l, fr, ovh = MACHINES[target]
    bw = np.where(b < 2**22, bw_s, bw_l)
    return (np.maximum(b / bw, f / fr) + ovh) * 10 ** (
        eff * (1.0 if target.endswith("cpu") else 0.5) + noise
    )


def world(seed=0, n_kernels=60):
    """(pairs, samples) of the synthetic machines: 3 sizes per kernel."""
    rng = np.random.default_rng(seed)
    k = kernels(rng, n_kernels)
    rows = []
    for sz in (0, 2, 4):
        b = 2.0 ** (k["log2_bytes"].to_numpy() - sz)
        f = b * k["ai"].to_numpy()
        for t in MACHINES:
            t_rep = measured(t, b, f, k["eff"].to_numpy(), rng.normal(0, 0.08, len(b)))
            rows.append(
                k.select("app", "group").with_columns(
                    pl.lit(t).alias("target"),
                    pl.lit(sz).alias("size_bucket"),
                    pl.Series("time_per_rep_s", t_rep),
                    pl.Series("bytes_per_rep", b),
                    pl.Series("flops_per_rep", f),
                    pl.lit(1.0).alias("kernels_per_rep"),
                    pl.lit(1e6).alias("iterations_per_rep"),
                )
            )
    s = pl.concat(rows).with_columns(
        (pl.col("time_per_rep_s") / 1e6).alias("runtime_s"),
        (pl.col("time_per_rep_s") / 1e6).log10().alias("f_log_s_per_iter"),
        (pl.col("flops_per_rep") / pl.col("bytes_per_rep")).alias("f_arith_intensity"),
        pl.col("size_bucket").cast(pl.Float64).alias("f_log_problem_size"),
    )
    t = s.select(
        "app",
        "size_bucket",
        pl.col("target").alias("target_t"),
        pl.col("runtime_s").alias("runtime_target"),
    )
    pairs = (
        s.join(t, on=["app", "size_bucket"])
        .filter(pl.col("target") != pl.col("target_t"))
        .with_columns(
            pl.col("target").alias("source"),
            pl.col("runtime_s").alias("runtime_source"),
            (pl.col("runtime_target") / pl.col("runtime_s")).alias("relR"),
        )
        .drop("target")
        .rename({"target_t": "target"})
    )
    return pairs.sort("app", "size_bucket", "source", "target"), s
