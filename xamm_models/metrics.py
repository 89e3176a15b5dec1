"""Log-scale metrics of relR predictions, within machine pairs, with bootstrap intervals over kernels.

relR spans orders of magnitude, and a model that only learns each machine pair's offset already looks
good on pooled figures, so the primary metrics are on the log scale and taken within the pair:

* ``within_1_25`` / ``within_2``: fraction of predictions within 1.25x / 2x of the truth;
* ``median_abs_log10``: median |log10(pred / true)|;
* ``r2_log_within_pair``: R^2 of log relR computed inside each (source, target) pair with at least
  three rows and some spread, then averaged over pairs;
* ``ranking_accuracy``: over every (sample, source) and every two of its targets, is the faster one
  predicted faster? Ties in the prediction count half; ties in the truth are skipped;
* ``top1_accuracy``: is the predicted fastest target the fastest;
* ``mape``: the paper's metric, kept for comparison. Its flaw: it is bounded by 100% for any
  under-prediction, so predicting a tiny constant scores about 100%, "better" than a model that is
  off by 3x upwards.

:func:`bootstrap` gives a 90% percentile interval by resampling kernels (``app``) with replacement,
and :func:`compare` the paired difference of two prediction sets scored on the same resamples.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

METRICS = ("within_1_25", "within_2", "median_abs_log10", "r2_log_within_pair", "ranking_accuracy", "top1_accuracy",
           "mape")
HIGHER_IS_BETTER = {"within_1_25": True, "within_2": True, "median_abs_log10": False, "r2_log_within_pair": True,
                    "ranking_accuracy": True, "top1_accuracy": True, "mape": False}
NEED = ("sample", "app", "source", "target", "y_true", "y_pred")


def _checked(df: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in NEED if c not in df.columns]
    if missing:
        raise ValueError(f"predictions lack columns {missing}; expected {list(NEED)} (app = the kernel resampled)")
    bad = ~(pl.col("y_true").is_finite() & (pl.col("y_true") > 0) & pl.col("y_pred").is_finite() & (pl.col("y_pred") > 0))
    n_bad = df.select(bad.sum()).item()
    if n_bad:
        raise ValueError(f"y_true and y_pred must be finite and > 0; {n_bad} row(s) are not")
    return df.with_columns(pl.col("y_true").cast(pl.Float64), pl.col("y_pred").cast(pl.Float64))


def _pointwise(df: pl.DataFrame) -> dict[str, float]:
    err = (pl.col("y_pred") / pl.col("y_true")).log10().abs()
    return df.select(
        (err <= math.log10(1.25) + 1e-12).mean().alias("within_1_25"),
        (err <= math.log10(2) + 1e-12).mean().alias("within_2"),
        err.median().alias("median_abs_log10"),
        ((pl.col("y_pred") - pl.col("y_true")).abs() / pl.col("y_true") * 100).mean().alias("mape"),
    ).row(0, named=True)


def _r2_within_pair(df: pl.DataFrame) -> float | None:
    lt, lp = pl.col("y_true").log(), pl.col("y_pred").log()
    per = (df.group_by("source", "target")
           .agg(((lt - lp) ** 2).sum().alias("res"), ((lt - lt.mean()) ** 2).sum().alias("tot"), pl.len().alias("n"))
           .filter((pl.col("n") >= 3) & (pl.col("tot") > 1e-12)))
    return float(per.select((1 - pl.col("res") / pl.col("tot")).mean()).item()) if per.height else None


def _ranking(df: pl.DataFrame) -> tuple[float | None, float | None]:
    """(pairwise ranking accuracy, top-1 accuracy) over (sample, source) groups."""
    g = df.select("sample", "source", "target", "y_true", "y_pred")
    pairs = g.join(g, on=["sample", "source"], suffix="_b").filter(pl.col("target") < pl.col("target_b"))
    pairs = pairs.filter(pl.col("y_true") != pl.col("y_true_b"))
    score = (pl.when(pl.col("y_pred") == pl.col("y_pred_b")).then(0.5)
             .when((pl.col("y_true") < pl.col("y_true_b")) == (pl.col("y_pred") < pl.col("y_pred_b"))).then(1.0)
             .otherwise(0.0))
    ranking = float(pairs.select(score.mean()).item()) if pairs.height else None
    top = (g.group_by("sample", "source")
           .agg(pl.col("target").sort_by("y_true").first().alias("best_true"),
                pl.col("target").sort_by("y_pred").first().alias("best_pred"), pl.len().alias("n"))
           .filter(pl.col("n") >= 2))
    top1 = float(top.select((pl.col("best_true") == pl.col("best_pred")).mean()).item()) if top.height else None
    return ranking, top1


def score(df: pl.DataFrame) -> dict[str, float | None]:
    """Every metric of :data:`METRICS` for one prediction frame (see the module docstring)."""
    df = _checked(df)
    out = _pointwise(df)
    out["r2_log_within_pair"] = _r2_within_pair(df)
    out["ranking_accuracy"], out["top1_accuracy"] = _ranking(df)
    out["n"] = df.height
    return out


def _resamples(df: pl.DataFrame, n: int, seed: int):
    """Frames resampled by kernel (``app``) with replacement; a drawn kernel keeps all its rows."""
    apps = df.get_column("app").unique(maintain_order=True).sort().to_list()
    rng = np.random.default_rng(seed)
    parts = {a: p for (a,), p in df.group_by(["app"], maintain_order=True)}
    for _ in range(n):
        picks = rng.integers(0, len(apps), len(apps))
        yield pl.concat([parts[apps[i]].with_columns(pl.lit(f"{apps[i]}#{j}").alias("sample_draw"))
                         for j, i in enumerate(picks)])


def _resampled(frame: pl.DataFrame) -> pl.DataFrame:
    """A drawn kernel's rows keep distinct sample ids per draw, so its ranking groups count once per draw."""
    return frame.with_columns(pl.concat_str("sample", pl.lit("|"), "sample_draw").alias("sample")).drop("sample_draw")


def bootstrap(df: pl.DataFrame, *, n: int = 500, seed: int = 0, level: float = 0.9) -> dict[str, dict]:
    """{metric: {"value", "lo", "hi"}}: the point estimate and a ``level`` percentile interval over
    ``n`` resamples of the kernels. Seeded: the same input gives the same interval."""
    point = score(df)
    draws = [score(_resampled(r)) for r in _resamples(_checked(df), n, seed)]
    q = ((1 - level) / 2, 1 - (1 - level) / 2)
    out = {}
    for m in METRICS:
        xs = np.array([d[m] for d in draws if d[m] is not None], dtype=float)
        lo, hi = (np.quantile(xs, q) if len(xs) else (math.nan, math.nan))
        out[m] = {"value": point[m], "lo": float(lo), "hi": float(hi)}
    return out


def compare(a: pl.DataFrame, b: pl.DataFrame, *, n: int = 500, seed: int = 0, level: float = 0.9) -> dict[str, dict]:
    """{metric: {"difference", "lo", "hi", "better"}}: metric(a) - metric(b), on the same kernel resamples.

    ``a`` and ``b`` must hold predictions for the same rows (joined on sample, source, target).
    ``better`` is "a", "b" or "neither" (the interval includes 0), by the metric's direction.
    """
    keys = ["sample", "app", "source", "target"]
    joined = _checked(a).join(_checked(b).select(*keys, pl.col("y_pred").alias("y_pred_b")), on=keys, how="inner")
    if joined.height != a.height or joined.height != b.height:
        raise ValueError(f"the two prediction sets cover different rows ({a.height} vs {b.height}, {joined.height} shared)")
    pa, pb = score(joined), score(joined.with_columns(pl.col("y_pred_b").alias("y_pred")))
    diffs = {m: [] for m in METRICS}
    for r in _resamples(joined, n, seed):
        r = _resampled(r)
        sa, sb = score(r.drop("y_pred_b")), score(r.with_columns(pl.col("y_pred_b").alias("y_pred")).drop("y_pred_b"))
        for m in METRICS:
            if sa[m] is not None and sb[m] is not None:
                diffs[m].append(sa[m] - sb[m])
    q = ((1 - level) / 2, 1 - (1 - level) / 2)
    out = {}
    for m in METRICS:
        d = None if pa[m] is None or pb[m] is None else pa[m] - pb[m]
        lo, hi = np.quantile(diffs[m], q) if diffs[m] else (math.nan, math.nan)
        better = "neither"
        if lo > 0 or hi < 0:
            better = "a" if (hi < 0) != HIGHER_IS_BETTER[m] else "b"
        out[m] = {"difference": d, "lo": float(lo), "hi": float(hi), "better": better}
    return out
