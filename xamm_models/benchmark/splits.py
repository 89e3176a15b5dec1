"""The official folds of ``xplat-rajaperf`` (OGB's ``get_idx_split`` is the model).

A fold holds row indices into the data set's ``pairs``:

* ``kernel-group``: leave one kernel group out (Algorithm, Apps, Basic, Comm, Lcals, Polybench,
  Stream, as far as the pairs hold them): train on the other groups' kernels, test on the group's;
* ``kernel``: leave one kernel out;
* ``held-out-machine``: per kernel group, one machine is absent from training (no pair touches it)
  and the test is the group's pairs from any other source to that machine's targets.

``valid`` is a subset of ``train`` (the pairs of the next kernel group, or the next kernel): fit on
``train`` minus ``valid`` to choose, then refit on ``train``. Test folds are never used to choose.
``test_kernels`` are what every machine model of the fold must not see (AMMs, signatures,
baselines); ``machine_exclude`` is what it is built without: under ``kernel`` the test kernel's
whole group (a superset, so nothing leaks, and one AMM embedder then serves every fold of the
group).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

SCHEMES = ("kernel-group", "kernel", "held-out-machine")


@dataclass(frozen=True)
class Fold:
    """One fold: indices into ``pairs`` for training, validation (within train) and test."""

    scheme: str
    name: str
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    test_kernels: tuple[str, ...]
    held_out_machine: str | None = None
    # machine data never holds these (a superset of test_kernels)
    hidden_kernels: tuple[str, ...] = ()

    @property
    def machine_exclude(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.test_kernels) | set(self.hidden_kernels)))

    def frames(self, pairs: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The fold's training and test pairs.

        Args:
            pairs: the data set's pairs.

        Returns:
            ``(train, test)``.
        """
        return pairs[self.train], pairs[self.test]


def _idx(mask: pl.Series) -> np.ndarray:
    return np.flatnonzero(mask.to_numpy())


def _units(pairs: pl.DataFrame, column: str) -> list[str]:
    return sorted(set(pairs.get_column(column)))


def _fold(
    scheme, name, test_mask, train_mask, valid_unit_mask, kernels, held=None, hidden=()
) -> Fold:
    return Fold(
        scheme=scheme,
        name=name,
        train=_idx(train_mask),
        valid=_idx(train_mask & valid_unit_mask),
        test=_idx(test_mask),
        test_kernels=tuple(kernels),
        held_out_machine=held,
        hidden_kernels=tuple(hidden),
    )


def get_idx_split(
    ds, scheme: str = "kernel-group", *, held_out_machine: str = "mi300a-spx"
) -> list[Fold]:
    """The folds of ``scheme`` over ``ds.pairs`` (see the module docstring), in a fixed order.

    Args:
        ds: the data set.
        scheme: ``kernel-group``, ``kernel`` or ``held-out-machine``.
        held_out_machine: the machine the ``held-out-machine`` scheme leaves out.

    Returns:
        The folds.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown split scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    p = ds.pairs
    column = "app" if scheme == "kernel" else "group"
    units = _units(p, column)
    from_held = p.get_column("source").str.starts_with(held_out_machine + ":")
    to_held = p.get_column("target").str.starts_with(held_out_machine + ":")
    folds = []
    for i, u in enumerate(units):
        inside = p.get_column(column) == u
        nxt = p.get_column(column) == units[(i + 1) % len(units)]
        kernels = _units(p.filter(inside), "app")
        if scheme == "held-out-machine":
            test = inside & to_held & ~from_held
            if not test.any():
                continue
            folds.append(
                _fold(
                    scheme,
                    f"{u} to {held_out_machine}",
                    test,
                    ~inside & ~(from_held | to_held),
                    nxt,
                    kernels,
                    held_out_machine,
                )
            )
        elif scheme == "kernel":
            group = p.filter(inside).get_column("group")[0]
            folds.append(
                _fold(
                    scheme,
                    u,
                    inside,
                    ~inside,
                    nxt,
                    kernels,
                    hidden=_units(p.filter(pl.col("group") == group), "app"),
                )
            )
        else:
            folds.append(_fold(scheme, u, inside, ~inside, nxt, kernels))
    return folds
