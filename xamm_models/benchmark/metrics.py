"""Log-scale metrics of relR predictions, within machine pairs, with bootstrap intervals over
kernels.

relR spans orders of magnitude, and a model that only learns each machine pair's offset already
looks good on pooled figures, so the primary metrics are on the log scale and taken within the pair:

* ``within_1_25`` / ``within_2``: fraction of predictions within 1.25x / 2x of the truth;
* ``median_abs_log10``: median |log10(pred / true)|;
* ``r2_log_within_pair``: R^2 of log relR computed inside each (source, target) pair with at least
  three rows and some spread, then averaged over pairs;
* ``ranking_accuracy``: over every (sample, source) and every two of its targets, is the faster one
  predicted faster? Ties in the prediction count half; ties in the truth are skipped;
* ``top1_accuracy``: is the predicted fastest target the fastest;
* ``coverage``: where the frame has an interval (``y_lo``, ``y_hi``), the fraction of truths inside
  it (None otherwise); neither higher nor lower is better: it should match the interval's nominal
  level;
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

METRICS = (
    "within_1_25",
    "within_2",
    "median_abs_log10",
    "r2_log_within_pair",
    "ranking_accuracy",
    "top1_accuracy",
    "mape",
    "coverage",
)
HIGHER_IS_BETTER = {
    "within_1_25": True,
    "within_2": True,
    "median_abs_log10": False,
    "r2_log_within_pair": True,
    "ranking_accuracy": True,
    "top1_accuracy": True,
    "mape": False,
    "coverage": None,
}
NEED = ("sample", "app", "source", "target", "y_true", "y_pred")


def _checked(df: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in NEED if c not in df.columns]
    if missing:
        raise ValueError(
            f"predictions lack columns {missing}; expected {list(NEED)} (app "
            "= the kernel resampled)"
        )
    if df.is_empty():
        raise ValueError("no predictions to score")
    bad = ~(
        pl.col("y_true").is_finite()
        & (pl.col("y_true") > 0)
        & pl.col("y_pred").is_finite()
        & (pl.col("y_pred") > 0)
    )
    n_bad = df.select(bad.sum()).item()
    if n_bad:
        raise ValueError(f"y_true and y_pred must be finite and > 0; {n_bad} row(s) are not")
    return df.with_columns(pl.col("y_true").cast(pl.Float64), pl.col("y_pred").cast(pl.Float64))


def score(df: pl.DataFrame) -> dict[str, float | None]:
    """Every metric of :data:`METRICS` for one prediction frame (see the module docstring).

    Args:
        df: one prediction frame.

    Returns:
        Metric -> value; None where a metric is undefined (no pair with spread, no sample with two
        targets).
    """
    df = _checked(df)
    return {**_KernelStats(df).point(), "n": df.height}


def _codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and each row's index into them."""
    return np.unique(values, return_inverse=True)


class _KernelStats:
    """Per-kernel sufficient statistics of one prediction frame: every metric of a resample of
    kernels is a function of how often each kernel was drawn (a weight vector), so a thousand
    resamples are a few matrix products instead of a thousand frames. The frame is read in one
    select; the rest is numpy, because the frames are small and a polars call per statistic costs
    more than the arithmetic."""

    def __init__(self, df: pl.DataFrame):
        d = df.select(
            pl.col("app").cast(pl.String),
            pl.col("y_true"),
            pl.col("y_pred"),
            (pl.col("y_pred") / pl.col("y_true")).log10().abs().alias("_err"),
            ((pl.col("y_pred") - pl.col("y_true")).abs() / pl.col("y_true") * 100).alias("_ape"),
            pl.concat_str("source", pl.lit("\x00"), "target").alias("_pair"),
            # a null sample or source is its own group, never part of a ranked pair
            pl.concat_str(
                *(pl.col(c).cast(pl.String).fill_null("\x01") for c in ("sample", "source")),
                separator="\x00",
            ).alias("_group"),
            (pl.col("sample").is_not_null() & pl.col("source").is_not_null()).alias("_keyed"),
            pl.col("target").cast(pl.String),
            *(
                [
                    ((pl.col("y_true") >= pl.col("y_lo")) & (pl.col("y_true") <= pl.col("y_hi")))
                    .cast(pl.Float64)
                    .alias("_inside")
                ]
                if "y_lo" in df.columns and "y_hi" in df.columns
                else []
            ),
        )
        apps, k = _codes(d.get_column("app").to_numpy())
        self.apps, K = apps.tolist(), len(apps)
        e = d.get_column("_err").to_numpy()
        self.n = np.bincount(k, minlength=K).astype(float)
        self.sums = {
            "within_1_25": np.bincount(k, e <= math.log10(1.25) + 1e-12, K),
            "within_2": np.bincount(k, e <= math.log10(2) + 1e-12, K),
            "mape": np.bincount(k, d.get_column("_ape").to_numpy(), K),
        }
        if "_inside" in d.columns:
            self.sums["coverage"] = np.bincount(k, d.get_column("_inside").to_numpy(), K)
        order = np.argsort(e, kind="stable")
        self.err_sorted, self.k_sorted = e[order], k[order]
        yt, yp = d.get_column("y_true").to_numpy(), d.get_column("y_pred").to_numpy()
        self._pairs(d.get_column("_pair").to_numpy(), k, K, yt, yp)
        self._ranks(d, k, K, yt, yp)

    def _pairs(self, pair: np.ndarray, k: np.ndarray, K: int, yt, yp) -> None:
        """Per (kernel, machine pair): count, sums of centred log truth and its square, and the
        squared log residual (bincount sums in row order: the same bits on any run)."""
        _, p = _codes(pair)
        P = int(p.max()) + 1
        lt = np.log(yt)
        lt = lt - (np.bincount(p, lt, P) / np.bincount(p, minlength=P))[p]
        res = (np.log(yt) - np.log(yp)) ** 2
        cell = k * P + p
        self.pair_n, self.pair_s, self.pair_s2, self.pair_res = (
            np.bincount(cell, w, K * P).reshape(K, P) for w in (None, lt, lt**2, res)
        )

    def _ranks(self, d: pl.DataFrame, k: np.ndarray, K: int, yt, yp) -> None:
        """Ranking and top-1 hits per kernel, over each (sample, source)'s targets."""
        _, g = _codes(d.get_column("_group").to_numpy())
        _, t = _codes(d.get_column("target").to_numpy())
        keyed = d.get_column("_keyed").to_numpy()
        order = np.lexsort((t, g))
        hit, at = [], []
        for step in range(1, int(np.bincount(g).max())):
            a, b = order[:-step], order[step:]
            ok = (g[a] == g[b]) & (t[a] != t[b]) & (yt[a] != yt[b]) & keyed[a]
            a, b = a[ok], b[ok]
            same = (yt[a] < yt[b]) == (yp[a] < yp[b])
            hit.append(np.where(yp[a] == yp[b], 0.5, same.astype(float)))
            at.append(k[a])
        pk = np.concatenate(at) if at else np.zeros(0, int)
        self.rank_hit = np.bincount(pk, np.concatenate(hit) if hit else None, K)
        self.rank_n = np.bincount(pk, minlength=K).astype(float)
        sizes = np.bincount(g)
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        # per group, sorted stably: its first row, the fastest measured, the fastest predicted
        first, fastest, picked = (np.lexsort((v, g))[starts] for v in (np.arange(len(g)), yt, yp))
        two = sizes >= 2
        tk = k[first][two]
        self.top_hit = np.bincount(tk, (t[fastest] == t[picked])[two].astype(float), K)
        self.top_n = np.bincount(tk, minlength=K).astype(float)

    def values(self, W: np.ndarray) -> dict[str, np.ndarray]:
        """Every metric for each row of ``W`` (draws x kernels: how often each kernel was drawn)."""
        n = W @ self.n
        out = {m: (W @ s) / n for m, s in self.sums.items()}
        out.setdefault("coverage", np.full(len(n), np.nan))
        out["median_abs_log10"] = self._median(W)
        out["r2_log_within_pair"] = self._r2(W)
        with np.errstate(invalid="ignore", divide="ignore"):
            out["ranking_accuracy"] = np.where(
                W @ self.rank_n > 0, (W @ self.rank_hit) / (W @ self.rank_n), np.nan
            )
            out["top1_accuracy"] = np.where(
                W @ self.top_n > 0, (W @ self.top_hit) / (W @ self.top_n), np.nan
            )
        return out

    def point(self) -> dict[str, float | None]:
        """The metrics of the frame itself (every kernel drawn once)."""
        v = self.values(np.ones((1, len(self.apps))))
        return {m: (None if not np.isfinite(v[m][0]) else float(v[m][0])) for m in METRICS}

    def _median(self, W: np.ndarray) -> np.ndarray:
        cum = np.cumsum(W[:, self.k_sorted], axis=1)
        total = cum[:, -1]
        lo_rank, hi_rank = np.floor((total - 1) / 2), np.ceil((total - 1) / 2)
        lo = self.err_sorted[(cum > lo_rank[:, None]).argmax(axis=1)]
        hi = self.err_sorted[(cum > hi_rank[:, None]).argmax(axis=1)]
        return (lo + hi) / 2

    def _r2(self, W: np.ndarray) -> np.ndarray:
        n, s, s2, res = (W @ a for a in (self.pair_n, self.pair_s, self.pair_s2, self.pair_res))
        with np.errstate(invalid="ignore", divide="ignore"):
            tot = s2 - np.where(n > 0, s * s / n, 0.0)
            ok = (n >= 3) & (tot > 1e-12)
            r2 = np.where(ok, 1 - res / np.where(ok, tot, 1.0), 0.0)
            return np.where(ok.any(axis=1), r2.sum(axis=1) / ok.sum(axis=1), np.nan)


def _draws(n_kernels: int, n: int, seed: int) -> np.ndarray:
    """(n x kernels) counts: resamples of the kernels with replacement, seeded."""
    # one call draws the same stream as n calls of n_kernels each (unbuffered int64 draws)
    picks = np.random.default_rng(seed).integers(0, n_kernels, (n, n_kernels))
    rows = np.arange(n)[:, None] * n_kernels
    counts = np.bincount((rows + picks).ravel(), minlength=n * n_kernels)
    return counts.reshape(n, n_kernels).astype(float)


def _interval(xs: np.ndarray, level: float) -> tuple[float, float]:
    xs = xs[np.isfinite(xs)]
    if not len(xs):
        return math.nan, math.nan
    lo, hi = np.quantile(xs, ((1 - level) / 2, 1 - (1 - level) / 2))
    return float(lo), float(hi)


def bootstrap(
    df: pl.DataFrame, *, n: int = 1000, seed: int = 0, level: float = 0.9
) -> dict[str, dict]:
    """Every metric with a percentile interval over resamples of the kernels (seeded).

    Args:
        df: one prediction frame.
        n: resamples.
        seed: the seed.
        level: the interval's level.

    Returns:
        ``{metric: {"value", "lo", "hi"}}``.
    """
    st = _KernelStats(_checked(df))
    point, vals = st.point(), st.values(_draws(len(st.apps), n, seed))
    out = {}
    for m in METRICS:
        lo, hi = _interval(vals[m], level)
        out[m] = {"value": point[m], "lo": lo, "hi": hi}
    return out


def compare(
    a: pl.DataFrame, b: pl.DataFrame, *, n: int = 1000, seed: int = 0, level: float = 0.9
) -> dict[str, dict]:
    """metric(a) - metric(b), on the same kernel resamples.

    Args:
        a: predictions for some rows (joined with ``b`` on sample, source, target).
        b: predictions for the same rows.
        n: resamples.
        seed: the seed.
        level: the interval's level.

    Returns:
        ``{metric: {"difference", "lo", "hi", "better"}}``; ``better`` is "a", "b" or
        "neither" (the interval includes 0), by the metric's direction.
    """
    keys = ["sample", "app", "source", "target"]
    # coverage is not compared: it has no direction
    a, b = (x.drop("y_lo", "y_hi", strict=False) for x in (a, b))
    joined = _checked(a).join(
        _checked(b).select(*keys, pl.col("y_pred").alias("y_pred_b")), on=keys, how="inner"
    )
    if joined.height != a.height or joined.height != b.height:
        raise ValueError(
            f"the two prediction sets cover different rows ({a.height} vs "
            f"{b.height}, {joined.height} shared)"
        )
    fa, fb = (
        joined.drop("y_pred_b"),
        joined.with_columns(pl.col("y_pred_b").alias("y_pred")).drop("y_pred_b"),
    )
    sa, sb = _KernelStats(fa), _KernelStats(fb)
    pa, pb = sa.point(), sb.point()
    W = _draws(len(sa.apps), n, seed)
    va, vb = sa.values(W), sb.values(W)
    out = {}
    for m in METRICS:
        d = None if pa[m] is None or pb[m] is None else pa[m] - pb[m]
        lo, hi = _interval(va[m] - vb[m], level)
        better = "neither"
        if HIGHER_IS_BETTER[m] is not None and (lo > 0 or hi < 0):
            better = "a" if (hi < 0) != HIGHER_IS_BETTER[m] else "b"
        out[m] = {"difference": d, "lo": lo, "hi": hi, "better": better}
    return out
