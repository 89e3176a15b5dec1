"""Which known machine is most like a new one: compared kernel by kernel, where both ran the kernel.

A physics signature (bandwidth curve, flop rate, launch overhead) is a summary, and each figure
depends on which kernels and sizes the runs happened to hold: two halves of one machine's runs can
disagree by several times on their flop rate when each half holds other kernels. The machines'
own times do not have that problem: on the same silicon, one kernel at one problem size takes the
same time per iteration in either half, and at neighbouring sizes it lies on the same curve.

:func:`kernel_distance` is the median |log10| ratio of two machines' times per iteration over
the kernels both ran, each of one machine's sizes read off the other's curve (log time over log
problem size, interpolated, never extrapolated); both directions are pooled. :func:`nearest`
takes the known machine of the same device kind that the registry says is the same processor
(:func:`xamm_data.machines.same_silicon`: another partition mode of one node, or the same CPU or
GPU model), else the one with the smallest distance; where two machines share too few kernels to
compare it falls back to the signatures' :func:`~xamm_models.machines.physics.distance`, and says
so. A GPU split into partitions runs each kernel several times slower than the whole GPU, so its
times alone would name another machine of that speed; the registry's fact decides first.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_data.machines import same_silicon
from xamm_models.machines.physics import PhysicsSignature, distance

__all__ = ["MIN_POINTS", "kernel_distance", "nearest"]

#: compared (kernel, size) points two machines need before their kernel distance is used
MIN_POINTS = 8


def _curves(samples: pl.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Kernel -> (log10 problem sizes ascending, log10 seconds per iteration) of one machine."""
    df = samples.select(
        "app",
        pl.col("problem_size").cast(pl.Float64).log10().alias("x"),
        (pl.col("time_per_rep_s") / pl.col("iterations_per_rep")).log10().alias("y"),
    ).filter(pl.col("x").is_finite() & pl.col("y").is_finite())
    out = {}
    for (app,), part in df.group_by(["app"], maintain_order=True):
        # one value per size: the median over the size's samples
        g = part.group_by("x").agg(pl.col("y").median()).sort("x")
        out[app] = (g.get_column("x").to_numpy(), g.get_column("y").to_numpy())
    return out


def _read_off(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """a's points minus b's curve at a's sizes, where b's sizes bracket them."""
    (xa, ya), (xb, yb) = a, b
    inside = (xa >= xb[0]) & (xa <= xb[-1])
    return ya[inside] - np.interp(xa[inside], xb, yb)


def kernel_distance(a: pl.DataFrame, b: pl.DataFrame) -> tuple[float, int]:
    """How unlike two machines' times are, kernel by kernel (see the module docstring).

    Args:
        a: benchmark samples of one machine (``app``, ``problem_size``, ``time_per_rep_s``,
            ``iterations_per_rep``).
        b: those of another.

    Returns:
        ``(median |log10 ratio|, points compared)``; NaN with fewer than :data:`MIN_POINTS`.
    """
    return _curve_distance(_curves(a), _curves(b))


def _curve_distance(ca: dict, cb: dict) -> tuple[float, int]:
    diffs = [
        d
        for app in sorted(set(ca) & set(cb))
        for d in (_read_off(ca[app], cb[app]), _read_off(cb[app], ca[app]))
    ]
    d = np.abs(np.concatenate(diffs)) if diffs else np.empty(0)
    return (float(np.median(d)) if len(d) >= MIN_POINTS else float("nan")), len(d)


def nearest(
    target: str,
    samples: pl.DataFrame,
    known: pl.DataFrame,
    signatures: dict[str, PhysicsSignature] | None = None,
) -> tuple[str, str]:
    """The known machine of ``target``'s device kind most like it.

    Args:
        target: the new machine (``machine:device``).
        samples: its benchmark samples.
        known: the known machines' benchmark samples (``target`` column).
        signatures: physics signatures of ``target`` and the known machines, for the fallback.

    Returns:
        ``(the nearest known target, "silicon", "kernels" or "signatures": what decided)``.
    """
    device = target.rsplit(":", 1)[-1]
    parts = {
        t: part
        for (t,), part in known.group_by(["target"], maintain_order=True)
        if t != target and t.rsplit(":", 1)[-1] == device
    } or {t: p for (t,), p in known.group_by(["target"], maintain_order=True) if t != target}
    siblings = same_silicon(target, sorted(t for t in parts if t.endswith(":" + device)))
    if len(siblings) == 1:
        return siblings[0], "silicon"
    mine = _curves(samples)
    # several on the same silicon: the nearest of them kernel by kernel (else the first)
    among = {t: parts[t] for t in siblings} or parts
    scored = {t: _curve_distance(mine, _curves(part))[0] for t, part in sorted(among.items())}
    finite = {t: d for t, d in scored.items() if np.isfinite(d)}
    if siblings:
        return (min(finite, key=lambda t: (finite[t], t)) if finite else siblings[0]), "silicon"
    if finite:
        return min(finite, key=lambda t: (finite[t], t)), "kernels"
    sigs = signatures or {}
    if target in sigs and any(t in sigs for t in parts):
        cands = sorted(t for t in parts if t in sigs)
        return min(cands, key=lambda t: distance(sigs[target], sigs[t])), "signatures"
    return sorted(parts)[0], "signatures"
