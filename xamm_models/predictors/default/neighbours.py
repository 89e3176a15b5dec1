"""The default's candidate models: every one label-free, each a way to carry what the two machines'
own benchmark runs say to an application sample measured on the source.

For a sample x measured on source s, asked for target t:

* ``roofline``: the plain roofline's ratio (one sustained bandwidth, a flop rate, a launch
  overhead per machine: :func:`~xamm_models.benchmark.baselines.roofline`);
* ``pair-constant``: one constant per machine pair, the median ratio of the two machines' times per
  iteration over the benchmark kernels both ran like for like (the baseline
  :func:`~xamm_models.benchmark.baselines.pair_constant`; the roofline where they share none);
* ``split``: the physics prior (a bandwidth curve over the working set) with half the source's
  slowdown carried to the target (:func:`~xamm_models.predictors.default.stacked.split_relr`);
* ``delta-k``: the roofline times how the slowdown from the roofline changes from s to t on the k
  benchmark kernels both machines ran that look most like x from the source's side
  (:mod:`xamm_models.machines.efficiency`: working set per launch, arithmetic intensity, time per
  launch, the source's slowdown); the median of their changes. ``delta-all`` is one constant per
  machine pair on top of the roofline;
* ``level-16``: the roofline, the source's measured slowdown of x taken out, and the median slowdown
  of the 16 look-alike kernels on the target put in.

The spread of the look-alikes' changes (:data:`SPREAD_K` of them) is each answer's **scale**: where
similar kernels change alike between the two machines the interval is narrow, where they scatter it
is wide (:mod:`xamm_models.predictors.default.selection` calibrates the factor). A machine pair with
fewer than :data:`MIN_REFERENCES` kernels in common answers with the roofline for every neighbour
candidate and has no scale of its own.

A pair's **band** (:func:`pair_bands`) is what the roofline's error has been between the two
machines: the 10% and 90% quantiles of the changes of every kernel both ran
(:data:`MIN_BAND_REFERENCES` at least), the roofline's exact error on each of them.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_models.achieved import launches_per_rep
from xamm_models.benchmark.baselines import log_pair_constants
from xamm_models.benchmark.baselines import roofline_seconds as roofline_time
from xamm_models.machines.efficiency import DESCRIPTORS, describe, slowdowns
from xamm_models.machines.physics import PhysicsSignature, rows_by
from xamm_models.predictors.default.stacked import split_relr

__all__ = [
    "BAND_QUANTILES",
    "CANDIDATES",
    "MIN_BAND_REFERENCES",
    "MIN_REFERENCES",
    "SPREAD_K",
    "Answers",
    "candidate_answers",
    "pair_bands",
]

# simplest first: a tie goes to the earlier one
CANDIDATES = (
    "roofline",
    "pair-constant",
    "split",
    "delta-all",
    "delta-16",
    "delta-4",
    "level-16",
)
MIN_REFERENCES = 4
SPREAD_K = 16
# log10: a scale is never below this (two kernels that changed identically are not certainty)
SCALE_FLOOR = 0.02
# descriptors' spreads below this (log10) are not used to standardise them
MIN_SPREAD = 0.05
CHUNK = 8192  # queries per distance block
# a pair's band: these quantiles of its kernels' changes, from at least this many kernels (fixed
# before the rule ran: docs/decisions.md, "a sixth interval rule")
BAND_QUANTILES = (0.1, 0.9)
MIN_BAND_REFERENCES = 8


class Answers:
    """Every candidate's log10 relR for a set of pairs, and each pair's scale (NaN: none)."""

    def __init__(self, logs: dict[str, np.ndarray], scale: np.ndarray):
        self.logs = logs
        self.scale = scale


def roofline_per_rep(rows: pl.DataFrame, figures: pl.DataFrame, end: str) -> np.ndarray:
    """Seconds per rep of each row on its ``end`` machine by the plain roofline's figures."""
    return roofline_time(rows, figures, end) * rows.get_column("iterations_per_rep").to_numpy()


def benchmark_table(samples: pl.DataFrame, figures: pl.DataFrame) -> pl.DataFrame:
    """The benchmark samples' descriptors, slowdowns measured against the plain roofline of their
    own machine (:func:`~xamm_models.machines.efficiency.slowdowns`).

    Args:
        samples: benchmark samples.
        figures: the plain roofline's figures of their machines.

    Returns:
        The table :func:`candidate_answers` reads.
    """
    return slowdowns(samples, roofline_per_rep(samples, figures, "target"))


def _query(figures: pl.DataFrame, pairs: pl.DataFrame) -> np.ndarray:
    """The pairs' samples described from their source's side."""
    b = pairs.get_column("bytes_per_rep").fill_null(0.0).to_numpy().astype(float)
    f = pairs.get_column("flops_per_rep").fill_null(0.0).to_numpy().astype(float)
    t = (pairs.get_column("runtime_source") * pairs.get_column("iterations_per_rep")).to_numpy()
    return describe(b, f, launches_per_rep(pairs), t, roofline_per_rep(pairs, figures, "source"))


def _references(table: pl.DataFrame, source: str, target: str) -> tuple[np.ndarray, np.ndarray]:
    """(source-side descriptors, target slowdowns) of the kernels both machines ran."""
    s = table.filter(pl.col("target") == source)
    t = table.filter(pl.col("target") == target).select(
        "kernel", pl.col("slowdown").alias("_slow_t")
    )
    both = s.join(t, on="kernel", how="inner").sort("kernel")
    return both.select(DESCRIPTORS).to_numpy(), both.get_column("_slow_t").to_numpy()


def _neighbours(q: np.ndarray, ref: np.ndarray, k: int) -> np.ndarray:
    """Indices (rows of q, k) of each query's k nearest references in standardised descriptors,
    nearest first. Distances are summed column by column (no BLAS: its last bits, and so a
    near tie, would hang on the processor); queries go in chunks to bound memory."""
    k = min(k, ref.shape[0])
    if k == ref.shape[0]:
        return np.broadcast_to(np.arange(k), (q.shape[0], k))
    sd = np.maximum(ref.std(axis=0), MIN_SPREAD)
    a, r = q / sd, ref / sd
    out = np.empty((q.shape[0], k), dtype=np.int64)
    for lo in range(0, q.shape[0], CHUNK):
        part = a[lo : lo + CHUNK]
        d = np.zeros((part.shape[0], r.shape[0]))
        for j in range(r.shape[1]):
            d += (part[:, j, None] - r[None, :, j]) ** 2
        near = np.argpartition(d, k - 1, axis=1)[:, :k]
        order = np.argsort(np.take_along_axis(d, near, axis=1), axis=1, kind="stable")
        out[lo : lo + CHUNK] = np.take_along_axis(near, order, axis=1)
    return out


def _mad(x: np.ndarray) -> np.ndarray:
    med = np.median(x, axis=1, keepdims=True)
    return 1.4826 * np.median(np.abs(x - med), axis=1)


def _roofline_and_split(
    sigs: dict[str, PhysicsSignature], figures: pl.DataFrame, pairs: pl.DataFrame, used
) -> dict[str, np.ndarray]:
    """log10 relR of the roofline (the physics split where it has no answer) and of the split;
    without ``split`` among the candidates ``used``, the split is modelled on the roofline's gaps
    alone and left out."""
    with np.errstate(divide="ignore", invalid="ignore"):
        roof = np.log10(
            roofline_time(pairs, figures, "target") / roofline_time(pairs, figures, "source")
        )
    gap = ~np.isfinite(roof)
    if used is None or "split" in used:
        split = np.log10(split_relr(sigs, pairs))
        return {"split": split, "roofline": np.where(gap, split, roof)}
    split = np.full(pairs.height, np.nan)
    if gap.any():
        split[gap] = np.log10(split_relr(sigs, pairs.filter(pl.Series(gap))))
    return {"roofline": np.where(gap, split, roof)}


def candidate_answers(
    sigs: dict[str, PhysicsSignature],
    figures: pl.DataFrame,
    table: pl.DataFrame,
    pairs: pl.DataFrame,
    *,
    neighbours: bool = True,
    used: set[str] | None = None,
    samples: pl.DataFrame | None = None,
) -> Answers:
    """Every candidate's answer for ``pairs``.

    Args:
        sigs: physics signatures of both ends of every pair.
        figures: the plain roofline's figures
            (:func:`~xamm_models.benchmark.baselines.machine_figures`).
        table: the benchmark samples' descriptors
            (:func:`~xamm_models.machines.efficiency.slowdowns`) of the machines the pairs touch.
        pairs: pair rows (the source sample's work and time per iteration).
        neighbours: look for look-alike kernels at all (False: the neighbour candidates answer
            as the roofline and no pair has a scale; what an answer by the roofline or ``split``
            alone needs).
        used: the candidates that will be read (None: every one). Without ``split`` among them,
            it is modelled only where the roofline has no answer (the roofline's fallback), and
            left out of the answers.
        samples: the benchmark samples of the machines the pairs touch, for ``pair-constant``
            (None: it answers as the roofline).

    Returns:
        The answers.
    """
    logs = _roofline_and_split(sigs, figures, pairs, used)
    roof = logs["roofline"]
    if samples is not None and (used is None or "pair-constant" in used):
        logs["pair-constant"] = _pair_constants(samples, pairs, roof)
    logs.update({c: roof.copy() for c in CANDIDATES if c not in logs and c != "split"})
    scale = np.full(pairs.height, np.nan)
    if not neighbours:
        return Answers(logs, scale)
    q = _query(figures, pairs)
    for (s, t), rows in rows_by(pairs.get_column("source"), pairs.get_column("target")):
        ref, slow_t = _references(table, s, t)
        ok = np.all(np.isfinite(q[rows]), axis=1)
        if len(ref) < MIN_REFERENCES or not ok.any():
            continue
        rows = rows[ok]
        change = slow_t - ref[:, 3]
        logs["delta-all"][rows] = roof[rows] + np.median(change)
        idx = _neighbours(q[rows], ref, SPREAD_K)
        for k in (16, 4):
            logs[f"delta-{k}"][rows] = roof[rows] + np.median(change[idx[:, :k]], axis=1)
        level = np.median(slow_t[idx], axis=1)
        logs["level-16"][rows] = roof[rows] + level - q[rows, 3]
        scale[rows] = np.maximum(_mad(change[idx]), SCALE_FLOOR)
    return Answers(logs, scale)


def _pair_constants(samples: pl.DataFrame, pairs: pl.DataFrame, roof: np.ndarray) -> np.ndarray:
    """log10 of each pair's machine-pair constant (see ``pair-constant``); ``roof`` where there is
    none (a saved model without the samples' like-for-like columns holds them null)."""
    m = log_pair_constants(pairs, samples) / np.log(10.0)
    return np.where(np.isnan(m), roof, m)


def pair_bands(table: pl.DataFrame, pairs: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's band: the :data:`BAND_QUANTILES` of the changes of slowdown from source to
    target over every benchmark kernel both machines ran (log10: the plain roofline's error on
    each); NaN for pairs whose machines share fewer than :data:`MIN_BAND_REFERENCES` kernels.

    Args:
        table: the benchmark samples' descriptors (:func:`benchmark_table`) the answer may see.
        pairs: pair rows (``source``, ``target``).

    Returns:
        ``(low, high)``, one value each per pair.
    """
    low, high = np.full(pairs.height, np.nan), np.full(pairs.height, np.nan)
    for (s, t), rows in rows_by(pairs.get_column("source"), pairs.get_column("target")):
        ref, slow_t = _references(table, s, t)
        change = slow_t - ref[:, 3]
        if len(change) >= MIN_BAND_REFERENCES:
            low[rows], high[rows] = np.quantile(change, BAND_QUANTILES)
    return low, high
