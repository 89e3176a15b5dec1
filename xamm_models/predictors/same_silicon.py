"""Same silicon: a target that shares its processor with a measured machine (partition modes of
one node, or the same CPU or GPU model in the registry: :func:`xamm_data.machines.same_silicon`)
answered from that machine's measured ratios, scaled by the two nodes' configuration.

For a pair (sample x measured on source s, target t) and a measured sibling m of t:

    relR(s -> t, x) = relR(s -> m, x), measured  x  c(m -> t)

where ``c(m -> t)`` is the configuration scale: the median ratio of t's to m's times per iteration
over the benchmark kernels both ran like for like (ranks per node, partitions, clocks: whatever
differs between the two nodes' runs of one processor). No label of t is read: its benchmark runs
give the scale, as a new machine's do. Where s is m itself the measured ratio is 1; where m never
ran x like for like with s, or t and m share no kernel, there is no answer (NaN), and the caller
keeps its own.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_data.machines import same_silicon
from xamm_models.benchmark.dataset import pairs as like_for_like

__all__ = ["configuration_scale", "sibling_answers"]


def configuration_scale(samples: pl.DataFrame, m: str, t: str) -> tuple[float, int]:
    """``c(m -> t)`` and the number of like-for-like samples it is the median of (NaN, 0: none).

    Args:
        samples: benchmark samples holding both machines' runs (``target`` column).
        m: the measured sibling (``machine:device``).
        t: the target.

    Returns:
        ``(scale, samples)``.
    """
    ratios, _ = like_for_like(samples.filter(pl.col("target").is_in([m, t])))
    r = ratios.filter((pl.col("source") == m) & (pl.col("target") == t)).get_column("relR")
    return (float(np.exp(np.median(np.log(r.to_numpy())))), r.len()) if r.len() else (np.nan, 0)


def _sibling_of(t: str, measured_ends: list[str], samples: pl.DataFrame) -> tuple[str, float]:
    """The sibling of ``t`` with the most kernels in common with it, and its scale ("", NaN:
    none)."""
    best = ("", np.nan, 0)
    for m in same_silicon(t, measured_ends):
        c, n = configuration_scale(samples, m, t)
        if n > best[2]:
            best = (m, c, n)
    return best[0], best[1]


def _measured_ratio(test: pl.DataFrame, measured: pl.DataFrame, sibling: pl.Series) -> np.ndarray:
    """relR(s -> sibling, x) per test row from the measured pairs (either direction); 1 where the
    source is the sibling; NaN where unmeasured."""
    keys = test.select("sample", "source").with_columns(sibling.alias("target"))
    fwd = measured.select("sample", "source", "target", pl.col("relR").alias("_f"))
    back = measured.select(
        "sample",
        pl.col("target").alias("source"),
        pl.col("source").alias("target"),
        (1.0 / pl.col("relR")).alias("_b"),
    )
    got = keys.join(
        fwd.unique(["sample", "source", "target"], keep="first", maintain_order=True),
        on=["sample", "source", "target"],
        how="left",
        maintain_order="left",
    ).join(
        back.unique(["sample", "source", "target"], keep="first", maintain_order=True),
        on=["sample", "source", "target"],
        how="left",
        maintain_order="left",
    )
    r = got.select(pl.coalesce("_f", "_b")).to_series().to_numpy().astype(float)
    return np.where(keys.get_column("source") == keys.get_column("target"), 1.0, r)


def sibling_answers(
    test: pl.DataFrame, measured: pl.DataFrame, samples: pl.DataFrame
) -> tuple[np.ndarray, list[str]]:
    """Each test pair's same-silicon answer.

    Args:
        test: pairs to answer (``sample``, ``source``, ``target``).
        measured: labelled pairs of the measured machines (``sample``, ``source``, ``target``,
            ``relR``); they must not touch the test targets (the caller's fold says so).
        samples: the benchmark samples the answer may see (the targets' own runs among them), for
            the configuration scale.

    Returns:
        ``(relR, sibling)`` per test row: NaN and "" where no sibling answers.
    """
    ends = sorted(set(measured.get_column("source")) | set(measured.get_column("target")))
    chosen = {t: _sibling_of(t, ends, samples) for t in sorted(set(test.get_column("target")))}
    sibling = test.get_column("target").replace_strict(
        {t: m for t, (m, _) in chosen.items()}, return_dtype=pl.String
    )
    scale = test.get_column("target").replace_strict(
        {t: c for t, (_, c) in chosen.items()}, return_dtype=pl.Float64
    )
    ratio = _measured_ratio(test, measured, sibling)
    out = ratio * scale.to_numpy()
    out[sibling.to_numpy() == ""] = np.nan
    return out, sibling.to_list()
