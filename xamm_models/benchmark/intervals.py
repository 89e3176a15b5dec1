"""How sharp an entry's intervals are, beside the plain roofline's at the same coverage.

For the pairs one entry answered with an interval (``y_lo``, ``y_hi``), per left-out machine and
pooled:

* ``coverage``: the fraction of truths inside;
* ``median_width``: the median interval width, log10(hi / lo);
* ``interval_score``: the mean interval score at the nominal level (Gneiting and Raftery 2007):
  width + (2 / alpha) x how far the truth fell outside, in log10;
* ``roofline_width``: the width of the symmetric log interval around the plain roofline's answer
  that covers the *same* fraction of these pairs (chosen on the pairs themselves: the best any
  constant-width interval around the roofline could do), and its interval score;
* ``narrower``: 1 - median_width / roofline_width (above 0: the entry's intervals are narrower at
  equal coverage), with a 90% bootstrap interval over kernels.
"""

from __future__ import annotations

import numpy as np
import polars as pl

__all__ = ["sharpness"]


def _narrower(y: np.ndarray, lo: np.ndarray, hi: np.ndarray, roof: np.ndarray):
    """Coverage, median width, the roofline's half-width at that coverage, and ``narrower``."""
    cov = float(((y >= lo) & (y <= hi)).mean())
    width = float(np.median(hi - lo))
    half = float(np.quantile(np.abs(y - roof), cov))
    return cov, width, half, (1 - width / (2 * half) if half > 0 else float("nan"))


def _figures(y: np.ndarray, lo: np.ndarray, hi: np.ndarray, roof: np.ndarray, alpha: float):
    cov, width, half, narrower = _narrower(y, lo, hi, roof)
    score = (hi - lo) + 2 / alpha * (np.clip(lo - y, 0, None) + np.clip(y - hi, 0, None))
    roof_score = 2 * half + 2 / alpha * np.clip(np.abs(y - roof) - half, 0, None)
    return {
        "coverage": cov,
        "median_width": width,
        "interval_score": float(score.mean()),
        "roofline_width": 2 * half,
        "roofline_interval_score": float(roof_score.mean()),
        "narrower": narrower,
    }


def _one(df: pl.DataFrame, alpha: float, n_boot: int, seed: int) -> dict:
    y, lo, hi, roof = (
        np.log10(df.get_column(c).to_numpy()) for c in ("y_true", "y_lo", "y_hi", "roof")
    )
    out = _figures(y, lo, hi, roof, alpha)
    apps, inverse = np.unique(df.get_column("app").to_numpy(), return_inverse=True)
    rows = [np.flatnonzero(inverse == k) for k in range(len(apps))]
    rng = np.random.default_rng(seed)
    got = []
    for _ in range(n_boot):
        pick = np.concatenate([rows[k] for k in rng.integers(0, len(apps), len(apps))])
        got.append(_narrower(y[pick], lo[pick], hi[pick], roof[pick])[3])
    draws = np.asarray(got)
    draws = draws[np.isfinite(draws)]
    out["narrower_lo"], out["narrower_hi"] = (
        (float(np.quantile(draws, 0.05)), float(np.quantile(draws, 0.95)))
        if len(draws)
        else (float("nan"), float("nan"))
    )
    out["n"] = df.height
    return out


def sharpness(
    preds: pl.DataFrame,
    roofline: pl.DataFrame,
    *,
    coverage: float = 0.8,
    n_boot: int = 300,
    seed: int = 0,
) -> dict[str, dict]:
    """Per left-out machine (the targets' machine) and ``"all machines"``: the figures of the
    module docstring.

    Args:
        preds: one entry's predictions with ``y_lo`` and ``y_hi``.
        roofline: the plain roofline's predictions of the same rows, in the same order.
        coverage: the intervals' nominal coverage.
        n_boot: bootstrap resamples of the kernels.
        seed: the bootstrap's seed.

    Returns:
        Machine -> figures.
    """
    df = preds.with_columns(
        roofline.get_column("y_pred").alias("roof"),
        pl.col("target").str.split(":").list.first().alias("_m"),
    )
    alpha = 1 - coverage
    out = {"all machines": _one(df, alpha, n_boot, seed)}
    for (m,), part in df.group_by(["_m"], maintain_order=True):
        out[m] = _one(part, alpha, n_boot, seed)
    return out
