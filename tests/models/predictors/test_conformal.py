"""Split-conformal half-widths (xamm_models.predictors.default.conformal), checked against
hand-worked values."""

from __future__ import annotations

import numpy as np
import pytest

from xamm_models.predictors.default.conformal import halfwidths, split_conformal


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
