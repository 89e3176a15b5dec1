"""Conformal half-widths over inner folds and the choice of rule by leave-one-fold-out coverage
(xamm_models.predictors.default.conformal), checked against hand-worked values and brute-force
re-implementations."""

from __future__ import annotations

import numpy as np
import pytest

from xamm_models.predictors.default.conformal import (
    RULES,
    choose_rule,
    fold_mean_conformal,
    halfwidth,
    halfwidths,
    held_out_coverage,
)
from xamm_models.predictors.default.conformal import group_conformal as _group_conformal
from xamm_models.predictors.default.conformal import split_conformal as _conformal


def test_the_conformal_quantile_is_the_finite_sample_rank():
    r = np.arange(1, 11, dtype=float)  # |residuals| 1..10; 80%: rank ceil(11 * 0.8) = 9
    assert _conformal(r, 0.8) == 9.0
    assert _conformal(-r, 0.8) == 9.0
    assert _conformal(r, 0.95) == 10.0  # rank 11 > n: the largest


def test_the_group_conformal_half_width_is_a_rank_over_the_units_own_quantiles():
    """Each inner fold is one unit: position (G + 1) 0.8 among the G units' own 80% quantiles,
    interpolated (or, as an upper bound, the rank ceil((G + 1) 0.8)). A unit with most of the
    residuals does not outweigh the others, and a wide unit is not averaged away."""
    small, wide = np.linspace(0.01, 0.1, 100), np.linspace(0.1, 1.0, 10)
    r = np.concatenate([small, wide])
    units = np.repeat([0, 1], [100, 10])
    # rank 3 > G = 2: the largest
    assert _group_conformal(r, units, 0.8) == pytest.approx(np.quantile(wide, 0.8))
    # pooled over pairs, the wide unit is barely covered
    assert _conformal(r, 0.8) < np.quantile(wide, 0.2)
    nine = np.repeat(np.arange(9), 5)
    r9 = np.concatenate([np.full(5, float(u + 1)) for u in range(9)])
    # rank ceil(10 * 0.8) = 8 of the 9 quantiles 1..9
    assert _group_conformal(r9, nine, 0.8, upper=True) == 8.0
    six = np.repeat(np.arange(6), 5)
    r6 = np.concatenate([np.full(5, float(u + 1)) for u in range(6)])
    # position (6 + 1) 0.8 = 5.6 of the quantiles 1..6: 5 + 0.6 (1), below the rank rule's largest
    # (6)
    assert (
        _group_conformal(r6, six, 0.8) == pytest.approx(5.6)
        and _group_conformal(r6, six, 0.8, upper=True) == 6.0
    )


def _brute_fold_mean(r, units, coverage):
    """The smallest |residual| whose per-unit coverage, averaged with equal unit weights, reaches
    ``coverage``."""
    r = np.abs(r)
    for c in np.sort(r):
        if np.mean([np.mean(r[units == u] <= c) for u in np.unique(units)]) >= coverage - 1e-12:
            return c
    return r.max()


def test_the_fold_mean_half_width_weighs_every_fold_the_same():
    small, wide = np.linspace(0.01, 0.1, 100), np.linspace(0.1, 1.0, 10)
    r = np.concatenate([small, -wide])
    units = np.repeat([0, 1], [100, 10])
    # the small fold is all inside from 0.1 on, so the wide one needs 0.6 of its own: its 6th value,
    # 0.6
    assert fold_mean_conformal(r, units, 0.8) == pytest.approx(0.6)
    assert (
        _conformal(r, 0.8)
        < 0.1
        < fold_mean_conformal(r, units, 0.8)
        < _group_conformal(r, units, 0.8)
    )
    rng = np.random.default_rng(3)
    for _ in range(20):
        u = rng.integers(0, 5, 60)
        x = rng.standard_normal(60) * (1 + u)
        assert fold_mean_conformal(x, u, 0.8) == pytest.approx(_brute_fold_mean(x, u, 0.8))


def test_held_out_coverage_sizes_each_fold_on_the_others():
    r, units, scen = np.array([1.0, 2.0, 3.0]), np.array([0, 1, 2]), np.array(["s"] * 3)
    # pooled at 0.5: rank ceil(3 * 0.5) = 2 of the other two: {2,3} -> 3 (1 inside), {1,3} -> 3 (2
    # inside),
    # {1,2} -> 2 (3 outside)
    assert held_out_coverage("pooled", r, scen, units, 0.5, 1) == pytest.approx(2 / 3)
    # one fold: nothing to leave out
    assert np.isnan(held_out_coverage("pooled", r, scen, np.zeros(3), 0.5, 1))


def test_a_scenario_with_too_few_residuals_is_sized_by_all_of_them():
    r = np.concatenate([np.full(30, 0.1), np.full(5, 2.0)])
    scen = np.array(["a"] * 30 + ["b"] * 5)
    units = np.tile(np.arange(5), 7)
    hw = halfwidths("pooled", r, scen, units, 0.8, min_per_scenario=20)
    assert (
        set(hw) == {"a", "all"}
        and hw["a"] == pytest.approx(0.1)
        and hw["all"] == _conformal(r, 0.8)
    )
    from xamm_data.registry import UnknownNameError

    with pytest.raises(UnknownNameError, match="Did you mean 'fold-mean'"):
        halfwidth("median", r, units, 0.8)


def test_the_rule_nearest_the_nominal_coverage_on_held_out_folds_is_chosen():
    """Folds alike (exchangeable): every rule is near 0.8 held out, and the group rules, sized for
    the fold at hand, cover more. One fold with most residuals and small errors, others few and wide
    (RAJAPerf's Apps against the small groups): pooled over residuals, the big fold sets the width
    and the wide ones fall outside."""
    rng = np.random.default_rng(0)
    units = np.repeat(np.arange(6), 200)
    r = rng.standard_normal(units.size)
    scen = np.array(["s"] * units.size)
    rule, cov = choose_rule(r, scen, units, 0.8, 20)
    assert set(cov) == set(RULES) and all(abs(c - 0.8) < 0.03 for c in cov.values())
    assert cov["group-upper"] >= cov["group"] > cov["pooled"] - 0.01
    assert rule == min(
        RULES, key=lambda x: (round(abs(cov[x] - 0.8), 12), RULES.in_order().index(x))
    )

    units = np.repeat(np.arange(6), [1000, 40, 40, 40, 40, 40])
    r = rng.standard_normal(units.size) * np.where(units == 0, 0.1, 1.0)
    scen = np.array(["s"] * units.size)
    rule, cov = choose_rule(r, scen, units, 0.8, 20)
    # leaving the big fold out, the wide folds set a width far above its errors
    assert cov["pooled"] > 0.8
    assert cov == {x: held_out_coverage(x, r, scen, units, 0.8, 20) for x in RULES}
    assert abs(cov[rule] - 0.8) == min(abs(c - 0.8) for c in cov.values())


def test_a_rule_added_by_decorator_is_measured_and_chosen_when_nearest_the_coverage():
    from xamm_models.predictors.default.conformal import register_rule, rule_names

    rng = np.random.default_rng(0)
    resid = rng.normal(0, 0.1, 400)
    units, scen = np.repeat(np.arange(8), 50), np.array(["CPU->GPU"] * 400)

    @register_rule("exact")  # the held-out residuals' own quantile: nearest by construction
    def exact(r, u, c):
        return float(np.quantile(np.abs(resid), c))

    try:
        assert rule_names()[-1] == "exact"
        rule, cov = choose_rule(resid, scen, units, 0.8, 20)
        assert set(cov) == set(rule_names()) and rule == "exact"
    finally:
        RULES.remove("exact")
    assert "exact" not in rule_names()
