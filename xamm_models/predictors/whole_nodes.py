"""A profile's per-rank region predictions turned into whole node against whole node, where the
facts allow it, and what each target's figure means.

A prediction from signatures is per rank: one rank of the profile on the source against one rank of
each target's benchmark runs. The user's question is about machines: the job on a node here, the
same job on a node there. With the node scales of :mod:`xamm_models.machines.nodes` (a target's
node does ``k`` times what one rank of its runs does), a region's

    relR(node) = relR(per rank) x k(source) / k(target)

and its interval moves with it. This holds when the profile itself used whole nodes of the source
(:func:`~xamm_models.machines.nodes.profile_fills`): its measured time is then a node's time.
Communication and I/O regions are held as measured, on as many nodes.

Each target's row says which it is (``basis``: ``node``, ``node, scaled`` or ``per rank``), what the
prediction assumes (``assumes``: a port to another device, or another programming model on the
same one) and where its runs come from (``target_from``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from xamm_data.machines.targets import Target
from xamm_models.machines.nodes import PER_RANK, NodeScale, node_scale, profile_fills
from xamm_models.machines.physics import MIN_INTENSITY, PhysicsSignature
from xamm_models.predictors.configurations import TargetRuns

VIEWS = ("node", "rank")
HELD = "held constant"

__all__ = ["HELD", "VIEWS", "View", "assumption", "node_view", "scale_regions"]


@dataclass
class View:
    """How a prediction compares: per target its scale, and the sentences that say why."""

    kind: str  # "node" or "rank"
    scales: dict[str, NodeScale]
    source_why: str
    notes: list[str] = field(default_factory=list)

    def basis(self, target: str) -> str:
        """``node``, ``node, scaled`` or ``per rank`` for ``target``."""
        return self.scales[target].basis if self.kind == "node" else PER_RANK


def node_view(
    profile, source: str, targets: list[str], cat: dict[str, TargetRuns], kind: str
) -> View:
    """Each target's node scale, when the profile and the source let a node be compared.

    Args:
        profile: the :class:`~xamm_data.tables.regions.RegionProfile`.
        source: its machine.
        targets: where it is predicted (source included).
        cat: the targets' runs (:func:`~xamm_models.predictors.configurations.catalogue`).
        kind: ``node`` (whole nodes where the facts allow it) or ``rank``.

    Returns:
        The view.
    """
    if kind not in VIEWS:
        raise ValueError(f"config {kind!r}: expected one of {', '.join(VIEWS)}")
    scales = {t: node_scale(t, cat[t].run if t in cat else None) for t in targets}
    m = profile.meta
    if kind == "rank":
        return View("rank", scales, "per rank, as asked (--config rank)")
    fills, why = profile_fills(source, m.ranks, m.threads, m.gpus, m.hosts)
    if not fills:
        return View("rank", scales, f"per rank: the profile does not fill whole nodes ({why})")
    if scales[source].basis == PER_RANK:
        return View("rank", scales, f"per rank: for the source {source}, {scales[source].why}")
    return View("node", scales, f"whole nodes: {why}; the source {scales[source].why}")


def _region_load(rows: pl.DataFrame, sig: PhysicsSignature) -> tuple[np.ndarray, np.ndarray]:
    """Each predicted region's working set a rank and whether memory binds it (a time-only region
    streams at the source's sustained bandwidth, so at its largest measured working set)."""
    nbytes = rows.get_column("bytes_per_rep").to_numpy()
    launches = rows.get_column("kernels_per_rep").to_numpy()
    flops = rows.get_column("flops_per_rep").to_numpy()
    only = rows.get_column("time_only").to_numpy()
    ws = np.where(only, 2.0 ** max(sig.bw_log2_ws), nbytes / np.clip(launches, 1.0, None))
    return ws, only | (flops < MIN_INTENSITY * nbytes)


def scale_regions(
    regions: pl.DataFrame, rows: pl.DataFrame, source: str, sigs: dict, view: View
) -> pl.DataFrame:
    """Per-rank region predictions x k(source) / k(target) (held regions stay as measured).

    Args:
        regions: per (region, target) predictions (:func:`~xamm_models.predictors.composed.
            predict_regions`).
        rows: the predicted regions' profile rows (``region_rows``), with ``app`` = region.
        source: the profile's machine.
        sigs: signatures by target.
        view: the view (a ``rank`` view returns ``regions`` unchanged).

    Returns:
        ``regions`` with relR, its bounds and times scaled.
    """
    if view.kind == "rank" or rows.height == 0:
        return regions
    ws, streaming = _region_load(rows, sigs[source])
    k_src = view.scales[source].factors(sigs[source], ws, streaming)
    parts = []
    names = rows.get_column("app")
    for t in regions.get_column("target").unique(maintain_order=True):
        if view.basis(t) == PER_RANK:
            continue
        k_t = view.scales[t].factors(sigs[t], ws, streaming)
        parts.append(pl.DataFrame({"region": names, "target": [t] * len(names), "_f": k_src / k_t}))
    if not parts:
        return regions
    f = pl.col("_f").fill_null(1.0)
    held = pl.col("regime") == HELD
    cols = ("relR", "relR_lo", "relR_hi", "time_s", "time_lo_s", "time_hi_s")
    return (
        regions.join(pl.concat(parts), on=["region", "target"], how="left", maintain_order="left")
        .with_columns(pl.when(held).then(pl.col(c)).otherwise(pl.col(c) * f).alias(c) for c in cols)
        .drop("_f")
    )


def assumption(family: str, source: str, target: str, tr: TargetRuns | None, basis: str) -> str:
    """What predicting a profile of ``family`` measured on ``source`` onto ``target`` assumes: a
    port to another device; per rank, another programming model on the same device (a node
    against a node compares the whole machine whatever model filled it); or nothing.

    Args:
        family: the profile's family.
        source: its machine.
        target: the target.
        tr: the target's runs (their family).
        basis: the target's basis in this view.

    Returns:
        The assumption, or an empty string.
    """
    dev = Target.parse(target).device
    if target == source:
        return ""
    if (family == "gpu") != (dev == "gpu"):
        return f"a port to the {(dev or 'other device').upper()}"
    if basis == PER_RANK and tr is not None and tr.family != family:
        return f"the {family} build against {tr.family} runs"
    return ""
