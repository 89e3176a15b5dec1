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


def _pair_codes(df: pl.DataFrame) -> tuple[np.ndarray, int]:
    """A dense code per (source, target), in sorted order: numpy sums over it are sequential, so the
    same input always gives the same bits (polars' parallel group sums need not)."""
    keys = df.select(pl.concat_str("source", pl.lit("\x00"), "target")).to_series().to_numpy()
    uniq, codes = np.unique(keys, return_inverse=True)
    return codes, len(uniq)


def _centred_log_truth(df: pl.DataFrame, codes: np.ndarray, P: int) -> np.ndarray:
    lt = np.log(df.get_column("y_true").to_numpy())
    return lt - (np.bincount(codes, lt, P) / np.bincount(codes, minlength=P))[codes]


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


class _KernelStats:
    """Per-kernel sufficient statistics of one prediction frame: every metric of a resample of
    kernels is a function of how often each kernel was drawn (a weight vector), so a thousand
    resamples are a few matrix products instead of a thousand frames."""

    def __init__(self, df: pl.DataFrame):
        self.apps = df.get_column("app").unique().sort().to_list()
        idx = {a: i for i, a in enumerate(self.apps)}
        err = (pl.col("y_pred") / pl.col("y_true")).log10().abs()
        d = df.with_columns(
            err.alias("_err"),
            pl.col("app").replace_strict(idx, return_dtype=pl.Int64).alias("_k"),
            ((pl.col("y_pred") - pl.col("y_true")).abs() / pl.col("y_true") * 100).alias("_ape"),
        )
        K = len(self.apps)
        k = d.get_column("_k").to_numpy()
        e = d.get_column("_err").to_numpy()
        self.n = np.bincount(k, minlength=K).astype(float)
        self.sums = {
            "within_1_25": np.bincount(k, e <= math.log10(1.25) + 1e-12, K),
            "within_2": np.bincount(k, e <= math.log10(2) + 1e-12, K),
            "mape": np.bincount(k, d.get_column("_ape").to_numpy(), K),
        }
        if "y_lo" in d.columns and "y_hi" in d.columns:
            inside = (d.get_column("y_true") >= d.get_column("y_lo")) & (
                d.get_column("y_true") <= d.get_column("y_hi")
            )
            self.sums["coverage"] = np.bincount(k, inside.to_numpy().astype(float), K)
        order = np.argsort(e, kind="stable")
        self.err_sorted, self.k_sorted = e[order], k[order]
        self._pairs(d, K)
        self._ranks(d, K)

    def _pairs(self, d: pl.DataFrame, K: int) -> None:
        p, P = _pair_codes(d)
        k = d.get_column("_k").to_numpy()
        lt = _centred_log_truth(d, p, P)
        res = (
            np.log(d.get_column("y_true").to_numpy()) - np.log(d.get_column("y_pred").to_numpy())
        ) ** 2
        self.pair_n, self.pair_s, self.pair_s2, self.pair_res = (np.zeros((K, P)) for _ in range(4))
        np.add.at(self.pair_n, (k, p), 1.0)
        np.add.at(self.pair_s, (k, p), lt)
        np.add.at(self.pair_s2, (k, p), lt**2)
        np.add.at(self.pair_res, (k, p), res)

    def _ranks(self, d: pl.DataFrame, K: int) -> None:
        g = d.select("sample", "source", "target", "y_true", "y_pred", "_k")
        pairs = g.join(g.drop("_k"), on=["sample", "source"], suffix="_b").filter(
            (pl.col("target") < pl.col("target_b")) & (pl.col("y_true") != pl.col("y_true_b"))
        )
        score = (
            pl.when(pl.col("y_pred") == pl.col("y_pred_b"))
            .then(0.5)
            .when(
                (pl.col("y_true") < pl.col("y_true_b")) == (pl.col("y_pred") < pl.col("y_pred_b"))
            )
            .then(1.0)
            .otherwise(0.0)
        )
        pk = pairs.get_column("_k").to_numpy()
        self.rank_hit = np.bincount(pk, pairs.select(score).to_series().to_numpy(), K)
        self.rank_n = np.bincount(pk, minlength=K).astype(float)
        top = (
            g.group_by("sample", "source")
            .agg(
                pl.col("_k").first(),
                (
                    pl.col("target").sort_by("y_true").first()
                    == pl.col("target").sort_by("y_pred").first()
                ).alias("hit"),
                pl.len().alias("n"),
            )
            .filter(pl.col("n") >= 2)
        )
        tk = top.get_column("_k").to_numpy()
        self.top_hit = np.bincount(tk, top.get_column("hit").to_numpy().astype(float), K)
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
    rng = np.random.default_rng(seed)
    return (
        np.stack(
            [
                np.bincount(rng.integers(0, n_kernels, n_kernels), minlength=n_kernels)
                for _ in range(n)
            ]
        ).astype(float)
        if n
        else np.zeros((0, n_kernels))
    )


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
