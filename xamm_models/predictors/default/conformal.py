"""Split-conformal interval half-widths (log10) from inner-fold residuals, per device scenario.

Plain split conformal over the pooled |log10 residuals| of the inner folds (rank
ceil((n + 1) coverage) of n). Rules that weigh folds differently (a quantile over the folds' own
quantiles, its rank bound, coverage averaged over folds) and a choice among them on the inner folds
were measured on leave-one-machine-out folds: the choice covered within 0.01 of this rule and the
fold-aimed rules covered more, so the simplest rule stays (docs/decisions.md).
"""

from __future__ import annotations

import numpy as np

__all__ = ["band_margin", "halfwidths", "signed_conformal", "split_conformal"]


def split_conformal(resid: np.ndarray, coverage: float) -> float:
    """The split-conformal quantile of |residual|.

    Args:
        resid: residuals (log10).
        coverage: the coverage aimed at.

    Returns:
        Rank ceil((n + 1) coverage) of the n sorted |residuals| (the largest past n); NaN without
        residuals.
    """
    r = np.sort(np.abs(resid))
    k = int(np.ceil((len(r) + 1) * coverage))
    return float(r[min(k, len(r)) - 1]) if len(r) else float("nan")


def signed_conformal(errors: np.ndarray, coverage: float) -> tuple[float, float]:
    """The split-conformal interval of signed errors (truth minus answer, log10), one tail each
    side: ranks floor((n + 1) alpha / 2) and ceil((n + 1) (1 - alpha / 2)) of the n sorted errors
    (clipped to the first and last), alpha = 1 - coverage.

    Args:
        errors: truth minus answer (log10) of the calibration pairs.
        coverage: the coverage aimed at.

    Returns:
        ``(low, high)``: the answer plus these bounds the truth; NaNs without errors.
    """
    e = np.sort(np.asarray(errors, dtype=float))
    n = len(e)
    if not n:
        return float("nan"), float("nan")
    alpha = 1.0 - coverage
    # 1 - 0.8 is not 0.2 in binary: without the slack a rank that is whole moves by one
    lo = int(np.floor((n + 1) * alpha / 2 + 1e-9))
    hi = int(np.ceil((n + 1) * (1 - alpha / 2) - 1e-9))
    return float(e[min(max(lo, 1), n) - 1]), float(e[min(hi, n) - 1])


def band_margin(low: np.ndarray, high: np.ndarray, errors: np.ndarray, coverage: float) -> float:
    """The conformalised-quantile-regression margin of bands around calibration errors (Romano,
    Patterson and Candès, 2019): each band's score is how far its error falls outside it
    (negative inside), max(low - error, error - high); the margin is rank ceil((n + 1) coverage)
    of the n sorted scores (the last past n). Widening every band by it on both sides covers a new
    error as often as aimed, when errors and bands are exchangeable with the calibration's.

    Args:
        low: each band's lower bound (log10, from the answer).
        high: each band's upper bound.
        errors: truth minus answer (log10) of the calibration pairs.
        coverage: the coverage aimed at.

    Returns:
        The margin (log10; negative narrows the bands); NaN without calibration pairs.
    """
    scores = np.sort(np.maximum(np.asarray(low) - errors, np.asarray(errors) - high))
    n = len(scores)
    if not n:
        return float("nan")
    k = int(np.ceil((n + 1) * coverage - 1e-9))
    return float(scores[min(k, n) - 1])


def halfwidths(
    resid: np.ndarray, scen: np.ndarray, coverage: float, min_per_scenario: int
) -> dict[str, float]:
    """Scenario -> half-width for each scenario with at least ``min_per_scenario`` residuals, and
    ``all``.

    Args:
        resid: log10 residuals of the inner folds.
        scen: each residual's device scenario.
        coverage: the coverage aimed at.
        min_per_scenario: fewer residuals in a scenario: it gets no half-width of its own.

    Returns:
        Half-widths by scenario and ``all``.
    """
    out = {}
    for s in np.unique(scen):
        m = scen == s
        if m.sum() >= min_per_scenario:
            out[str(s)] = split_conformal(resid[m], coverage)
    out["all"] = split_conformal(resid, coverage)
    return out
