"""Leave one machine out is nested: no label of the outer machine reaches a choice before it is
scored, and a rule that reads them is caught.

The guard is a counterfactual: scramble every label of the pairs that touch the outer machine
(``relR`` and the target's time of every pair to or from it, every kernel group) and refit. An
entry whose answers to the outer fold move read those labels somewhere; the default's must not
move by a bit. The same check run on a predictor that is given the outer machine's pairs in its
fit (as a rule tuned on the outer folds is) must catch it.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from xamm_models.benchmark.dataset import XplatDataset
from xamm_models.experiments.entries import ENTRIES, LABELS, FoldContext
from xamm_models.predictors.default.model import StackedPredictor
from xamm_models.predictors.default.neighbours import CANDIDATES

pytestmark = pytest.mark.data


@pytest.fixture(scope="module")
def ds(xplat_dataset) -> XplatDataset:
    return xplat_dataset


def _scrambled(ds, machine: str, seed: int = 1):
    """The data set with every label of the pairs touching ``machine`` permuted among them."""
    touch = pl.col("source").str.starts_with(machine + ":") | pl.col("target").str.starts_with(
        machine + ":"
    )
    rows = np.flatnonzero(ds.pairs.select(touch).to_series().to_numpy())
    perm = np.random.default_rng(seed).permutation(rows)
    relr = ds.pairs.get_column("relR").to_numpy().copy()
    relr[rows] = relr[perm] * 3.0  # permuted and off by 3x: nothing of the truth is left
    pairs = ds.pairs.with_columns(pl.Series("relR", relr))
    return SimpleNamespace(
        pairs=pairs, samples=ds.samples, config_runs=ds.config_runs, version=ds.version + "-x"
    )


def _fold(ds, name: str):
    return next(f for f in ds.get_idx_split("machine") if f.name == name)


def _cheat(ctx) -> np.ndarray:
    """A rule tuned with the outer machine's labels: the candidate choice and intervals fitted on
    the training pairs plus every pair to the outer machine outside the test group (the upper
    bounds it answers)."""
    m = ctx.fold.held_out_machine
    outer = ctx.ds.pairs.filter(
        pl.col("target").str.starts_with(m + ":")
        & ~pl.col("app").is_in(list(ctx.fold.test_kernels))
    )
    model = StackedPredictor(candidates=CANDIDATES).fit(pl.concat([ctx.train, outer]), ctx.samples)
    return model.predict_pairs(ctx.test).get_column("relR_hi").to_numpy()


def test_an_entry_answers_the_test_pairs_without_their_labels(ds):
    ctx = FoldContext(ds, _fold(ds, "Basic to quartz"))
    assert not set(LABELS) & set(ctx.test.columns)
    assert ctx.truth.height == ctx.test.height and "y_true" in ctx.truth.columns
    with pytest.raises(pl.exceptions.ColumnNotFoundError):
        ctx.test.get_column("relR")


@pytest.mark.parametrize("fold", ["Basic to quartz", "Apps to h100-node"])
def test_no_label_of_the_outer_machine_moves_the_default_and_a_cheat_is_caught(ds, fold):
    f = _fold(ds, fold)
    m = f.held_out_machine
    honest, scrambled = FoldContext(ds, f), FoldContext(_scrambled(ds, m), f)
    for name in ("stacked/default", "stacked/nested-choice", "baseline/roofline"):
        a, b = (ENTRIES.get(name).predict(c) for c in (honest, scrambled))
        a, b = (x[0] if isinstance(x, tuple) else x for x in (a, b))
        np.testing.assert_array_equal(a, b, err_msg=f"{name} read a label of {m}")
    # the same check catches a choice that saw the outer machine's labels
    moved = np.abs(np.log10(_cheat(honest) / _cheat(scrambled)))
    assert moved.max() > 0.05
