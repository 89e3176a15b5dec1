"""Interval sharpness beside the roofline's at equal coverage, against a hand computation."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from xamm_models.benchmark.intervals import sharpness


def test_sharpness_matches_a_hand_computation():
    rng = np.random.default_rng(0)
    n = 400
    y = 10 ** rng.normal(0, 0.3, n)
    roof = y * 10 ** rng.normal(0, 0.2, n)  # the roofline off by ~0.2 decades
    half = np.where(np.arange(n) % 2 == 0, 0.1, 0.4)  # half the intervals narrow, half wide
    frame = pl.DataFrame(
        {
            "sample": [f"s{i}" for i in range(n)],
            "app": [f"k{i % 40}" for i in range(n)],
            "source": ["a:cpu"] * n,
            "target": ["b:gpu" if i < n // 2 else "c:gpu" for i in range(n)],
            "y_true": y,
            "y_pred": y,
            "y_lo": y / 10**half * 10 ** rng.normal(0, 0.05, n),
            "y_hi": y * 10**half * 10 ** rng.normal(0, 0.05, n),
        }
    )
    roofline = frame.with_columns(pl.Series("y_pred", roof))
    got = sharpness(frame, roofline, n_boot=50)
    assert set(got) == {"all machines", "b", "c"}
    a = got["all machines"]
    lg = np.log10
    lo, hi, yy = lg(frame["y_lo"].to_numpy()), lg(frame["y_hi"].to_numpy()), lg(y)
    cov = ((yy >= lo) & (yy <= hi)).mean()
    assert a["coverage"] == pytest.approx(cov)
    assert a["median_width"] == pytest.approx(np.median(hi - lo))
    w = 2 * np.quantile(np.abs(yy - lg(roof)), cov)
    assert a["roofline_width"] == pytest.approx(w)
    assert a["narrower"] == pytest.approx(1 - np.median(hi - lo) / w)
    assert a["narrower_lo"] <= a["narrower"] <= a["narrower_hi"]
    score = (hi - lo) + 10 * (np.clip(lo - yy, 0, None) + np.clip(yy - hi, 0, None))
    assert a["interval_score"] == pytest.approx(score.mean())
