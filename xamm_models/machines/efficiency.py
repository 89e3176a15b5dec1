"""How far each benchmark kernel runs from its own machine's roofline, and what the kernel looks
like.

A machine's physics signature (:mod:`xamm_models.machines.physics`) says what its memory and compute
sustain; it cannot say that a reduction, an atomic update or a scan runs several times slower than
its bytes and flops suggest on one machine and not on another. Each benchmark run measures exactly
that: the **slowdown** of a kernel on a machine, log10(measured time / modelled time), the modelled
time from that machine's own figures (the plain roofline's: one sustained bandwidth, a flop rate,
a launch overhead). Kernels that look alike from the source's side (working set
per launch, arithmetic intensity, time per launch, and how far the source runs them from its
roofline) are the evidence for how an unseen kernel's slowdown changes between two machines
(:mod:`xamm_models.predictors.default.neighbours`).

Everything here is read from a machine's own benchmark samples; no relR label is used.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_models.achieved import launches_per_rep

__all__ = ["DESCRIPTORS", "describe", "kernel_key", "slowdowns"]

#: what a kernel looks like, from the side it was measured on (log10 each): bytes per launch,
#: 1 + flops per byte, seconds per launch, and the slowdown from that machine's roofline
DESCRIPTORS = ("ws", "ai", "launch_s", "slowdown")


def describe(b: np.ndarray, f: np.ndarray, n: np.ndarray, t: np.ndarray, modelled: np.ndarray):
    """The :data:`DESCRIPTORS` of rows of work and time.

    Args:
        b: bytes per rep.
        f: flops per rep.
        n: launches per rep (at least one).
        t: measured seconds per rep.
        modelled: modelled seconds per rep on the machine that measured ``t``.

    Returns:
        An array (rows, 4).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.column_stack(
            [
                np.log10(np.clip(b / n, 1.0, None)),
                np.log10(1.0 + np.where(b > 0, f / np.where(b > 0, b, 1.0), 0.0)),
                np.log10(np.clip(t / n, 1e-12, None)),
                np.log10(t / modelled),
            ]
        )


def kernel_key(samples: pl.DataFrame) -> pl.Expr:
    """What names one kernel at one problem size across machines: the kernel and its parameters
    (``xplat``'s key), else its size bucket, else the kernel alone.

    Args:
        samples: benchmark samples (their columns decide which key is used).

    Returns:
        An expression for the ``kernel`` column.
    """
    params = [c for c in ("app_params", "size_bucket") if c in samples.columns]
    tail = pl.coalesce([pl.col(c).cast(pl.String) for c in params] + [pl.lit("")])
    return pl.concat_str(pl.col("app"), pl.lit("|"), tail).alias("kernel")


def slowdowns(samples: pl.DataFrame, modelled: np.ndarray) -> pl.DataFrame:
    """Each benchmark sample's descriptors on the machine that ran it.

    Args:
        samples: benchmark samples (``target``, ``app``, ``app_params``, ``time_per_rep_s``,
            ``bytes_per_rep``, ``flops_per_rep``, ``kernels_per_rep``).
        modelled: each sample's modelled seconds per rep on its own machine (NaN: no model).

    Returns:
        ``target``, ``kernel`` (:func:`kernel_key`) and one column per :data:`DESCRIPTORS`; rows
        whose descriptors are not finite are left out.
    """
    d = describe(
        samples.get_column("bytes_per_rep").fill_null(0.0).to_numpy().astype(float),
        samples.get_column("flops_per_rep").fill_null(0.0).to_numpy().astype(float),
        launches_per_rep(samples),
        samples.get_column("time_per_rep_s").to_numpy().astype(float),
        np.asarray(modelled, dtype=float),
    )
    out = samples.select("target", kernel_key(samples)).with_columns(
        *[pl.Series(name, d[:, i]) for i, name in enumerate(DESCRIPTORS)]
    )
    return out.filter(pl.all_horizontal(pl.col(list(DESCRIPTORS)).is_finite()))
