"""Physics machine models: what a target sustains, measured from its own benchmark runs.

A :class:`PhysicsSignature` holds three interpretable parts, each a robust statistic of the target's
benchmark samples (``time_per_rep_s``, ``bytes_per_rep``, ``flops_per_rep``, ``kernels_per_rep``):

* ``overhead_s``: the per-launch cost of an offloaded or threaded kernel (a GPU launch, an OpenMP
  fork and join): the 5th percentile of time per launch among the launches with the smallest
  working sets (the quarter of the rows that move the fewest bytes per launch: only there can a
  fixed cost show under the streaming time). It is measured only when the launches' working sets
  span at least :data:`OVERHEAD_SPAN_OCTAVES` octaves: with launches of one size (BabelStream at
  one array size) the 5th percentile is the fastest kernel's own streaming time, not an overhead,
  so the signature says ``overhead_from == "unmeasured"``, models none, and never credits streaming
  time to it. A **sequential** run (every sample a ``Seq`` variant) has no launch: a loop costs
  nothing that the runs resolve, and its overhead is 0 (``overhead_from == "none"``);
* ``flop_rate``: the 90th percentile of the achieved flop rate, launch overhead removed, over
  kernels of at least :data:`MIN_INTENSITY` flop/byte only: a streaming kernel's flop rate is set by
  the bandwidth, and taking it for the compute rate makes every compute-heavy kernel look
  compute-bound. With fewer than :data:`MIN_PER_BIN` such kernels the machine shows no compute
  ceiling and ``flop_rate`` is :data:`UNBOUNDED_FLOPS` (compute never binds in the model), unless
  :func:`physics_signatures` can borrow the flop rate of machines of its device kind
  (:func:`borrow_flop_rates`);
* a bandwidth curve over the working set per launch (``bytes_per_rep / kernels_per_rep``), in bins
  of :data:`BIN_OCTAVES` octaves: the 90th percentile of the achieved bandwidth in each bin, launch
  overhead removed, over kernels below :data:`MIN_INTENSITY` flop/byte only (a compute-bound
  kernel's bytes over its time says nothing of the memory). This is where the cache and latency
  regimes show: a CPU streams small working sets from cache faster than from memory, a GPU reaches
  its bandwidth only once a launch moves enough bytes.

No figure is ever above what some run achieved (:func:`best_achieved`): the overhead is taken out of
a row's time only where at least half of the time is left (:data:`MIN_BUSY_SHARE`; where the
overhead is most of the time, the remainder is noise divided into the bytes), and every bin and the
flop rate are capped at the best bandwidth and flop rate any of the machine's rows achieved, time
included.

:func:`modelled_time` is then max(bytes / BW(working set), flops / F) + overhead x launches, per
rep.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, model_serializer, model_validator

from xamm_models.achieved import (  # noqa: F401 (the figures' rules, re-exported with them)
    MIN_BUSY_SHARE,
    OVERHEAD_QUANTILE,
    OVERHEAD_SPAN_OCTAVES,
    best_achieved,
    launch_overhead,
    launches_kernels,
    launches_per_rep,
    sample_arrays,
)

BIN_OCTAVES = 2.0
QUANTILE = 0.9
MIN_PER_BIN = 3
MIN_INTENSITY = 1.0  # flop/byte
OVERHEAD_FLOOR_S = 1e-9  # where a log of the overhead is taken and none was measured
UNBOUNDED_FLOPS = 1e18  # no compute-bound evidence: compute never binds in the model


class PhysicsSignature(BaseModel):
    """A target's sustained bandwidth curve, compute rate and launch overhead (see the module
    docstring)."""

    model_config = ConfigDict(frozen=True)
    target: str
    overhead_s: float
    flop_rate: float
    bw_log2_ws: list[float]  # per bin: the median log2 of its rows' bytes per launch
    bw: list[float]  # bytes/s sustained in each bin
    n_samples: int
    # see borrow_flop_rates; "specifications": peaks times an efficiency, no run of the target
    # (xamm_models.machines.specifications)
    flop_rate_from: Literal["measured", "borrowed", "unbounded", "specifications"]
    overhead_from: Literal["measured", "unmeasured", "none", "specifications"] = "measured"

    @model_serializer(mode="wrap")
    def _compact(self, handler):
        """A measured overhead is the default and stays out of the JSON: only a signature that
        could not measure one says so in its file."""
        out = handler(self)
        if isinstance(out, dict) and out.get("overhead_from") == "measured":
            out.pop("overhead_from")
        return out

    @property
    def measures(self) -> tuple[str, ...]:
        """What the target's runs measured: ``bandwidth``, and ``flop rate`` and ``launch
        overhead`` where they did (a bandwidth-only signature claims nothing else; one from
        specifications, nothing)."""
        if self.flop_rate_from == "specifications":
            return ()
        return (
            ("bandwidth",)
            + (("flop rate",) if self.flop_rate_from == "measured" else ())
            + (("launch overhead",) if self.overhead_from in ("measured", "none") else ())
        )

    @model_validator(mode="before")
    @classmethod
    def _provenance(cls, data):
        """Records written before ``flop_rate_from`` existed: an unbounded rate says it was never
        measured."""
        if isinstance(data, dict) and "flop_rate_from" not in data:
            data = {
                **data,
                "flop_rate_from": "unbounded"
                if data.get("flop_rate", 0.0) >= UNBOUNDED_FLOPS
                else "measured",
            }
        return data

    def bandwidth(self, ws: np.ndarray) -> np.ndarray:
        """Sustained bytes/s at working sets ``ws``: interpolated in log space, clamped.

        Args:
            ws: working sets (bytes per launch).

        Returns:
            Bytes per second, one per working set.
        """
        x = np.log2(np.clip(np.asarray(ws, dtype=float), 1.0, None))
        return np.exp(np.interp(x, self.bw_log2_ws, np.log(self.bw)))

    @property
    def sustained_bandwidth(self) -> float:
        """Bytes/s at the largest working set the runs measured: what streaming from memory
        sustains."""
        return float(self.bandwidth(np.array([2.0 ** max(self.bw_log2_ws)]))[0])

    def vector(self, ws: np.ndarray) -> np.ndarray:
        """Features for a learned model at working sets ``ws``: log10 of bandwidth there, flop
        rate, overhead.

        Args:
            ws: working sets (bytes per launch).

        Returns:
            One row of features per working set.
        """
        n = len(np.atleast_1d(ws))
        return np.column_stack(
            [
                np.log10(self.bandwidth(ws)),
                np.full(n, np.log10(self.flop_rate)),
                np.full(n, np.log10(max(self.overhead_s, OVERHEAD_FLOOR_S))),
            ]
        )


def physics_signature(target: str, samples: pl.DataFrame) -> PhysicsSignature:
    """The signature of one target from its benchmark samples.

    Args:
        target: ``machine:device``.
        samples: its benchmark samples (one row per kernel and size).

    Returns:
        The signature.
    """
    return signature_from_arrays(target, sample_arrays(samples), launches=launches_kernels(samples))


def _bandwidth_bins(
    ws: np.ndarray, bw: np.ndarray, use: np.ndarray, cap: float
) -> tuple[list[float], list[float]]:
    """Per bin of :data:`BIN_OCTAVES` octaves with enough usable rows: the median log2 working set
    of its rows and the 90th percentile of ``bw`` among them, capped at ``cap``."""
    if not use.any():
        return [0.0], [cap if cap > 0 else 1.0]
    # a fixed grid: which rows share a bin does not hang on the smallest row
    start = BIN_OCTAVES * np.floor(ws[use].min() / BIN_OCTAVES)
    edges = np.arange(start, ws[use].max() + BIN_OCTAVES, BIN_OCTAVES)
    centres, values = [], []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = use & (ws >= lo) & (ws < hi)
        if inside.sum() >= MIN_PER_BIN:
            # placed where its rows are, not at the bin's middle: the curve is read between bins
            centres.append(float(np.median(ws[inside])))
            values.append(min(float(np.quantile(bw[inside], QUANTILE)), cap))
    if not centres:
        centres = [float(np.median(ws[use]))]
        values = [min(float(np.quantile(bw[use], QUANTILE)), cap)]
    return centres, values


def signature_from_arrays(
    target: str, arrays: np.ndarray, *, launches: bool = True
) -> PhysicsSignature:
    """:func:`physics_signature` from :func:`sample_arrays` (row order does not matter): resampling
    kernels hundreds of times needs no data frame.

    Args:
        target: ``machine:device``.
        arrays: rows of (time per rep, bytes per rep, flops per rep, launches).
        launches: False for a sequential run (no launch overhead; :func:`launches_kernels`).

    Returns:
        The signature.
    """
    t, b, f, n = arrays.T
    best_bw, best_fr = best_achieved(arrays)
    overhead, overhead_from = launch_overhead(t, b, n, launches)
    busy = t - overhead * n
    # where the overhead is most of a row's time, what is left says nothing of the rates
    clear = busy >= MIN_BUSY_SHARE * t
    dense = (f > 0) & (f >= MIN_INTENSITY * b)
    fr = f[dense & clear] / busy[dense & clear]
    measured = len(fr) >= MIN_PER_BIN
    flop_rate = min(float(np.quantile(fr, QUANTILE)), best_fr) if measured else UNBOUNDED_FLOPS
    ws = np.log2(np.clip(b / n, 1.0, None))
    streaming = (b > 0) & (f < MIN_INTENSITY * b) & clear
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = np.where(streaming, b / busy, 0.0)
    centres, values = _bandwidth_bins(ws, bw, streaming, best_bw)
    return PhysicsSignature(
        target=target,
        overhead_s=overhead,
        flop_rate=flop_rate,
        bw_log2_ws=centres,
        bw=values,
        n_samples=len(arrays),
        flop_rate_from="measured" if measured else "unbounded",
        overhead_from=overhead_from,
    )


def borrow_flop_rates(
    sigs: dict[str, PhysicsSignature], reference: dict[str, PhysicsSignature] | None = None
) -> dict[str, PhysicsSignature]:
    """Each signature with no compute-bound evidence (``flop_rate_from == "unbounded"``) gets the
    median measured flop rate of its device kind (cpu/gpu) among ``sigs`` and ``reference``; with
    none of its kind measured, its own sustained bandwidth times the median balance (flop rate over
    sustained bandwidth) of every measured signature; with none measured it stays unbounded.

    Why: a target whose benchmark runs hold no kernel of at least :data:`MIN_INTENSITY` flop/byte
    (in ``xplat-rajaperf``, the H100 and MI300A nodes once a fold holds out RAJAPerf's Apps group,
    their only dense kernels) would otherwise be modelled with unbounded compute, and every
    compute-heavy application predicted faster on it by orders of magnitude. A peer's flop rate is a
    guess (the measured rates of this data's CPUs lie within 1.6x of each other, of its GPUs within
    2.3x; tests/models/benchmark/test_evaluation.py), not infinity. Across kinds a rate is no guess
    (a GPU's is hundreds of times a CPU's) but a balance is: compute and memory are sized together.

    Args:
        sigs: the signatures to complete.
        reference: more signatures a flop rate may be borrowed from.

    Returns:
        ``sigs``, each unbounded one with a borrowed rate where any peer was measured."""
    measured = {
        t: s for t, s in {**(reference or {}), **sigs}.items() if s.flop_rate_from == "measured"
    }
    balance = [m.flop_rate / max(m.bw) for _, m in sorted(measured.items())]
    out = {}
    for t, s in sigs.items():
        kind = t.rsplit(":", 1)[-1]
        pool = [m.flop_rate for u, m in sorted(measured.items()) if u.rsplit(":", 1)[-1] == kind]
        if not pool and balance:
            pool = [float(np.median(balance)) * max(s.bw)]
        # a bandwidth-only signature (one size of streaming runs) claims no compute rate at all
        borrow = s.flop_rate_from == "unbounded" and s.overhead_from != "unmeasured" and pool
        out[t] = (
            s.model_copy(update={"flop_rate": float(np.median(pool)), "flop_rate_from": "borrowed"})
            if borrow
            else s
        )
    return out


def physics_signatures(
    samples: pl.DataFrame,
    reference: dict[str, PhysicsSignature] | None = None,
    *,
    borrow: bool = True,
) -> dict[str, PhysicsSignature]:
    """One signature per target of the benchmark samples; a target without compute-bound
    evidence borrows its flop rate from the others (:func:`borrow_flop_rates`).

    Args:
        samples: benchmark samples of any number of targets.
        reference: more signatures a flop rate may be borrowed from.
        borrow: borrow flop rates at all (False: the evaluation's ablation of the rule).

    Returns:
        Target -> signature.
    """
    sigs = {
        t: physics_signature(t, part)
        for (t,), part in samples.group_by(["target"], maintain_order=True)
    }
    return borrow_flop_rates(sigs, reference) if borrow else sigs


def modelled_time(sig: PhysicsSignature, rows: pl.DataFrame) -> np.ndarray:
    """Seconds per rep of each row on ``sig``'s target.

    Args:
        sig: the target's signature.
        rows: ``bytes_per_rep``, ``flops_per_rep``, ``kernels_per_rep``.

    Returns:
        One time per row.
    """
    return _modelled(sig, *_work(rows))


def _work(rows: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (
        rows.get_column("bytes_per_rep").fill_null(0.0).to_numpy().astype(float),
        rows.get_column("flops_per_rep").fill_null(0.0).to_numpy().astype(float),
        launches_per_rep(rows),
    )


def _modelled(sig: PhysicsSignature, b: np.ndarray, f: np.ndarray, n: np.ndarray) -> np.ndarray:
    return np.maximum(b / sig.bandwidth(b / n), f / sig.flop_rate) + sig.overhead_s * n


def rows_by(*cols: pl.Series) -> list[tuple[tuple, np.ndarray]]:
    """(value, row indices) per distinct value of ``cols`` (distinctly named), found by hashing:
    sorting the strings of 1e5 prediction rows, as ``np.unique`` does, costs about as much as
    modelling their times."""
    names = [c.name for c in cols]
    g = (
        pl.DataFrame(list(cols))
        .with_row_index("_row")
        .group_by(names, maintain_order=True)
        .agg("_row")
    )
    # each group's rows straight from polars' list column (not through Python lists)
    rows = g.get_column("_row")
    return [
        (key, rows[i].to_numpy().astype(np.int64)) for i, key in enumerate(g.select(names).rows())
    ]


def modelled_per_end(
    sigs: dict[str, PhysicsSignature], pairs: pl.DataFrame, end: str
) -> np.ndarray:
    """Modelled seconds per rep of each pair's kernel on its ``end`` ("source" or "target"); NaN if
    unknown."""
    out = np.full(pairs.height, np.nan)
    # once, then sliced per machine: gathering every column of the rows costs more than modelling
    work = _work(pairs)
    for (t,), rows in rows_by(pairs.get_column(end)):
        if t in sigs:
            out[rows] = _modelled(sigs[t], *(w[rows] for w in work))
    return out


# working sets (bytes per launch) where two bandwidth curves are compared
SIMILARITY_WS = 2.0 ** np.arange(12, 34, 2)


def distance(a: PhysicsSignature, b: PhysicsSignature) -> float:
    """How unlike two machines are: Euclidean distance of log10 bandwidth over
    :data:`SIMILARITY_WS`, log10 flop rate and log10 launch overhead.

    Args:
        a: a signature.
        b: another.

    Returns:
        The distance.
    """
    return float(np.linalg.norm(a.vector(SIMILARITY_WS) - b.vector(SIMILARITY_WS)))


def most_similar(sig: PhysicsSignature, known: dict[str, PhysicsSignature]) -> str:
    """The known target of the same device kind (cpu/gpu) nearest to ``sig``
    (:func:`distance`). With the machines' benchmark samples at hand,
    :func:`xamm_models.machines.similarity.nearest` compares their times kernel by kernel
    instead, which tells two halves of one machine's runs apart from other machines where the
    signatures do not.

    Args:
        sig: a signature.
        known: the known targets' signatures.

    Returns:
        The nearest known target.
    """
    device = sig.target.rsplit(":", 1)[-1]
    same = {
        t: s for t, s in known.items() if t.rsplit(":", 1)[-1] == device and t != sig.target
    } or known
    return min(sorted(same), key=lambda t: distance(sig, same[t]))
