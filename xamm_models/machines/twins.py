"""Twins: a new machine its benchmark runs cannot tell from a known one.

A machine's physics signature is itself a measurement: resampling the kernels of its benchmark runs
(a seeded bootstrap over kernels) moves it, and :func:`signature_noise` is the ``quantile`` of how
far (:func:`~xamm_models.machines.physics.distance`). A new machine whose signature lies within both
its own noise and its most similar known machine's (same device kind) is a plausible re-measurement
of that machine and that machine of it: a bootstrap test at that level finds no difference the runs
can show. Then the difference between the two machines' physics priors is measurement noise, not
information, and the known machine's own answer, which carries what its training pairs taught beyond
the physics, is the better one (:func:`twins`).

Why a rule and not a choice on inner folds: a twin can only be validated on training data that holds
two machines the rule calls twins, and ``xplat-rajaperf`` with the MI300A node held out has none
(tests/models/benchmark/test_evaluation.py), so the inner folds of that evaluation cannot speak to
it; the rule is fixed a priori, and the evaluation's held-out machine is where it is measured.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from xamm_models.machines.physics import (
    PhysicsSignature,
    borrow_flop_rates,
    distance,
    most_similar,
    rows_by,
    sample_arrays,
    signature_from_arrays,
)

DRAWS = 200
QUANTILE = 0.9


def signature_noise(
    samples: pl.DataFrame,
    target: str,
    reference: dict[str, PhysicsSignature] | None = None,
    *,
    draws: int = DRAWS,
    quantile: float = QUANTILE,
    seed: int = 0,
) -> float:
    """How far a target's signature moves when its benchmark kernels are resampled.

    Args:
        samples: benchmark samples.
        target: ``machine:device``.
        reference: the signatures a flop rate may be borrowed from, as in fitting.
        draws: seeded resamples of the kernels (``app``), with replacement.
        quantile: the quantile of the distances reported.
        seed: the seed.

    Returns:
        The quantile of the distance; NaN with fewer than two kernels.
    """
    own = samples.filter(pl.col("target") == target)
    apps = np.sort(own.get_column("app").unique().to_numpy())
    if len(apps) < 2:
        return float("nan")
    arrays = sample_arrays(own)
    # (app,) -> its rows: a draw takes each drawn kernel's rows whole
    rows = dict(rows_by(own.get_column("app")))
    rng = np.random.default_rng(seed)

    # as physics_signatures measures it, from these rows only
    def measured(idx) -> PhysicsSignature:
        return borrow_flop_rates({target: signature_from_arrays(target, arrays[idx])}, reference)[
            target
        ]

    base = measured(slice(None))
    moved = [
        distance(measured(np.concatenate([rows[(a,)] for a in rng.choice(apps, len(apps))])), base)
        for _ in range(draws)
    ]
    return float(np.quantile(moved, quantile))


def noise_by_target(
    samples: pl.DataFrame, sigs: dict[str, PhysicsSignature], *, seed: int = 0
) -> dict[str, float]:
    """:func:`signature_noise` of every target of ``sigs``, the others as the borrowing
    reference."""
    return {
        t: signature_noise(samples, t, {u: s for u, s in sigs.items() if u != t}, seed=seed)
        for t in sorted(sigs)
    }


def twins(
    new: dict[str, PhysicsSignature],
    known: dict[str, PhysicsSignature],
    noise: dict[str, float],
    new_noise: Callable[[str], float],
) -> dict[str, str]:
    """Each machine of ``new`` -> its most similar machine of ``known`` (same device kind), where
    their distance is within both machines' signature noise (``noise`` of the known ones;
    ``new_noise(target)`` of a new one, asked only when the known one's allows it): each is a
    plausible re-measurement of the other. A poorly measured machine (a wide noise) is no one's twin
    for that alone. Machines with no such twin are left out."""
    out = {}
    for t, sig in sorted(new.items()):
        same_kind = {
            k: s
            for k, s in known.items()
            if k.rsplit(":", 1)[-1] == t.rsplit(":", 1)[-1] and k != t
        }
        if not same_kind:
            continue
        k = most_similar(sig, same_kind)
        d = distance(sig, same_kind[k])
        if np.isfinite(noise.get(k) or np.nan) and d <= noise[k] and d <= new_noise(t):
            out[t] = k
    return out
