"""Is the same silicon recognised? Each machine's runs split in two halves, every half asked for
its nearest known machine (:func:`xamm_models.machines.similarity.nearest`) among the other half
and every other machine.

A half is a set of whole source files, taken alternately in path order: for RAJAPerf runs written
one file per trial (quartz, dane, lassen) the halves hold other trials of the same kernels; for
runs written one file per kernel and size (the H100 and MI300A nodes) they hold other sizes of
the same kernels. For BabelStream (UoB), a platform's runs of one programming model are split the
same way, and the nearest must be the same platform (any programming model).
"""

from __future__ import annotations

import polars as pl

from xamm_models.machines.similarity import kernel_distance, nearest

__all__ = ["babelstream_halves", "halves", "rajaperf_halves"]


def halves(runs: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A machine's runs split by whole source files, alternately in path order.

    Args:
        runs: ``benchmark_runs`` rows of one machine (``source_path``).

    Returns:
        The two halves.
    """
    files = sorted(set(runs.get_column("source_path")))
    first = files[0::2]
    inside = pl.col("source_path").is_in(first)
    return runs.filter(inside), runs.filter(~inside)


def _half(name: str, i: int) -> str:
    machine, device = name.rsplit(":", 1)
    return f"{machine}#{i}:{device}"


def _recognised(name: str, parts: tuple, others: pl.DataFrame, same) -> dict:
    """Each half's nearest, the halves' distance and the nearest other machine's."""
    a, b = (p.with_columns(pl.lit(_half(name, i)).alias("target")) for i, p in enumerate(parts))
    found = [
        nearest(_half(name, i), me, pl.concat([others, other], how="diagonal_relaxed"))[0]
        for i, (me, other) in enumerate(((a, b), (b, a)))
    ]
    d_other = [kernel_distance(a, part)[0] for _, part in others.group_by(["target"])]
    d_other = [d for d in d_other if d == d]  # NaN: too few kernels in common
    return {
        "machine": name,
        "nearest_of_first": found[0],
        "nearest_of_second": found[1],
        "halves_distance": kernel_distance(a, b)[0],
        "nearest_other_distance": min(d_other) if d_other else float("nan"),
        "recognised": all(same(f) for f in found),
    }


def rajaperf_halves(runs: pl.DataFrame, samples_of) -> pl.DataFrame:
    """One row per machine end (``target``) of ``runs``: whether its halves are nearest each
    other among every other end of the same device kind.

    Args:
        runs: ``benchmark_runs`` rows with a ``target`` column (``machine:device``).
        samples_of: runs -> benchmark samples (``xplat.samples_from_runs``).

    Returns:
        ``machine``, the nearest of each half, the halves' kernel distance, the nearest other
        machine's, and ``recognised``.
    """
    rows = []
    ends = sorted(set(runs.get_column("target")))
    for t in ends:
        device = t.rsplit(":", 1)[-1]
        mine = runs.filter(pl.col("target") == t).drop("target")
        parts = tuple(samples_of(h) for h in halves(mine))
        others = pl.concat(
            [
                samples_of(runs.filter(pl.col("target") == u).drop("target")).with_columns(
                    pl.lit(u).alias("target")
                )
                for u in ends
                if u != t and u.endswith(":" + device)
            ],
            how="diagonal_relaxed",
        )
        mach = t.rsplit(":", 1)[0]
        rows.append(_recognised(t, parts, others, lambda n, m=mach: n.startswith(f"{m}#")))
    return pl.DataFrame(rows)


def _babel_samples(runs: pl.DataFrame) -> pl.DataFrame:
    return (
        runs.group_by("kernel", "problem_size")
        .agg(pl.col("time_per_rep_s").median(), pl.col("iterations_per_rep").first())
        .rename({"kernel": "app"})
    )


def babelstream_halves(runs: pl.DataFrame) -> pl.DataFrame:
    """One row per (platform, device, programming model) with two or more source files: whether
    both halves' nearest is the same platform, among every other platform and model of the device
    kind.

    Args:
        runs: BabelStream ``benchmark_runs`` rows (``machine``, ``device``, ``variant``).

    Returns:
        As :func:`rajaperf_halves`, ``machine`` reading ``platform|model:device``.
    """
    keyed = runs.with_columns(
        (pl.col("machine") + "|" + pl.col("variant") + ":" + pl.col("device")).alias("_end")
    )
    ends = {e: part for (e,), part in keyed.group_by(["_end"], maintain_order=True)}
    rows = []
    for e, part in sorted(ends.items()):
        if part.get_column("source_path").n_unique() < 2:
            continue
        platform, device = e.split("|")[0], e.rsplit(":", 1)[-1]
        others = pl.concat(
            [
                _babel_samples(p).with_columns(pl.lit(u).alias("target"))
                for u, p in sorted(ends.items())
                if u != e and u.endswith(":" + device)
            ]
        )
        parts = tuple(_babel_samples(h) for h in halves(part))
        rows.append(_recognised(e, parts, others, lambda n, p=platform: n.split("|")[0] == p))
    return pl.DataFrame(rows)
