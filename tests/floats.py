"""Comparisons of floating-point results that hold on any CPU.

A model refitted on another processor gives the same answers up to rounding: numpy's elementwise
functions take different SIMD paths (AVX-512, AVX2, NEON) that may differ in the last unit, and a
BLAS build sums in its own order. Two bounds, stated once:

* ``ELEMENTWISE_RTOL`` (1e-12): values computed by elementwise arithmetic from the same data
  (relR of the physics predictor, signature figures) — a few ULPs at most;
* ``FITTED_RTOL`` (1e-9): values that pass through a fit (calibrated interval widths, regressor
  weights, stored model parameters) — rounding accumulated over thousands of operations, measured
  at 4.5e-13 between two x86-64 CPUs, kept three orders of magnitude above that.

Strings, integers, booleans and the structure of a document are compared exactly.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import polars as pl

ELEMENTWISE_RTOL = 1e-12
FITTED_RTOL = 1e-9


def assert_frames_close(got: pl.DataFrame, want: pl.DataFrame, rtol: float = FITTED_RTOL) -> None:
    """Equal columns, dtypes and non-float values; floats within ``rtol`` (relative).

    Parameters:
        got, want: the frames compared.
        rtol: relative tolerance for float columns.
    """
    assert got.schema == want.schema and got.height == want.height
    for name, dtype in want.schema.items():
        g, w = got[name], want[name]
        if dtype.is_float():
            gn, wn = g.to_numpy(), w.to_numpy()
            ok = np.isclose(gn, wn, rtol=rtol, atol=0.0, equal_nan=True)
            assert ok.all(), f"{name}: first difference {gn[~ok][0]!r} != {wn[~ok][0]!r}"
        else:
            assert g.equals(w), name


def assert_json_close(got: Any, want: Any, rtol: float = FITTED_RTOL, path: str = "$") -> None:
    """Equal JSON documents but for floats, which agree within ``rtol``; the failing path is named.

    Parameters:
        got, want: parsed JSON values.
        rtol: relative tolerance for floats.
        path: where in the document (for the message).
    """
    if isinstance(want, float) or isinstance(got, float):
        assert isinstance(got, int | float) and isinstance(want, int | float), path
        if math.isnan(want):
            assert math.isnan(got), f"{path}: {got} != NaN"
            return
        assert math.isclose(got, want, rel_tol=rtol, abs_tol=0.0), f"{path}: {got} != {want}"
    elif isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), f"{path}: keys differ"
        for k in want:
            assert_json_close(got[k], want[k], rtol, f"{path}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{path}: lengths differ"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_json_close(g, w, rtol, f"{path}[{i}]")
    else:
        assert got == want, f"{path}: {got!r} != {want!r}"


_NUMBER = re.compile(r"-?\d+(?:\.(\d+))?(?:[eE][-+]?\d+)?")


def assert_text_close(got: str, want: str, where: str = "") -> None:
    """Equal text but for printed numbers, which may differ by one unit of their last digit (a
    figure rounded for print from a fitted value can round the other way on another CPU).

    Parameters:
        got, want: the texts compared.
        where: what is compared (for the message).
    """
    assert _NUMBER.sub("#", got) == _NUMBER.sub("#", want), f"{where}: text differs"
    for g, w in zip(_NUMBER.finditer(got), _NUMBER.finditer(want)):
        unit = 10.0 ** -len(w.group(1) or "")
        assert abs(float(g.group()) - float(w.group())) <= unit * 1.0001, (
            f"{where}: {g.group()} != {w.group()}"
        )
