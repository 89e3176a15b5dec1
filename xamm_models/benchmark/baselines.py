"""Simple baselines for relR prediction, scored on the same folds and through the same evaluator as
xAMM.

Each takes the fold's training pairs, the test pairs and the benchmark samples the fold may see
(never the test kernels), and returns predicted relR for every test row:

* :func:`pair_median`: the median training relR of the (source, target) pair; a pair never seen in
  training (a held-out machine) gets the median of its device scenario (CPU->GPU, ...), else of
  everything;
* :func:`pair_size_median`: the median of the (source, target, size bucket), falling back to the
  pair;
* :func:`roofline`: each target's sustained bandwidth over large working sets, compute rate from
  its compute-dense kernels (borrowed from its device kind where it has none, as the default's prior
  does) and per-launch overhead, measured from its own benchmark samples of the training kernels
  (:func:`machine_figures`); modelled time = max(bytes / BW,
  flops / F) + overhead x launches per rep; relR = modelled time on the target / modelled time on
  the source. No relR label is used;
* :func:`knn`: the mean log relR of the k nearest training samples of the same (source, target) pair
  in the standardised raw features, falling back to the pair median.

Each is registered in :data:`BASELINES` by :func:`register_baseline`; a new one is one decorated
function ``fn(train, test, *, samples=None, figures=None, features=(...), k=5, **_)`` that the
evaluation's entries (``baseline/<name>``) and :class:`~xamm_models.predictors.BaselinePredictor`
pick up.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from xamm_data.machines.targets import scenario_expr
from xamm_data.registry import Registry
from xamm_models.achieved import (
    MIN_BUSY_SHARE,
    best_achieved,
    launch_overhead,
    launches_kernels,
    sample_arrays,
)
from xamm_models.benchmark.dataset import RATIO_COLUMNS, like_for_like_ratios
from xamm_models.features import FEATURES

#: Baselines by name; each entry's ``registry_info`` says which columns it reads (``needs``: of the
#: pairs asked, ``trains_on``: of the training pairs, beyond ``source``, ``target``, ``relR``).
BASELINES: Registry[Callable[..., np.ndarray]] = Registry("baseline")


def register_baseline(
    name: str, *, needs: tuple[str, ...] = (), trains_on: tuple[str, ...] = ()
) -> Callable:
    """Decorator: register a baseline function under ``name``.

    Args:
        name: the baseline's name (``baseline/<name>`` in the evaluation).
        needs: the columns of the pairs asked that it reads beyond ``source`` and ``target``.
        trains_on: the columns of the training pairs it reads beyond ``source``, ``target`` and
            ``relR``.

    Returns:
        The decorator, which returns the function unchanged.
    """
    return BASELINES.register(name, needs=tuple(needs), trains_on=tuple(trains_on))


# "sustained": what the machine reaches on its better-streaming kernels, not its best outlier
BW_QUANTILE = 0.9
MIN_INTENSITY = 1.0  # flop/byte: a kernel below it says nothing about the compute rate
MIN_DENSE = 3  # samples of at least MIN_INTENSITY a measured flop rate needs


def _median_by(train: pl.DataFrame, test: pl.DataFrame, keys: list[str]) -> pl.Series:
    med = train.group_by(keys).agg(pl.col("relR").log().median().alias("_m"))
    return test.join(med, on=keys, how="left", maintain_order="left").get_column("_m")


@register_baseline("pair-median")
def pair_median(train: pl.DataFrame, test: pl.DataFrame, **_) -> np.ndarray:
    """Median training relR of the test row's (source, target) pair, then of its scenario,
    then overall.

    Args:
        train: the fold's training pairs.
        test: the pairs to predict.
        **_: other baselines' options, ignored.

    Returns:
        Predicted relR, one per test row.
    """
    tr, te = train.with_columns(scenario_expr()), test.with_columns(scenario_expr())
    m = _median_by(tr, te, ["source", "target"])
    m = m.fill_null(_median_by(tr, te, ["scenario"])).fill_null(
        tr.get_column("relR").log().median()
    )
    return np.exp(m.to_numpy())


@register_baseline("pair-size-median", needs=("size_bucket",), trains_on=("size_bucket",))
def pair_size_median(train: pl.DataFrame, test: pl.DataFrame, **_) -> np.ndarray:
    """Median training relR of the (source, target, size bucket), else :func:`pair_median`.

    Args:
        train: the fold's training pairs.
        test: the pairs to predict.
        **_: other baselines' options, ignored.

    Returns:
        Predicted relR, one per test row.
    """
    m = _median_by(train, test, ["source", "target", "size_bucket"]).to_numpy()
    return np.where(np.isnan(m), pair_median(train, test), np.exp(m))


def _figures_of(arrays: np.ndarray, launches: bool) -> dict:
    """One target's plain-roofline figures from :func:`~xamm_models.achieved.sample_arrays`
    rows (see :func:`machine_figures`)."""
    t, b, f, n = arrays.T
    best_bw, best_fr = best_achieved(arrays)
    overhead, _ = launch_overhead(t, b, n, launches)
    busy = t - overhead * n
    clear = busy >= MIN_BUSY_SHARE * t
    ws = b / n
    large = ws >= (np.median(ws[b > 0]) if (b > 0).any() else np.inf)
    streaming = (b > 0) & (f < MIN_INTENSITY * b) & clear & large
    dense = (f > 0) & (f >= MIN_INTENSITY * b) & clear
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = (
            float(np.quantile(b[streaming] / busy[streaming], BW_QUANTILE))
            if streaming.any()
            else None
        )
        fr = (
            float(np.quantile(f[dense] / busy[dense], BW_QUANTILE))
            if dense.sum() >= MIN_DENSE
            else None
        )
    return {
        "bw": None if bw is None else min(bw, best_bw),
        "flops": None if fr is None else min(fr, best_fr),
        "overhead": overhead,
    }


def machine_figures(samples: pl.DataFrame, *, borrow: bool = True) -> pl.DataFrame:
    """Per target: sustained bandwidth (B/s), compute rate (flop/s) and per-launch overhead (s), the
    plain roofline's figures, measured with the signature's rules (:mod:`xamm_models.achieved`) and
    the flop-rate handling the default's prior has:

    * overhead: none for a sequential run (a loop has no launch); else the 5th percentile of time
      per launch among the launches that move the fewest bytes;
    * bandwidth: the 90th percentile of achieved bandwidth, launch overhead removed where it leaves
      at least half of the time, over the streaming samples (below :data:`MIN_INTENSITY` flop/byte)
      whose working set per launch is at least the target's median (large working sets), never
      above the best a run achieved;
    * flop rate: the 90th percentile of achieved flop rate over kernels of at least
      :data:`MIN_INTENSITY` flop/byte only (a streaming kernel's flop rate is its bandwidth's),
      never above the best a run achieved; a target with fewer than :data:`MIN_DENSE` such samples
      borrows the median rate of the targets of its device kind (cpu/gpu) that have them, else its
      own bandwidth times the median balance (flop rate over bandwidth) of all that have them
      (:func:`~xamm_models.machines.physics.borrow_flop_rates`); with none anywhere compute never
      binds (null).

    Args:
        samples: benchmark samples (``target``, ``time_per_rep_s``, ``bytes_per_rep``,
            ``flops_per_rep``, ``kernels_per_rep``; ``variant`` tells a sequential run).
        borrow: False leaves an unmeasured flop rate null (what the runs measured, and no more).

    Returns:
        One row per target: ``target``, ``bw``, ``flops``, ``overhead``.
    """
    rows = []
    for (target,), part in samples.group_by(["target"], maintain_order=True):
        rows.append({"target": target, **_figures_of(sample_arrays(part), launches_kernels(part))})
    figs = pl.DataFrame(
        rows,
        schema={"target": pl.String, "bw": pl.Float64, "flops": pl.Float64, "overhead": pl.Float64},
    ).with_columns(pl.col("target").str.split(":").list.last().alias("_kind"))
    figs = _borrow_flops(figs) if borrow else figs
    return figs.select("target", "bw", "flops", "overhead").sort("target")


def _borrow_flops(figs: pl.DataFrame) -> pl.DataFrame:
    """A target without a measured flop rate takes its device kind's median rate, else its own
    bandwidth times everyone's median balance (a rate does not carry across kinds; a balance
    does)."""
    kind = pl.col("flops").median().over("_kind")
    balance = (pl.col("flops") / pl.col("bw")).median() * pl.col("bw")
    return figs.with_columns(pl.coalesce("flops", kind, balance).alias("flops"))


def roofline_seconds(test: pl.DataFrame, figs: pl.DataFrame, end: str) -> np.ndarray:
    """Seconds per iteration of each row on its ``end`` machine by the plain roofline's figures.

    Args:
        test: rows with ``bytes_per_rep``, ``flops_per_rep``, ``kernels_per_rep``,
            ``iterations_per_rep`` and the ``end`` column.
        figs: :func:`machine_figures`.
        end: ``"source"`` or ``"target"``.

    Returns:
        One time per row (NaN where the machine has no figures).
    """
    f = test.select(
        end, "bytes_per_rep", "flops_per_rep", "kernels_per_rep", "iterations_per_rep"
    ).join(figs.rename({"target": end}), on=end, how="left", maintain_order="left")
    t = f.select(
        (
            pl.max_horizontal(
                pl.col("bytes_per_rep").fill_null(0) / pl.col("bw"),
                pl.col("flops_per_rep").fill_null(0) / pl.col("flops"),
            )
            + pl.col("overhead") * pl.col("kernels_per_rep").fill_null(1.0).clip(lower_bound=1.0)
        )
        / pl.col("iterations_per_rep")
    ).to_series()
    return t.to_numpy().astype(float)


@register_baseline("roofline", needs=("bytes_per_rep", "flops_per_rep", "iterations_per_rep"))
def roofline(
    train: pl.DataFrame,
    test: pl.DataFrame,
    *,
    samples: pl.DataFrame | None = None,
    figures: pl.DataFrame | None = None,
    **_,
) -> np.ndarray:
    """Modelled time on the target over modelled time on the source; the pair median where
    a figure is missing.

    Args:
        train: the fold's training pairs.
        test: the pairs to predict.
        samples: the benchmark samples the fold may see (their figures).
        figures: the figures as :func:`machine_figures` computed them (instead of ``samples``).
        **_: other baselines' options, ignored.

    Returns:
        Predicted relR, one per test row.
    """
    figs = figures if figures is not None else machine_figures(samples)
    rel = roofline_seconds(test, figs, "target") / roofline_seconds(test, figs, "source")
    fallback = pair_median(train, test)
    return np.where(np.isfinite(rel) & (rel > 0), rel, fallback)


@register_baseline("knn", needs=FEATURES, trains_on=FEATURES)
def knn(
    train: pl.DataFrame, test: pl.DataFrame, *, features: list[str], k: int = 5, **_
) -> np.ndarray:
    """Mean log relR of the ``k`` nearest training rows of the same (source, target) in
    standardised features; the pair median where a pair has none.

    Args:
        train: the fold's training pairs.
        test: the pairs to predict.
        features: the feature columns.
        k: neighbours.
        **_: other baselines' options, ignored.

    Returns:
        Predicted relR, one per test row.
    """
    X = train.select(features).to_numpy().astype(float)
    mu, sd = np.nanmean(X, axis=0), np.nanstd(X, axis=0)
    sd[~np.isfinite(sd) | (sd == 0)] = 1.0
    out = np.log(pair_median(train, test))
    tr = train.with_row_index("_i").with_columns(pl.col("relR").log().alias("_y"))
    te = test.with_row_index("_i")
    for (s, t), part in te.group_by(["source", "target"], maintain_order=True):
        ref = tr.filter((pl.col("source") == s) & (pl.col("target") == t))
        if ref.is_empty():
            continue
        A = np.nan_to_num((ref.select(features).to_numpy() - mu) / sd)
        B = np.nan_to_num((part.select(features).to_numpy() - mu) / sd)
        d = ((B[:, None, :] - A[None, :, :]) ** 2).sum(axis=2)
        nearest = np.argsort(d, axis=1, kind="stable")[:, :k]
        out[part.get_column("_i").to_numpy()] = (
            ref.get_column("_y").to_numpy()[nearest].mean(axis=1)
        )
    return np.exp(out)


def log_pair_constants(test: pl.DataFrame, samples: pl.DataFrame) -> np.ndarray:
    """The natural log of each row's machine-pair constant: the median ratio of the two machines'
    times per iteration over the kernels both ran like for like
    (:func:`~xamm_models.benchmark.dataset.like_for_like_ratios`); NaN where they share none, or
    where the samples lack (or hold null) the columns the rule reads.

    Args:
        test: rows with ``source`` and ``target``.
        samples: benchmark samples.

    Returns:
        One value per row.
    """
    if not set(RATIO_COLUMNS) <= set(samples.columns):
        return np.full(test.height, np.nan)
    ends = pl.concat([test.get_column("source"), test.get_column("target")]).unique()
    ratios = like_for_like_ratios(samples.filter(pl.col("target").is_in(ends.implode())))
    med = ratios.group_by("source", "target").agg(pl.col("relR").log().median().alias("_m"))
    got = test.select("source", "target").join(
        med, on=["source", "target"], how="left", maintain_order="left"
    )
    return got.get_column("_m").to_numpy().astype(float)


def pair_constant(test: pl.DataFrame, samples: pl.DataFrame) -> np.ndarray:
    """One constant per machine pair from the two machines' own benchmark runs: the median ratio
    of their times per iteration over the kernels both ran like for like (the data set's rule,
    :func:`xamm_models.benchmark.dataset.pairs`); the plain roofline where they share none (1
    where neither can answer). No relR label is used: under leave one machine out, the left-out
    machine's runs without the fold's kernels are its benchmark runs, as a new machine's are.

    Args:
        test: the pairs to predict.
        samples: the benchmark samples the fold may see.

    Returns:
        Predicted relR, one per test row.
    """
    m = log_pair_constants(test, samples)
    figs = machine_figures(samples)
    with np.errstate(divide="ignore", invalid="ignore"):
        roof = roofline_seconds(test, figs, "target") / roofline_seconds(test, figs, "source")
    roof = np.where(np.isfinite(roof) & (roof > 0), roof, 1.0)
    return np.where(np.isnan(m), roof, np.exp(m))
