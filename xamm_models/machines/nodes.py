"""Whole nodes: how many times a node does what one rank of a machine's benchmark runs does.

A physics signature is measured per rank, in the configuration its runs used: RAJAPerf runs the same
kernel on every rank and reports one rank's work, timed between barriers (its user guide, "Running
with MPI"). What one rank gets depends on how many others run beside it, so a per-rank comparison
of a 112-rank run with a one-rank run says nothing about the two machines. :func:`node_scale` turns
a rank into a node from the registry's node facts (:mod:`xamm_data.machines.registry`) and the
runs' own configuration:

* **node, measured**: the runs filled the node (ranks x threads = its cores; one rank per GPU on all
  its GPUs). A node does ranks x one rank's work at one rank's pace: factor = ranks.
* **node, scaled from part of it**, where the physics allows it and the registry has the facts:
  - GPUs are independent devices with their own memory: runs on some of a node's GPUs scale by
    GPUs a node / GPUs used;
  - on CPUs, compute and what each core's caches hold scale with the cores (factor = cores /
    threads a rank), but memory does not: a region whose working set, over the whole node, exceeds
    the node's last-level cache streams at most at the node's peak memory bandwidth (the registry's
    ``memory_bandwidth_gbs``), so its factor is min(cores / threads, peak / one rank's bandwidth).
    Without a recorded peak no CPU node is scaled.
* **per rank**: anything else (no rank count, no core or GPU count, no memory bandwidth for a
  partial CPU run). Said in every table that shows the figure.

The same cap holds for a measured node: no node figure exceeds a peak the registry records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from xamm_data.machines.registry import Machine, UnknownMachineError
from xamm_data.machines.registry import get as get_machine
from xamm_data.machines.targets import Target
from xamm_models.machines.physics import PhysicsSignature

Basis = Literal["node", "node, scaled", "per rank"]
NODE, SCALED, PER_RANK = "node", "node, scaled", "per rank"

__all__ = [
    "NODE",
    "PER_RANK",
    "SCALED",
    "NodeScale",
    "RunConfig",
    "configurations",
    "fullest",
    "node_scale",
    "node_use",
    "profile_fills",
    "run_of",
]


@dataclass(frozen=True)
class RunConfig:
    """How a target's benchmark runs ran: ranks, threads a rank, GPUs, the variant(s)."""

    ranks: int | None
    threads: int | None
    gpus: int | None
    variant: str

    def shape(self) -> str:
        """``112 ranks x 1 thread`` (``?`` where the runs do not say)."""

        def count(n: int | None, unit: str) -> str:
            return f"{n if n is not None else '?'} {unit}{'' if n == 1 else 's'}"

        return f"{count(self.ranks, 'rank')} x {count(self.threads, 'thread')}"

    def describe(self) -> str:
        """``112 ranks x 1 thread, Base_Seq``."""
        return f"{self.shape()}, {self.variant}"


@dataclass(frozen=True)
class NodeScale:
    """How one target's per-rank figures become a node's (see the module docstring)."""

    target: str
    basis: Basis
    why: str
    factor: float = 1.0  # node / rank for compute, and for everything when measured or a GPU
    memory_peak: float | None = None  # B/s a node's memory sustains at most
    cache: float | None = None  # bytes of last-level cache a node holds

    def factors(self, sig: PhysicsSignature, ws: np.ndarray, streaming: np.ndarray) -> np.ndarray:
        """Node / rank for each region: ``factor``, and for a streaming region whose working set,
        over the node, exceeds its cache, no more than the memory peak over one rank's bandwidth.

        Args:
            sig: the target's per-rank signature.
            ws: each region's working set a rank (bytes a launch).
            streaming: whether each region is bound by memory (below 1 flop a byte, or time-only).

        Returns:
            One factor per region.
        """
        ws = np.asarray(ws, dtype=float)
        out = np.full(ws.shape, self.factor)
        if self.basis == PER_RANK or self.memory_peak is None:
            return out
        beyond = streaming & (ws * self.factor > (self.cache if self.cache is not None else 0.0))
        if beyond.any():
            capped = self.memory_peak / sig.bandwidth(ws[beyond])
            out[beyond] = np.minimum(out[beyond], capped)
        return out


def _machine(target: str) -> Machine | None:
    try:
        return get_machine(Target.parse(target).machine)
    except UnknownMachineError:
        return None


def _gpu_scale(target: str, m: Machine, run: RunConfig) -> NodeScale:
    per_node = m.gpus_per_node
    used = run.gpus or run.ranks
    peak = m.memory_bandwidth("gpu")
    if used >= per_node:
        why = f"{run.ranks} ranks on all {per_node} GPUs: the node measured"
        return NodeScale(target, NODE, why, float(run.ranks), peak and peak * per_node, None)
    k = run.ranks * per_node / used
    why = (
        f"{used} of the node's {per_node} GPUs measured; GPUs are independent devices with their "
        f"own memory: x{per_node / used:g}"
    )
    return NodeScale(target, SCALED, why, k, peak and peak * per_node, None)


def _cpu_scale(target: str, m: Machine, run: RunConfig) -> NodeScale:
    cores, threads = m.cores_per_node, run.threads or 1
    used = run.ranks * threads
    peak, cache = m.memory_bandwidth("cpu"), m.cache_bytes("cpu")
    if used >= cores:
        why = f"{run.shape()} on its {cores} cores: the node measured"
        return NodeScale(target, NODE, why, float(run.ranks), peak, cache)
    if peak is None:
        why = (
            f"its runs used {used} of the node's {cores} cores and the registry records no memory "
            f"bandwidth to bound the rest (xamm machines add {Target.parse(target).machine} "
            "--memory-bandwidth-gbs N)"
        )
        return NodeScale(target, PER_RANK, why)
    why = (
        f"{used} of the node's {cores} cores measured: compute x{cores / threads:g}, memory at "
        f"most the registry's {peak / 1e9:g} GB/s peak beyond its "
        + (f"{cache / 2**20:g} MiB cache" if cache is not None else "cache")
    )
    return NodeScale(target, SCALED, why, cores / threads, peak, cache)


def node_scale(target: str, run: RunConfig | None) -> NodeScale:
    """How ``target``'s per-rank figures become a node's, from its runs' configuration and the
    registry's node facts (see the module docstring).

    Args:
        target: ``machine:device``.
        run: how its benchmark runs ran (None: unknown).

    Returns:
        The scale, with the sentence saying why.
    """
    device = Target.parse(target).device or "cpu"
    m = _machine(target)
    unit = "GPU" if device == "gpu" else "core"
    if run is None or run.ranks is None:
        return NodeScale(target, PER_RANK, "its runs do not record their rank count")
    if m is None or m.units_per_node(device) is None:
        return NodeScale(
            target,
            PER_RANK,
            f"the registry has no {unit} count for its node "
            f"(xamm machines add {Target.parse(target).machine} --{unit.lower()}s-per-node N)",
        )
    return _gpu_scale(target, m, run) if device == "gpu" else _cpu_scale(target, m, run)


def profile_fills(
    source: str, ranks: int | None, threads: int | None, gpus: int | None, hosts: int | None
) -> tuple[bool, str]:
    """Whether a profile measured on ``source`` used whole nodes (so a node there can be compared
    with a node elsewhere), and the sentence saying so.

    Args:
        source: ``machine:device`` it was measured on.
        ranks: its ranks.
        threads: threads a rank.
        gpus: GPUs it used.
        hosts: nodes it ran on.

    Returns:
        (filled, why).
    """
    device = Target.parse(source).device or "cpu"
    m = _machine(source)
    per_node = m.units_per_node(device) if m else None
    if per_node is None:
        return False, f"the registry has no {'GPU' if device == 'gpu' else 'core'} count for it"
    if ranks is None:
        return False, "the profile does not say how many ranks it ran"
    used = (gpus or ranks) if device == "gpu" else ranks * (threads or 1)
    unit = "GPUs" if device == "gpu" else "cores"
    if hosts is None:
        if used == per_node:
            return True, f"its {used} {unit} fill one node of {per_node} {unit}"
        return False, (
            f"it used {used} {unit} and does not say on how many nodes of {per_node} {unit} "
            "(its metadata has no node count)"
        )
    if used >= per_node * hosts:
        return True, f"its {used} {unit} fill {hosts} node{'s' if hosts != 1 else ''} of {per_node}"
    return False, f"it used {used} of {per_node * hosts} {unit} on {hosts} node(s)"


def node_use(g: pl.DataFrame) -> int:
    """How much of a node a configuration uses: GPUs, or ranks x threads."""
    return node_use_of(g.row(0, named=True))


def node_use_of(r: dict) -> int:
    """:func:`node_use` of one row (``ranks``, ``threads``, ``gpus``)."""
    return (r["gpus"] or r["ranks"] or 0) * (r["threads"] or 1)


def configurations(rows: pl.DataFrame) -> list[pl.DataFrame]:
    """The configurations of ``rows``, the one using the most of a node first (then the most
    rows)."""
    missing = [c for c in ("ranks", "threads", "gpus") if c not in rows.columns]
    rows = rows.with_columns(pl.lit(None, pl.Int64).alias(c) for c in missing)
    groups = [g for _, g in rows.group_by(["ranks", "threads", "gpus"], maintain_order=True)]
    return sorted(groups, key=lambda g: (-node_use(g), -g.height))


def run_of(rows: pl.DataFrame | pl.LazyFrame) -> RunConfig:
    """How the rows of one configuration ran, with their variants."""
    r = (
        rows.lazy()
        .select(
            pl.col("ranks", "threads", "gpus").first(),
            pl.col("variant").unique().sort().str.join(", ").alias("_variants"),
        )
        .collect(engine="in-memory")  # the first row in the rows' order
        .row(0, named=True)
    )
    return RunConfig(r["ranks"], r["threads"], r["gpus"], r["_variants"])


def fullest(rows: pl.DataFrame | pl.LazyFrame) -> tuple[pl.LazyFrame, RunConfig]:
    """The rows of the configuration (ranks, threads, GPUs) that uses the most of a node, and how
    it ran: a per-rank figure of 1 rank beside one of 112 ranks describes two different machines.

    Args:
        rows: one target's ``benchmark_runs`` rows of one family.

    Returns:
        (the rows kept, lazily; their configuration).
    """
    keys = ("ranks", "threads", "gpus")
    rows = rows.lazy()
    missing = [c for c in keys if c not in rows.collect_schema().names()]
    rows = rows.with_columns(pl.lit(None, pl.Int64).alias(c) for c in missing)
    # the configurations by how much of a node each uses, then by rows (as configurations(), but
    # without a copy of every configuration's rows)
    counting = rows.group_by(keys, maintain_order=True).agg(pl.len().alias("_n"))
    counts = counting.collect(engine="in-memory")  # in the rows' order: a tie keeps the first
    best = max(counts.iter_rows(named=True), key=lambda r: (node_use_of(r), r["_n"]))
    chosen = rows.filter(pl.all_horizontal(pl.col(k).eq_missing(best[k]) for k in keys))
    return chosen.drop(missing), run_of(chosen)
