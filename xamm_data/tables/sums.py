"""Sums that are the same on any CPU and in any order: what every reader adds up (a rank's
passes, a profile's regions) is stored and compared exactly."""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["exact_sum"]


def exact_sum(values: Iterable[float | None]) -> float:
    """The correctly rounded sum of the values that are not None (``math.fsum``: the same on any
    CPU and in any order); NaN where infinities of both signs meet, and the plain sum (an infinity)
    where the sum leaves the range of a double: either is then refused by name where it is checked.

    Args:
        values: region times, seconds, or any metric's values.
    """
    # a list holding no None (nearly every caller's) is summed as it is
    xs = (
        values
        if type(values) is list and None not in values
        else [x for x in values if x is not None]
    )
    try:
        return math.fsum(xs)
    except ValueError:  # inf + -inf
        return math.nan
    except OverflowError:  # finite values whose sum is past the largest double
        return sum(xs)
