"""What a machine's benchmark runs achieved, and the launch overhead under them: the figures a
physics signature (:mod:`xamm_models.machines.physics`) and the plain roofline
(:mod:`xamm_models.benchmark.baselines`) are both measured from, with the same rules.

Nothing measured from a run is ever above what some run achieved (:func:`best_achieved`); the
overhead is taken out of a row's time only where at least :data:`MIN_BUSY_SHARE` of it is left."""

from __future__ import annotations

import numpy as np
import polars as pl

OVERHEAD_QUANTILE = 0.05
# Launches must span this many octaves of working set before their fastest is read as an overhead.
# Set from the physics, not from prediction folds: every RAJAPerf target in the data spans >= 14.8
# octaves, BabelStream at one array size 0.6 (tests/models/machines/test_bandwidth_only.py).
OVERHEAD_SPAN_OCTAVES = 6.0
# a row tells the bandwidth or flop rate only if the overhead leaves it this share of its time
MIN_BUSY_SHARE = 0.5
# the share of rows, fewest bytes per launch first, among which the overhead is read
OVERHEAD_ROWS = 0.25

__all__ = [
    "MIN_BUSY_SHARE",
    "OVERHEAD_QUANTILE",
    "OVERHEAD_ROWS",
    "OVERHEAD_SPAN_OCTAVES",
    "best_achieved",
    "launch_overhead",
    "launches_kernels",
    "launches_per_rep",
    "sample_arrays",
]


def launches_per_rep(samples: pl.DataFrame) -> np.ndarray:
    """Kernel launches per rep of each sample, at least one (a missing count is one)."""
    return np.clip(
        samples.get_column("kernels_per_rep").fill_null(1.0).to_numpy().astype(float), 1.0, None
    )


def sample_arrays(samples: pl.DataFrame) -> np.ndarray:
    """The columns the figures are measured from, as rows of (time per rep, bytes per rep, flops
    per rep, launches per rep).

    Args:
        samples: benchmark samples (``time_per_rep_s``, ``bytes_per_rep``, ``flops_per_rep``,
            ``kernels_per_rep``).

    Returns:
        An array of shape (rows, 4).
    """
    return np.column_stack(
        [
            samples.get_column("time_per_rep_s").to_numpy().astype(float),
            samples.get_column("bytes_per_rep").fill_null(0.0).to_numpy().astype(float),
            samples.get_column("flops_per_rep").fill_null(0.0).to_numpy().astype(float),
            launches_per_rep(samples),
        ]
    )


def launches_kernels(samples: pl.DataFrame) -> bool:
    """Whether ``samples`` were measured in a programming model that launches its kernels (GPU
    offload, OpenMP threads, ...): False when every sample is a ``Seq`` variant (a plain loop), True
    when the samples do not say."""
    for col in ("backend", "variant"):
        if col in samples.columns:
            names = samples.get_column(col).drop_nulls().unique().to_list()
            if names:
                return not all(str(n).split("_")[-1] == "Seq" for n in names)
    return True


def best_achieved(arrays: np.ndarray) -> tuple[float, float]:
    """The best bandwidth (B/s) and flop rate (flop/s) any row of :func:`sample_arrays` achieved,
    its whole time counted (0 where no row moved bytes or did flops): what no figure of a signature
    may exceed."""
    t, b, f, _ = arrays.T
    ok = t > 0
    bw = float((b[ok] / t[ok]).max()) if (ok & (b > 0)).any() else 0.0
    fr = float((f[ok] / t[ok]).max()) if (ok & (f > 0)).any() else 0.0
    return bw, fr


def launch_overhead(
    t: np.ndarray, b: np.ndarray, n: np.ndarray, launches: bool
) -> tuple[float, str]:
    """(seconds per launch, how it was found: ``none``, ``unmeasured`` or ``measured``).

    A sequential run (``launches`` False) has no launch: a loop costs nothing the runs resolve.
    Otherwise the 5th percentile of time per launch among the quarter of the rows that move the
    fewest bytes per launch (only there can a fixed cost show under the streaming time), measured
    only when the launches' working sets span :data:`OVERHEAD_SPAN_OCTAVES` octaves (with launches
    of one size the fastest is a kernel's own streaming time).

    Args:
        t: time per rep of each row.
        b: bytes per rep.
        n: launches per rep.
        launches: whether the runs launch kernels (:func:`launches_kernels`).

    Returns:
        The overhead and how it was found.
    """
    if not launches:
        return 0.0, "none"
    ws_all = np.log2(np.clip(b / n, 1.0, None))[b > 0]
    if len(ws_all) == 0 or float(ws_all.max() - ws_all.min()) < OVERHEAD_SPAN_OCTAVES:
        return 0.0, "unmeasured"
    per_launch_ws = b / n
    small = per_launch_ws <= np.quantile(per_launch_ws, OVERHEAD_ROWS)
    return float(np.quantile((t / n)[small], OVERHEAD_QUANTILE)), "measured"
