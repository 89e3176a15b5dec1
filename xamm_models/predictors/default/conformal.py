"""Conformal interval half-widths (log10) from inner-fold residuals; the rule chosen on inner folds.

Every rule turns the |log10 residuals| of a candidate on held-out inner folds into one half-width
per device scenario (and ``all``, for scenarios with too few residuals of their own):

``group``
    each inner fold's own ``coverage`` quantile, then position (G + 1) coverage among those G
    quantiles, interpolated (the Weibull plotting position; the largest when it exceeds G): a new
    fold is one more unit, so *its own* quantile lies below the half-width with probability about
    ``coverage``. It aims at the fold at hand, so on average over pairs it covers more than
    ``coverage``.
``group-upper``
    the same with the rank rule of split conformal (ceil((G + 1) coverage)), a lower bound: with
    five or six folds it is the widest fold's quantile.
``fold-mean``
    the smallest width whose coverage, averaged over the folds with each fold weighted equally,
    reaches ``coverage``: a fold with most of the pairs does not set it alone.
``pooled``
    plain split conformal over all residuals (rank ceil((n + 1) coverage)).

Which rule holds ``coverage`` is an empirical question about how folds differ, so
:func:`choose_rule` answers it on the inner folds: each fold is left out in turn, the half-widths
are computed from the others, and the fraction of the left-out residuals inside them is pooled over
all folds (as ``xamm eval`` scores coverage over test pairs). The rule whose held-out coverage lies
nearest ``coverage`` is used (the earlier in the registry on a tie).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xamm_data.registry import Registry

#: Interval rules by name: each maps (|residuals|, their inner folds, coverage) to a half-width.
RULES: Registry[Callable[[np.ndarray, np.ndarray, float], float]] = Registry("interval rule")


def register_rule(name: str) -> Callable:
    """Decorator: register an interval rule ``fn(resid, units, coverage) -> half-width``.

    Args:
        name: the rule's name in configs, cards and saved models. Rules registered earlier win
            ties in :func:`choose_rule`.

    Returns:
        The decorator, which returns the function unchanged.
    """
    return RULES.register(name)


def rule_names() -> list[str]:
    """The registered rules in registration order (the tie-break of :func:`choose_rule`)."""
    return RULES.in_order()


def split_conformal(resid: np.ndarray, coverage: float) -> float:
    """The split-conformal quantile of |residual|: rank ceil((n + 1) coverage) of n (the largest
    past n)."""
    r = np.sort(np.abs(resid))
    k = int(np.ceil((len(r) + 1) * coverage))
    return float(r[min(k, len(r)) - 1]) if len(r) else float("nan")


def group_conformal(
    resid: np.ndarray, units: np.ndarray, coverage: float, upper: bool = False
) -> float:
    """Position (G + 1) coverage among the G units' own ``coverage`` quantiles of |residual|,
    interpolated (with ``upper``, the rank ceil((G + 1) coverage)); the largest when the position
    exceeds G."""
    r = np.abs(resid)
    qs = np.sort([np.quantile(r[units == u], coverage) for u in np.unique(units)])
    if not len(qs):
        return float("nan")
    return (
        split_conformal(qs, coverage)
        if upper
        else float(np.quantile(qs, coverage, method="weibull"))
    )


def fold_mean_conformal(resid: np.ndarray, units: np.ndarray, coverage: float) -> float:
    """The smallest |residual| r at which the mean over units of each unit's fraction of |residuals|
    <= r reaches ``coverage`` (every unit weighs the same, however many residuals it has)."""
    if not len(resid):
        return float("nan")
    r = np.abs(resid)
    _, idx, n = np.unique(units, return_inverse=True, return_counts=True)
    order = np.argsort(r, kind="stable")
    reached = np.cumsum((1.0 / n[idx] / len(n))[order]) >= coverage - 1e-12
    return float(r[order][np.argmax(reached)]) if reached.any() else float(r.max())


register_rule("group")(group_conformal)
register_rule("group-upper")(lambda r, u, c: group_conformal(r, u, c, upper=True))
register_rule("fold-mean")(fold_mean_conformal)
register_rule("pooled")(lambda r, _u, c: split_conformal(r, c))


def halfwidth(rule: str, resid: np.ndarray, units: np.ndarray, coverage: float) -> float:
    """The log10 half-width of a registered ``rule`` from these residuals and their inner folds.

    Args:
        rule: a name in :data:`RULES`.
        resid: log10 residuals.
        units: each residual's inner fold.
        coverage: the coverage aimed at.

    Returns:
        The half-width (NaN without residuals).
    """
    return RULES.get(rule)(resid, units, coverage)


def halfwidths(
    rule: str,
    resid: np.ndarray,
    scen: np.ndarray,
    units: np.ndarray,
    coverage: float,
    min_per_scenario: int,
) -> dict[str, float]:
    """Scenario -> half-width for each scenario with at least ``min_per_scenario`` residuals, and
    ``all``."""
    out = {}
    for s in np.unique(scen):
        m = scen == s
        if m.sum() >= min_per_scenario:
            out[str(s)] = halfwidth(rule, resid[m], units[m], coverage)
    out["all"] = halfwidth(rule, resid, units, coverage)
    return out


def held_out_coverage(
    rule: str,
    resid: np.ndarray,
    scen: np.ndarray,
    units: np.ndarray,
    coverage: float,
    min_per_scenario: int,
) -> float:
    """Leave each unit out, size the half-widths on the others, count its residuals inside; the
    fraction pooled over every residual. NaN with fewer than two units."""
    if len(np.unique(units)) < 2:
        return float("nan")
    inside = 0
    for u in np.unique(units):
        m = units == u
        hw = halfwidths(rule, resid[~m], scen[~m], units[~m], coverage, min_per_scenario)
        width = np.array([hw.get(str(s), hw["all"]) for s in scen[m]])
        inside += int((np.abs(resid[m]) <= width).sum())
    return inside / len(resid)


def choose_rule(
    resid: np.ndarray,
    scen: np.ndarray,
    units: np.ndarray,
    coverage: float,
    min_per_scenario: int,
    rules: tuple[str, ...] | None = None,
) -> tuple[str, dict[str, float]]:
    """The interval rule whose held-out coverage on the inner folds is nearest ``coverage``.

    Args:
        resid: log10 residuals of the inner folds.
        scen: each residual's device scenario.
        units: each residual's inner fold.
        coverage: the coverage aimed at.
        min_per_scenario: fewer residuals in a scenario: its ``all`` half-width is used.
        rules: the rules to choose among (default: every registered rule, in order).

    Returns:
        The rule (the earlier on a tie; the first when none can be measured) and every rule's
        held-out coverage.
    """
    rules = tuple(rules or rule_names())
    cov = {r: held_out_coverage(r, resid, scen, units, coverage, min_per_scenario) for r in rules}
    measured = [r for r in rules if np.isfinite(cov[r])]
    if not measured:
        return rules[0], cov
    return min(measured, key=lambda r: (round(abs(cov[r] - coverage), 12), rules.index(r))), cov
