"""The physics figures of compared targets side by side, what they lack, and the comparison as a
Thicket."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import polars as pl

from xamm_data.machines.registry import UnknownMachineError
from xamm_data.machines.registry import get as get_machine
from xamm_data.thicket import kernel_graph
from xamm_models.machines.nodes import PER_RANK
from xamm_models.machines.physics import BIN_OCTAVES, PhysicsSignature

__all__ = [
    "WORKING_SETS",
    "comparison_thicket",
    "missing_figures",
    "node_figures",
    "physics_table",
]

#: Working sets (bytes per launch) at which the bandwidth curves are shown side by side.
WORKING_SETS = {"32 KiB": 2.0**15, "1 MiB": 2.0**20, "32 MiB": 2.0**25, "1 GiB": 2.0**30}

_WHY = {
    "flop rate": "no kernel of at least 1 flop/byte ran (BabelStream runs stream only)",
    "launch overhead": "the runs' working sets span too few octaves to tell overhead from "
    "streaming",
}


def missing_figures(sig: PhysicsSignature) -> list[str]:
    """The physics figures ``sig``'s runs did not measure, each with why ("flop rate: ...")."""
    out = [f"{f}: {why}" for f, why in _WHY.items() if f not in sig.measures]
    if sig.flop_rate_from == "borrowed":
        out.append("flop rate: borrowed from the other targets of its device kind (none measured)")
    return out


def _bandwidth_at(sig: PhysicsSignature, ws: float) -> float | None:
    """The sustained bandwidth at ``ws`` where the runs measured near it (within half a bin of
    the measured range), else None: the curve is never extrapolated in a table."""
    x = np.log2(ws)
    if x < min(sig.bw_log2_ws) - BIN_OCTAVES / 2 or x > max(sig.bw_log2_ws) + BIN_OCTAVES / 2:
        return None
    return float(sig.bandwidth(np.array([ws]))[0])


def physics_table(sigs: dict[str, PhysicsSignature], scales: dict | None = None) -> pl.DataFrame:
    """One row per figure (bandwidth in GB/s at each of :data:`WORKING_SETS` and at the largest
    working set measured, flop rate in GFLOP/s, launch overhead in microseconds), one column per
    target; null where the target's runs did not measure it. Every figure is one rank's, as its
    runs ran, never above what a run achieved; with ``scales``, a node's bandwidth at the largest
    working set and flop rate follow (null where the node is known only per rank), never above a
    peak the machine registry records.

    Args:
        sigs: target -> its signature.
        scales: target -> its node scale (:func:`~xamm_models.machines.nodes.node_scale`).

    Returns:
        The table (``figure`` first).
    """
    rows: dict[str, list] = {"figure": []}
    for t in sigs:
        rows[t] = []
    for name, ws in WORKING_SETS.items():
        rows["figure"].append(f"bandwidth at {name} (GB/s)")
        for t, s in sigs.items():
            v = _bandwidth_at(s, ws)
            rows[t].append(None if v is None else v / 1e9)
    rows["figure"] += [
        "bandwidth at the largest working set (GB/s)",
        "flop rate (GFLOP/s)",
        "launch overhead (us)",
    ]
    for t, s in sigs.items():
        rows[t].append(s.sustained_bandwidth / 1e9)
        rows[t].append(s.flop_rate / 1e9 if s.flop_rate_from != "unbounded" else None)
        rows[t].append(s.overhead_s * 1e6 if s.overhead_from != "unmeasured" else None)
    if scales:
        rows["figure"] += [
            "a node: bandwidth at the largest working set (GB/s)",
            "a node: flop rate (GFLOP/s)",
        ]
        for t, s in sigs.items():
            bw, fr = node_figures(s, scales.get(t))
            rows[t] += [bw and bw / 1e9, fr and fr / 1e9]
    return pl.DataFrame(rows, schema={"figure": pl.String, **{t: pl.Float64 for t in sigs}})


def node_figures(sig: PhysicsSignature, scale) -> tuple[float | None, float | None]:
    """A node's sustained bandwidth (B/s, at the largest working set its runs measured) and flop
    rate (flop/s), never above the registry's peaks; (None, None) where the node is known only per
    rank."""
    if scale is None or scale.basis == PER_RANK:
        return None, None
    ws = np.array([2.0 ** max(sig.bw_log2_ws)])
    bw = float(sig.bandwidth(ws)[0] * scale.factors(sig, ws, np.array([True]))[0])
    fr = sig.flop_rate * scale.factor if sig.flop_rate_from != "unbounded" else None
    m = _machine_of(sig.target)
    peak = m.peak_flop_rate(sig.target.rsplit(":", 1)[-1]) if m else None
    if fr is not None and peak is not None:
        fr = min(fr, peak * (m.gpus_per_node if sig.target.endswith(":gpu") else 1))
    return bw, fr


def _machine_of(target: str):
    try:
        return get_machine(target.rsplit(":", 1)[0])
    except UnknownMachineError:
        return None


def _records(c) -> dict[tuple[str, int], dict]:
    """(kernel, profile) -> its metrics: seconds per iteration on each target (geometric mean
    over the sizes matched), and on the new target relR, predicted and departure per reference."""
    profiles = [c.new, *c.refs]
    out: dict[tuple[str, int], dict] = {}
    geo = lambda col: pl.col(col).log().mean().exp()  # noqa: E731
    per = c.pairs.group_by("ref", "kernel").agg(geo("s_per_iter_new"), geo("s_per_iter_ref"))
    for r in per.iter_rows(named=True):
        out.setdefault((r["kernel"], 0), {})["s_per_iter"] = r["s_per_iter_new"]
        out.setdefault((r["kernel"], profiles.index(r["ref"])), {})["s_per_iter"] = r[
            "s_per_iter_ref"
        ]
    for r in c.kernels.iter_rows(named=True):
        for m in ("relR", "predicted", "departure"):
            out[(r["kernel"], 0)][f"{m}@{r['ref']}"] = r[m]
    return out


def comparison_thicket(c):
    """The comparison as a Thicket (see :meth:`Comparison.to_thicket`).

    Args:
        c: a :class:`~xamm_models.compare.runs.comparison.Comparison` (this module is below it).

    Returns:
        A ``thicket.Thicket``: profile 0 the new target, 1.. the references.
    """
    try:
        import pandas as pd  # heavy: only when a Thicket is asked for

        # thicket prints a note about seaborn to stdout on import: kept off --json's output
        with contextlib.redirect_stdout(io.StringIO()):
            import thicket  # heavy, as above
    except ImportError as e:
        # a ModuleNotFoundError of the extra's module: the commands print its one-line hint
        raise ModuleNotFoundError(
            f"to_thicket needs Thicket ({e}): pip install 'xamm[thicket]'", name="thicket"
        ) from None

    graph, nodes = kernel_graph(c.kernels, "compare")
    profiles = [c.new, *c.refs]
    records = [
        {"node": nodes[k], "profile": p, "name": k, **m} for (k, p), m in _records(c).items()
    ]
    df = pd.DataFrame.from_records(records).set_index(["node", "profile"]).sort_index()
    ids = list(range(len(profiles)))
    meta = pd.DataFrame.from_records(
        [
            {"target": t, "role": "new" if i == 0 else "reference", "family": c.family,
             "backend": c.backends.get(t)}
            for i, t in enumerate(profiles)
        ],
        index=pd.Index(ids, name="profile"),
    )  # fmt: skip
    metrics = [m for m in df.columns if m != "name"]
    return thicket.Thicket(
        graph,
        df,
        exc_metrics=metrics,
        inc_metrics=[],
        default_metric="s_per_iter",
        metadata=meta,
        profile=ids,
        profile_mapping=dict(zip(ids, profiles, strict=True)),
    )
