"""Like for like: which of two targets' benchmark runs measure the same thing.

The rules are the benchmark's (:mod:`xamm_models.benchmark.dataset`), applied to a new machine that
has no declared configuration:

* **Variant family.** A RAJAPerf variant is a family and a back-end (``Base_CUDA``: family ``Base``,
  back-end ``CUDA``; BabelStream's ``BabelStream_HIP``: family ``BabelStream``). Two targets are
  compared within one family, each in its own back-end: the device's native one first
  (:data:`BACKEND_ORDER`), so a GPU node's ``Base_CUDA`` meets another's ``Base_HIP`` and a CPU's
  ``Base_OpenMP``. The family is the first of :data:`FAMILY_ORDER` both targets ran, unless named.
* **Samples.** Per kernel, problem size and work per iteration the trials of each tuning are
  averaged and the fastest tuning is kept (tunings that do the same work are alternatives; ones that
  do different work, BabelStream's ``float`` and ``double``, are different samples). The time is
  seconds per iteration.
* **Pairs.** A sample of the new target meets the reference's sample of the same kernel whose work
  per iteration agrees (bytes and flops within :data:`DEFINITION_RTOL`) at the nearest problem size,
  kept only within :data:`SIZE_RATIO` (a user may widen it, and the comparison records by how
  much). Everything left over is listed with its reason.
"""

from __future__ import annotations

import math

import polars as pl

from xamm_models.benchmark.spec import DEFINITION_RTOL, SIZE_RATIO

__all__ = [
    "BACKEND_ORDER",
    "FAMILY_ORDER",
    "REASONS",
    "families",
    "match",
    "samples_of",
    "select_runs",
]

#: Variant families in the order one is chosen when both targets ran several.
FAMILY_ORDER = ("Base", "RAJA", "Lambda", "BabelStream")
#: Back-ends in the order one is chosen per target and family, by device; any other back-end
#: comes after these, alphabetically, and ``Seq`` last.
BACKEND_ORDER = {
    "gpu": ("CUDA", "HIP", "SYCL", "OpenMPTarget", "Kokkos", "OpenACC", "OpenCL"),
    "cpu": ("OpenMP", "Kokkos", "SYCL", "OpenCL"),
}
#: Why a sample found no partner (the keys of ``Comparison.unmatched``'s ``reason``).
REASONS = {
    "not_run": "kernel not run on the other target (in this family)",
    "definition": f"work per iteration differs (bytes or flops beyond {DEFINITION_RTOL:.0%})",
    "size": "no problem size within the size ratio on the other target",
    "unknown": "bytes or flops per iteration unknown",
}
_SIG = 6  # significant digits under which two tunings' work per iteration is the same


def _family() -> pl.Expr:
    return pl.col("variant").str.split("_").list.first()


def families(runs: pl.DataFrame | pl.LazyFrame) -> list[str]:
    """The variant families of ``runs``, in :data:`FAMILY_ORDER` (others after, sorted)."""
    have = set(runs.lazy().select(_family().unique()).collect().to_series().drop_nulls())
    return [f for f in FAMILY_ORDER if f in have] + sorted(have - set(FAMILY_ORDER))


def _backend_rank(backend: str, device: str) -> tuple[int, str]:
    order = BACKEND_ORDER.get(device, ())
    if backend in order:
        return order.index(backend), backend
    return (len(order) + (1 if backend == "Seq" else 0)), backend


def select_runs(
    runs: pl.DataFrame | pl.LazyFrame, family: str, device: str
) -> tuple[pl.LazyFrame, str | None]:
    """One target's runs of ``family`` in its preferred back-end.

    Args:
        runs: the target's ``benchmark_runs`` rows (one machine, one device).
        family: a variant family (``Base``, ``RAJA``, ...).
        device: ``cpu`` or ``gpu``.

    Returns:
        (the rows, lazily; the back-end chosen, None when the target has no run of the family).
    """
    rows = runs.lazy().filter(_family() == family)
    backends = rows.select(pl.col("backend").fill_null("").unique()).collect().to_series().to_list()
    if not backends:
        return rows, None
    best = min(backends, key=lambda b: _backend_rank(b, device))
    return rows.filter(pl.col("backend").fill_null("") == best), best


def samples_of(runs: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Per kernel, problem size and work per iteration: the fastest tuning's mean seconds per
    iteration, with its fastest and slowest trial's.

    Args:
        runs: one target's selected runs (:func:`select_runs`); lazy ones are read by one query
            whose result is the samples (a thousand trials of a kernel hold one row).

    Rows with no positive time, or whose checksum RAJAPerf reported ``FAILED``, are left out.

    Returns:
        ``kernel``, ``group``, ``problem_size``, ``variant``, ``tuning``, ``s_per_iter``,
        ``trial_min_s_per_iter``, ``trial_max_s_per_iter``, ``trials``, ``bytes_per_iter``,
        ``flops_per_iter``, and the work per repetition a physics signature models
        (``time_per_rep_s``, ``bytes_per_rep``, ``flops_per_rep``, ``kernels_per_rep``,
        ``iterations_per_rep``).
    """
    runs = runs.lazy()
    iters = pl.coalesce(pl.col("iterations_per_rep"), pl.col("problem_size").cast(pl.Float64))
    per_iter = pl.col("time_per_rep_s") / iters
    # a run whose checksum failed computed something else; one with no time measured nothing
    ok = pl.col("time_per_rep_s") > 0
    if "checksum_status" in runs.collect_schema().names():
        ok &= pl.col("checksum_status").fill_null("") != "FAILED"
    d = (
        runs.filter(ok)
        .with_columns(
            per_iter.alias("_t"),
            (pl.col("bytes_per_rep") / iters).alias("bytes_per_iter"),
            (pl.col("flops_per_rep") / iters).alias("flops_per_iter"),
            iters.alias("_iters"),
        )
        .with_columns(
            pl.col("bytes_per_iter").round_sig_figs(_SIG).alias("_b"),
            pl.col("flops_per_iter").round_sig_figs(_SIG).alias("_f"),
        )
    )
    key = ["kernel", "problem_size", "_b", "_f"]
    per_tuning = d.group_by([*key, "group", "variant", "tuning"]).agg(
        pl.col("_t").mean().alias("s_per_iter"),
        pl.col("_t").min().alias("trial_min_s_per_iter"),
        pl.col("_t").max().alias("trial_max_s_per_iter"),
        pl.len().alias("trials"),
        *(
            pl.col(c).mean()
            for c in (
                "bytes_per_iter",
                "flops_per_iter",
                "time_per_rep_s",
                "bytes_per_rep",
                "flops_per_rep",
                "kernels_per_rep",
            )
        ),
        pl.col("_iters").mean().alias("iterations_per_rep"),
    )
    # the engine that sums each group's trials in their order: the same result every run
    tunings = per_tuning.collect(engine="in-memory")
    best = tunings.sort("s_per_iter", "tuning").group_by(key, maintain_order=True).first()
    return best.drop("_b", "_f").sort("kernel", "problem_size", "bytes_per_iter")


def _agree(a: str, b: str) -> pl.Expr:
    """Two non-negative quantities agree within DEFINITION_RTOL (both zero agrees)."""
    lo, hi = pl.min_horizontal(pl.col(a), pl.col(b)), pl.max_horizontal(pl.col(a), pl.col(b))
    return (hi == 0) | ((lo > 0) & (hi / lo <= 1 + DEFINITION_RTOL))


def match(
    new: pl.DataFrame, ref: pl.DataFrame, size_ratio: float = SIZE_RATIO
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Pair each sample of ``new`` with ``ref``'s like-for-like sample at the nearest size.

    Args:
        new: the new target's samples (:func:`samples_of`).
        ref: the reference's samples.
        size_ratio: how far apart two problem sizes may be (the benchmark's :data:`SIZE_RATIO`).

    Returns:
        (pairs: one row per matched new sample, with ``_new`` and ``_ref`` columns and ``relR`` =
        seconds per iteration on new / on ref; unmatched: ``side`` ("new" or "ref"), ``kernel``,
        ``problem_size``, ``reason`` (a key of :data:`REASONS`)).
    """
    cols = [c for c in new.columns if c not in ("kernel", "group")]
    j = new.join(ref.select("kernel", *cols), on="kernel", how="inner", suffix="_ref").rename(
        {c: f"{c}_new" for c in cols}
    )
    unknown = (
        pl.any_horizontal(
            pl.col(c).is_null()
            for c in ("bytes_per_iter_new", "bytes_per_iter_ref", "flops_per_iter_new")
        )
        | pl.col("flops_per_iter_ref").is_null()
    )
    same_work = _agree("bytes_per_iter_new", "bytes_per_iter_ref") & _agree(
        "flops_per_iter_new", "flops_per_iter_ref"
    )
    off = (pl.col("problem_size_ref").cast(pl.Float64) / pl.col("problem_size_new")).log().abs()
    j = j.with_columns(
        pl.when(unknown)
        .then(pl.lit("unknown"))
        .when(~same_work)
        .then(pl.lit("definition"))
        .when(off > math.log(size_ratio) + 1e-12)
        .then(pl.lit("size"))
        .alias("_why"),
        off.alias("_off"),
    )
    nkey = ["kernel", "problem_size_new", "bytes_per_iter_new", "flops_per_iter_new"]
    pairs = (
        j.filter(pl.col("_why").is_null())
        .sort("_off", "problem_size_ref")
        .group_by(nkey, maintain_order=True)
        .first()
        .with_columns((pl.col("s_per_iter_new") / pl.col("s_per_iter_ref")).alias("relR"))
        .drop("_why", "_off")
        .sort("kernel", "problem_size_new", "bytes_per_iter_new")
    )
    return pairs, _unmatched(new, ref, j, pairs)


_ORDER = {"not_run": 0, "unknown": 1, "definition": 2, "size": 3}


def _unmatched(
    new: pl.DataFrame, ref: pl.DataFrame, j: pl.DataFrame, pairs: pl.DataFrame
) -> pl.DataFrame:
    """Samples of either side with no partner, each with the reason that kept it nearest to one:
    a kernel the other never ran, else unknown work, a different definition, or no size near."""
    out = []
    for side in ("new", "ref"):
        own = new if side == "new" else ref
        size, work = f"problem_size_{side}", f"bytes_per_iter_{side}"
        key = ["kernel", "problem_size", "bytes_per_iter"]
        used = pairs.select(
            "kernel", pl.col(size).alias("problem_size"), pl.col(work).alias("bytes_per_iter")
        ).unique()
        left = own.select(key).unique().join(used, on=key, how="anti", nulls_equal=True)
        why = (
            j.filter(pl.col("_why").is_not_null())
            .select(
                "kernel",
                pl.col(size).alias("problem_size"),
                pl.col(work).alias("bytes_per_iter"),
                "_why",
            )
            .with_columns(pl.col("_why").replace_strict(_ORDER, return_dtype=pl.Int64).alias("_o"))
            .sort("_o", descending=True)
            .group_by(key, maintain_order=True)
            .first()
        )
        left = left.join(why, on=key, how="left", nulls_equal=True, maintain_order="left")
        out.append(
            left.select(
                pl.lit(side).alias("side"),
                "kernel",
                "problem_size",
                "bytes_per_iter",
                pl.col("_why").fill_null("not_run").alias("reason"),
            )
        )
    return pl.concat(out).sort("side", "kernel", "problem_size")
