"""Split-conformal half-widths (xamm_models.predictors.default.conformal), checked against
hand-worked values."""

from __future__ import annotations

import numpy as np
import pytest

from xamm_models.predictors.default.conformal import (
    band_margin,
    halfwidths,
    signed_conformal,
    split_conformal,
)


def test_the_conformal_quantile_is_the_finite_sample_rank():
    r = np.arange(1, 11, dtype=float)  # |residuals| 1..10; 80%: rank ceil(11 * 0.8) = 9
    assert split_conformal(r, 0.8) == 9.0
    assert split_conformal(-r, 0.8) == 9.0
    assert split_conformal(r, 0.95) == 10.0  # rank 11 > n: the largest
    assert np.isnan(split_conformal(np.array([]), 0.8))


def test_a_scenario_with_too_few_residuals_is_sized_by_all_of_them():
    r = np.concatenate([np.full(30, 0.1), np.full(5, 2.0)])
    scen = np.array(["a"] * 30 + ["b"] * 5)
    hw = halfwidths(r, scen, 0.8, min_per_scenario=20)
    assert set(hw) == {"a", "all"}
    assert hw["a"] == pytest.approx(0.1) and hw["all"] == split_conformal(r, 0.8)


def test_the_signed_interval_takes_one_finite_sample_rank_per_tail():
    """Errors 1..19 (n = 19), 80%: ranks floor(20 * 0.1) = 2 and ceil(20 * 0.9) = 18; a shifted
    sample shifts both bounds, so the interval need not hold zero."""
    e = np.arange(1, 20, dtype=float)
    assert signed_conformal(e, 0.8) == (2.0, 18.0)
    assert signed_conformal(e[::-1] - 30, 0.8) == (-28.0, -12.0)
    assert signed_conformal(np.array([5.0, 1.0]), 0.8) == (1.0, 5.0)  # ranks clipped to 1 and n
    assert all(np.isnan(signed_conformal(np.array([]), 0.8)))


def test_signed_intervals_are_placed_by_the_inner_residuals_tails():
    """``choose(signed=True)``: per scenario the half-width and shift come from the signed tails of
    truth minus answer; a plain choice has no shift; signed and scaled together are refused."""
    import polars as pl

    from xamm_models.predictors.default.selection import choose

    rng = np.random.default_rng(0)
    y = np.concatenate([rng.normal(0.5, 0.1, 60), rng.normal(0.0, 0.1, 60)])
    inner = pl.DataFrame(
        {
            "scenario": ["CPU->GPU"] * 60 + ["CPU->CPU"] * 60,
            "app": [f"k{i % 30}" for i in range(120)],
            "y": y,
            "roofline": np.zeros(120),
            "scale": np.ones(120),
        }
    )
    c = choose(inner, signed=True, n_boot=50)
    lo, hi = signed_conformal(y[:60], 0.8)
    assert c.shift["CPU->GPU"] == pytest.approx((lo + hi) / 2) and lo > 0
    assert c.factor["CPU->GPU"] == pytest.approx((hi - lo) / 2)
    assert c.factor["CPU->GPU"] < split_conformal(y[:60], 0.8) / 2
    assert choose(inner, n_boot=50).shift == {}
    with pytest.raises(ValueError, match="signed or scaled"):
        choose(inner, signed=True, scaled=True)


def test_the_band_margin_is_the_finite_sample_rank_of_how_far_errors_fall_outside():
    """Bands [0, 1] and errors -0.9, -0.8, ..., 1.9 (n = 19): scores max(-e, e - 1) are
    0.9 .. 0.1, -0.0 .. -0.5 (inside), 0.1 .. 0.9; 80%: rank ceil(20 * 0.8) = 16 of the sorted
    scores. Errors well inside give a negative margin: the bands narrow."""
    e = np.round(np.arange(-0.9, 1.95, 0.15), 10)
    lo, hi = np.zeros(len(e)), np.ones(len(e))
    scores = np.sort(np.maximum(lo - e, e - hi))
    assert band_margin(lo, hi, e, 0.8) == pytest.approx(scores[15])
    inside = np.full(10, 0.5)
    assert band_margin(np.zeros(10), np.ones(10), inside, 0.8) == pytest.approx(-0.5)
    assert band_margin(np.zeros(3), np.ones(3), np.array([2.0, 3.0, 0.5]), 0.8) == 2.0  # rank > n
    assert np.isnan(band_margin(np.array([]), np.array([]), np.array([]), 0.8))
