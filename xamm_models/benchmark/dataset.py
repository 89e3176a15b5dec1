"""``xplat-rajaperf`` v2: a like-for-like cross-platform benchmark built from the public RAJAPerf
data.

The paper's application data set (649 samples, 5 apps, PAPI counters on quartz, ruby, corona) is not
public. This data set stands in for it: every RAJAPerf kernel at a problem size is an application
sample, its features are what a profile on the source would give, and the label is relR to another
target measured in that target's one declared configuration.

How a label is made (every rule is a named constant below, and every pair it refuses is counted in
the card):

* **Named sources** (:data:`SOURCES`): exactly which ``../shared/data`` sets are ingested, and as
  which machine. :func:`ingest_sources` ingests them; the same sources give the same content hash.
* **One declared configuration per target** (:data:`CONFIGS`): RAJAPerf release, compiler, the
  variant (``Base_*``: the hand-written baseline every release and back-end has) with its fastest
  tuning, MPI ranks. Runs outside it are not used (counted).
* **Samples**: per (target, kernel, problem size) the trials are averaged; the runtime is seconds
  per iteration. Sizes are bucketed by round(log2 size); each target keeps the size nearest the
  bucket's centre, so one sample per (target, kernel, bucket).
* **Pairs**: relR = runtime(target) / runtime(source) between samples of the same kernel and bucket,
  kept only when the problem sizes agree within :data:`SIZE_RATIO` and the kernel definition agrees:
  bytes and flops per iteration within :data:`DEFINITION_RTOL` (RAJAPerf releases redefine some
  kernels' "iteration": a 2026 ``Apps_MASS3DEA`` iteration moves 64x the bytes of a 1.10.0 one).

Versioned by content: ``version`` is the SHA-256 (first 16 hex digits) of the pairs' columns and
values.
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from xamm_data.hashing import frame_sha256
from xamm_data.machines.targets import Target
from xamm_data.plugins import load
from xamm_data.store.store import as_store
from xamm_models.benchmark.card import render

# the data set's spec, re-exported: xplat.NAME, xplat.SOURCES, ... read as the data set's own
from xamm_models.benchmark.spec import (  # noqa: F401
    CONFIGS,
    DEFINITION_RTOL,
    KEY,
    NAME,
    SCHEMA_VERSION,
    SIZE_RATIO,
    SOURCES,
    Source,
    TargetConfig,
)
from xamm_models.benchmark.splits import get_idx_split
from xamm_models.features import FEATURES, feature_exprs


def ingest_sources(
    data_dir: str | Path, store, *, workers: int = 2, progress: bool = False
) -> dict[str, int]:
    """Ingest every :data:`SOURCES` set under ``data_dir`` into ``store``.

    Args:
        data_dir: the public data (``../shared/data``).
        store: the store.
        workers: processes reading in parallel.
        progress: show progress bars.

    Returns:
        Source name -> rows written.
    """
    # the ingest layer, by its hook
    ingest = load("xamm.ingest", "rajaperf", f"building {NAME} from its sources")
    data_dir = Path(data_dir)
    missing = [s.path for s in SOURCES if not (data_dir / s.path).is_dir()]
    if missing:
        raise FileNotFoundError(
            f"{data_dir} lacks the {NAME} sources {missing}; expected the "
            "shared data layout "
            "(see ../shared/data/MANIFEST.md)"
        )
    out = {}
    for s in SOURCES:
        rep = ingest(
            data_dir / s.path, machine=s.machine, store=store, workers=workers, progress=progress
        )
        if rep.rejected:
            raise ValueError(
                f"{NAME} source {s.name} ({s.path}) had rejected files: {rep.grouped()}"
            )
        out[s.name] = rep.frame.height
    return out


def _config_frame() -> pl.DataFrame:
    return pl.DataFrame(
        [c.model_dump() for c in CONFIGS],
        schema={
            "target": pl.String,
            "release": pl.String,
            "compiler": pl.String,
            "compiler_flags": pl.String,
            "variant": pl.String,
            "ranks": pl.Int64,
            "threads": pl.Int64,
            "path_pattern": pl.String,
            "policy": pl.String,
        },
    )


def in_config(runs: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Rows of ``runs`` inside their target's declared configuration, and counts of the rows left
    out."""
    cfg = _config_frame().select(
        "target",
        pl.col("compiler").alias("_cc"),
        pl.col("compiler_flags").alias("_flags"),
        pl.col("variant").alias("_var"),
        pl.col("ranks").alias("_ranks"),
        pl.col("threads").alias("_threads"),
        "path_pattern",
        "release",
    )
    r = runs.with_columns(Target.expr().alias("target")).join(
        cfg, on="target", how="left", maintain_order="left"
    )
    declared = pl.col("_var").is_not_null()
    inside = (
        declared
        & (pl.col("variant") == pl.col("_var"))
        & pl.col("compiler").eq_missing(pl.col("_cc"))
        & pl.col("compiler_flags").eq_missing(pl.col("_flags"))
        & pl.col("ranks").eq_missing(pl.col("_ranks"))
        & pl.col("threads").eq_missing(pl.col("_threads"))
        & pl.col("source_path").str.contains(pl.col("path_pattern")).fill_null(False)
    )
    counts = r.select(
        (~declared).sum().alias("runs of a target with no declared configuration"),
        (declared & ~inside).sum().alias("runs outside the target's declared configuration"),
    )
    kept = r.filter(inside).drop("_cc", "_flags", "_var", "_ranks", "_threads", "path_pattern")
    return kept, {k: int(v) for k, v in counts.row(0, named=True).items()}


SAMPLE_COLUMNS = (
    "app",
    "app_params",
    "group",
    "target",
    "machine",
    "device",
    "release",
    "kernel",
    "size_bucket",
    "problem_size",
    "variant",
    "tuning",
    "trials",
    "runtime_s",
    "runtime_per_iteration",
    "time_per_rep_s",
    "iterations_per_rep",
    "bytes_per_rep",
    "flops_per_rep",
    "kernels_per_rep",
    "bytes_per_iter",
    "flops_per_iter",
    *FEATURES,
)


# the runs of one configuration of a kernel: their trials are averaged
RUN_KEY = ("target", "machine", "device", "release", "kernel", "problem_size", "variant", "tuning")


def samples(
    r: pl.DataFrame | pl.LazyFrame, by: tuple[str, ...] = ()
) -> tuple[pl.DataFrame, dict[str, int]]:
    """One sample per (target, kernel, size bucket) from runs inside the declared configurations
    (:func:`in_config`), and the count of samples left out.

    Args:
        r: the runs (lazy ones are read by one query whose result is the samples).
        by: more columns that split the runs, each part's samples made on their own (a
            bootstrap's draw: :func:`~xamm_models.compare.history.versions.figure_intervals`).

    Returns:
        (the samples, sorted, with the ``by`` columns first; the counts left out)
    """
    iters = pl.coalesce(pl.col("iterations_per_rep"), pl.col("problem_size").cast(pl.Float64))
    per = (
        r.lazy()
        .group_by(*by, *RUN_KEY)
        .agg(
            pl.col("time_per_rep_s").mean(),
            iters.mean().alias("_iters"),
            pl.col("bytes_per_rep").mean(),
            pl.col("flops_per_rep").mean(),
            pl.col("kernels_per_rep").mean(),
            pl.len().alias("trials"),
        )
        .sort("time_per_rep_s", "tuning")
        .group_by(*by, "target", "kernel", "problem_size", maintain_order=True)
        .first()
        # the engine an eager frame's group_by runs: each group's trials summed in their order,
        # the same bits as from the rows in memory (the streaming engine's sums may differ)
        .collect(engine="in-memory")
    )
    log2 = pl.col("problem_size").cast(pl.Float64).log(2)
    per = per.with_columns(
        log2.round().cast(pl.Int64).alias("size_bucket"), (log2 - log2.round()).abs().alias("_off")
    )
    kept = (
        per.sort("_off", "problem_size")
        .group_by(*by, "target", "kernel", "size_bucket", maintain_order=True)
        .first()
    )
    drops = {"samples at another size of the same bucket": per.height - kept.height}
    out = (
        kept.with_columns(
            (pl.col("time_per_rep_s") / pl.col("_iters")).alias("_s_iter"),
            pl.col("kernel").alias("app"),
            pl.format('{{"size_bucket":{}}}', pl.col("size_bucket")).alias("app_params"),
            pl.col("kernel").str.split("_").list.first().alias("group"),
        )
        .with_columns(
            pl.col("_s_iter").alias("runtime_s"),
            pl.lit(True).alias("runtime_per_iteration"),
            (pl.col("bytes_per_rep") / pl.col("_iters")).alias("bytes_per_iter"),
            (pl.col("flops_per_rep") / pl.col("_iters")).alias("flops_per_iter"),
            *feature_exprs(),
        )
        .rename({"_iters": "iterations_per_rep"})
    )
    return out.select(*by, *SAMPLE_COLUMNS).sort(*by, "target", "app", "size_bucket"), drops


def _agree(a: str, b: str) -> pl.Expr:
    """Two non-negative quantities agree within DEFINITION_RTOL (both zero agrees; one zero does
    not)."""
    lo, hi = pl.min_horizontal(pl.col(a), pl.col(b)), pl.max_horizontal(pl.col(a), pl.col(b))
    return (hi == 0) | ((lo > 0) & (hi / lo <= 1 + DEFINITION_RTOL))


def _matched(s: pl.DataFrame, carry: tuple[str, ...] = ()) -> tuple[pl.DataFrame, dict[str, int]]:
    """Samples of the same kernel and bucket on two targets, joined, with the rows :func:`pairs`
    refuses dropped (and counted by reason); ``carry``: more of the target's columns, as
    ``<name>_t``."""
    tgt = s.select(
        "app",
        "app_params",
        pl.col("target").alias("target_t"),
        *[pl.col(c).alias(f"{c}_t") for c in carry],
        pl.col("problem_size").alias("size_t"),
        pl.col("runtime_s").alias("runtime_target"),
        pl.col("bytes_per_iter").alias("bpi_t"),
        pl.col("flops_per_iter").alias("fpi_t"),
    )
    j = s.join(tgt, on=list(KEY), how="inner").filter(pl.col("target") != pl.col("target_t"))
    unknown = pl.any_horizontal(
        [pl.col(c).is_null() for c in ("bytes_per_iter", "bpi_t", "flops_per_iter", "fpi_t")]
    )
    size_off = (pl.col("size_t").cast(pl.Float64) / pl.col("problem_size")).log().abs() > math.log(
        SIZE_RATIO
    ) + 1e-12
    reasons = {
        "bytes or flops per iteration unknown on one side": unknown,
        f"problem sizes differ by more than {SIZE_RATIO}x": ~unknown & size_off,
        (
            f"kernel definition differs (bytes or flops per iteration beyond {DEFINITION_RTOL:.0%})"
        ): ~unknown
        & ~size_off
        & ~(_agree("bytes_per_iter", "bpi_t") & _agree("flops_per_iter", "fpi_t")),
    }
    flags = j.select(**reasons)
    drops = {k: int(v) for k, v in flags.sum().row(0, named=True).items()}
    bad = flags.select(pl.any_horizontal(pl.all())).to_series()
    return j.filter(~bad), drops


#: what :func:`like_for_like_ratios` reads of each sample
RATIO_COLUMNS = (
    "app",
    "app_params",
    "target",
    "problem_size",
    "runtime_s",
    "bytes_per_iter",
    "flops_per_iter",
)


def like_for_like_ratios(s: pl.DataFrame) -> pl.DataFrame:
    """relR of every pair :func:`pairs` would label, from :data:`RATIO_COLUMNS` alone (what a
    machine-pair constant needs: no features, no release).

    Args:
        s: benchmark samples.

    Returns:
        ``app``, ``app_params``, ``source``, ``target`` and ``relR``, one row per pair.
    """
    kept, _ = _matched(s.select(RATIO_COLUMNS))
    return kept.select(
        *KEY,
        pl.col("target").alias("source"),
        pl.col("target_t").alias("target"),
        (pl.col("runtime_target") / pl.col("runtime_s")).alias("relR"),
    )


def pairs(s: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """The labels: relR between samples of the same kernel and bucket on different targets, like for
    like."""
    kept, drops = _matched(s, carry=("release",))
    out = kept.select(
        pl.concat_str("app", pl.lit("|"), "app_params").alias("sample"),
        *KEY,
        "group",
        "size_bucket",
        pl.col("target").alias("source"),
        pl.col("target_t").alias("target"),
        (pl.col("runtime_target") / pl.col("runtime_s")).alias("relR"),
        pl.col("runtime_s").alias("runtime_source"),
        "runtime_target",
        pl.col("problem_size").alias("size_source"),
        "size_t",
        pl.col("release").alias("release_source"),
        "release_t",
        "bytes_per_iter",
        "flops_per_iter",
        pl.col("bpi_t").alias("bytes_per_iter_target"),
        pl.col("fpi_t").alias("flops_per_iter_target"),
        "bytes_per_rep",
        "flops_per_rep",
        "kernels_per_rep",
        "iterations_per_rep",
        *FEATURES,
    ).rename({"size_t": "size_target", "release_t": "release_target"})
    return out.sort("app", "size_bucket", "source", "target"), drops


class XplatDataset:
    """The benchmark: ``samples`` (one per target, kernel and size bucket), ``pairs`` (the labels),
    ``drops`` (what was refused and why) and the official splits (:meth:`get_idx_split`)."""

    name = NAME

    def __init__(self, runs: pl.DataFrame, *, table_version: int | None = None):
        self.runs = runs
        # the store's benchmark_runs version the runs were read at, if known
        self.table_version = table_version
        # what each target's benchmark data is, everywhere
        self.config_runs, run_drops = in_config(runs)
        self.samples, sample_drops = samples(self.config_runs)
        self.pairs, pair_drops = pairs(self.samples)
        self.drops = {"samples": {**run_drops, **sample_drops}, "pairs": pair_drops}

    @classmethod
    def from_store(cls, store=None, *, version: int | None = None) -> XplatDataset:
        """The benchmark from a store's ``benchmark_runs`` (ingest :data:`SOURCES` first).

        Args:
            store: the store (default ``$XAMM_HOME/store``).
            version: the table version (what a model trained on it recorded; default: the latest).

        Returns:
            The data set.
        """
        st = as_store(store)
        version = st.version("benchmark_runs") if version is None else version
        runs = (
            st.scan("benchmark_runs", version=version).collect()
            if version is not None
            else pl.DataFrame()
        )
        if runs.is_empty():
            raise FileNotFoundError(
                f"{NAME} is built from benchmark_runs and the store has none; run "
                "xamm_models.benchmark.dataset.ingest_sources(data_dir, store) "
                "or xamm eval --data-dir DIR"
            )
        return cls(runs, table_version=version)

    @property
    def version(self) -> str:
        return version(self.pairs)

    def get_idx_split(self, scheme: str = "kernel-group"):
        """The official folds of a scheme (see :mod:`xamm_models.benchmark.splits`).

        Args:
            scheme: ``kernel-group``, ``kernel`` or ``machine`` (leave one machine out).

        Returns:
            The folds, in a fixed order.
        """
        return get_idx_split(self, scheme)

    def card(self) -> str:
        """The data set card: sources, rules, counts and what was dropped, by reason.

        Returns:
            Markdown.
        """
        return card(self)


def build(runs: pl.DataFrame) -> pl.DataFrame:
    """The labelled pairs from ``benchmark_runs`` rows (what ``load_dataset("xplat-rajaperf")``
    returns).

    Args:
        runs: ``benchmark_runs`` rows of the named sources.

    Returns:
        The pairs.
    """
    return XplatDataset(runs).pairs


def version(df: pl.DataFrame) -> str:
    """The data set's version: the first 16 hex digits of the content hash of its pairs."""
    return frame_sha256(df)[:16]


def card(ds: XplatDataset) -> str:
    """A Markdown card: sources, declared configurations, samples and pairs per target, drops,
    caveats."""
    return render(ds)


def samples_from_runs(runs: pl.DataFrame | pl.LazyFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """One benchmark sample per target, kernel and size (the fastest variant and tuning), as
    the data set builds them; a frame that already is samples passes through.

    Args:
        runs: ``benchmark_runs`` rows (or samples), eager or lazy.
        by: more columns that split the runs (:func:`samples`).

    Returns:
        The samples.
    """
    have = set(runs.collect_schema().names())
    if {"target", "app", "time_per_rep_s"} <= have:
        return runs.lazy().collect()
    # xplat's declared configurations name it; raw runs carry the suite version
    if "release" not in have:
        runs = runs.with_columns(pl.col("suite_version").alias("release"))
    return samples(runs.with_columns(Target.expr().alias("target")), by)[0]
