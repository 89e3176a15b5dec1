"""The official folds of ``xplat-rajaperf`` (OGB's ``get_idx_split`` is the model).

A fold holds row indices into the data set's ``pairs``:

* ``kernel-group``: leave one kernel group out (Algorithm, Apps, Basic, Comm, Lcals, Polybench,
  Stream, as far as the pairs hold them): train on the other groups' kernels, test on the group's;
* ``kernel``: leave one kernel out;
* ``machine``: leave one machine out, over every machine: per machine and kernel group, the machine
  is absent from training (no pair touches it) and the test is the group's pairs to that machine's
  targets from any other source with training pairs in the fold (a new target asked from a known
  source). The left-out machine is met as a new machine is in use: its
  signature comes from its own benchmark runs without the group's kernels.

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

SCHEMES = ("kernel-group", "kernel", "machine")


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


def get_idx_split(ds, scheme: str = "kernel-group") -> list[Fold]:
    """The folds of ``scheme`` over ``ds.pairs`` (see the module docstring), in a fixed order.

    Args:
        ds: the data set.
        scheme: ``kernel-group``, ``kernel`` or ``machine``.

    Returns:
        The folds.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown split scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    if scheme == "machine":
        return _machine_folds(ds.pairs)
    p = ds.pairs
    column = "app" if scheme == "kernel" else "group"
    units = _units(p, column)
    folds = []
    for i, u in enumerate(units):
        inside = p.get_column(column) == u
        nxt = p.get_column(column) == units[(i + 1) % len(units)]
        kernels = _units(p.filter(inside), "app")
        if scheme == "kernel":
            group = p.filter(inside).get_column("group")[0]
            hidden = _units(p.filter(pl.col("group") == group), "app")
            folds.append(_fold(scheme, u, inside, ~inside, nxt, kernels, hidden=hidden))
        else:
            folds.append(_fold(scheme, u, inside, ~inside, nxt, kernels))
    return folds


def machines(pairs: pl.DataFrame) -> list[str]:
    """The machines the pairs hold as targets, sorted.

    Args:
        pairs: labelled pairs.

    Returns:
        Machine names (``quartz``, not ``quartz:cpu``).
    """
    return sorted(set(pairs.get_column("target").str.split(":").list.first()))


def _machine_folds(p: pl.DataFrame) -> list[Fold]:
    """Leave one machine out, per machine and kernel group (see the module docstring)."""
    groups = _units(p, "group")
    folds = []
    for m in machines(p):
        from_m = p.get_column("source").str.starts_with(m + ":")
        to_m = p.get_column("target").str.starts_with(m + ":")
        for i, u in enumerate(groups):
            inside = p.get_column("group") == u
            train = ~inside & ~(from_m | to_m)
            # the question is a new target asked from a known source: a source without training
            # pairs in this fold (dane's pairs all lead to the machine left out) is not tested
            known = p.get_column("source").is_in(
                p.filter(train).get_column("source").unique().implode()
            )
            test = inside & to_m & ~from_m & known
            if not test.any():
                continue
            nxt = p.get_column("group") == groups[(i + 1) % len(groups)]
            kernels = _units(p.filter(inside), "app")
            folds.append(_fold("machine", f"{u} to {m}", test, train, nxt, kernels, m))
    return folds
