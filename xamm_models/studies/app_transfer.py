"""Real application runtimes across platforms, predicted from BabelStream signatures.

For every ordered pair of platforms (A, B) where an application ran with the same programming
model on both and both have BabelStream runs, the runtime on B is predicted from the runtime on A:

* **xamm predict (default)**: what ``xamm predict`` answers for a program known only by its
  runtime (:meth:`~xamm_data.tables.regions.RegionProfile.from_runtime`), with the shipped
  default and the two platforms' BabelStream runs as target benchmarks
  (:func:`xamm_models.predictors.composed.predict_profile`). A whole-program time says nothing
  about bytes or flops, so the program is taken as streaming memory: relR is what the two
  signatures' sustained bandwidths say. Its 80% interval is the one the package ships for
  time-only input (measured on RAJAPerf pairs, :mod:`xamm_models.studies.time_only`); a second
  interval, the 10th-90th percentile of the log errors on this application's pairs that share
  neither platform, shows what the application's own spread would give;
* **Triad ratio**: relR = best BabelStream Triad bandwidth of A / of B;
* **no change**: relR = 1.

Each is scored by the share of pairs within 2x, the median |log10 error| and (the default) the
coverage of its intervals, with 90% bootstrap intervals over platforms (platforms resampled, every
pair between two drawn platforms kept). The inputs are frames, read by the caller (the ingest
layer reads the logs): application runs ``platform, model, runtime_s`` and BabelStream
``benchmark_runs``.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_data.tables.regions import RegionProfile
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.predictors.composed import predict_profile
from xamm_models.predictors.kinds import load_model

LOG2 = float(np.log10(2.0))
DEFAULT = "xamm predict (default)"
PREDICTORS = (DEFAULT, "Triad ratio", "no change")


def best_runs(apps: pl.DataFrame) -> pl.DataFrame:
    """The fastest verified run per platform and programming model.

    Args:
        apps: ``platform, model, runtime_s`` (one row per log).

    Returns:
        One row per platform and model.
    """
    return (
        apps.group_by("platform", "model").agg(pl.col("runtime_s").min()).sort("platform", "model")
    )


def platform_bandwidths(runs: pl.DataFrame) -> pl.DataFrame:
    """Per platform: its target and the best BabelStream Triad bandwidth.

    Args:
        runs: BabelStream ``benchmark_runs`` rows.

    Returns:
        ``platform, target, bw_triad`` (bytes/s).
    """
    triad = samples_from_runs(runs).filter(pl.col("app") == "Stream_TRIAD")
    return (
        triad.group_by("target")
        .agg((pl.col("bytes_per_rep") / pl.col("time_per_rep_s")).max().alias("bw_triad"))
        .select(
            pl.col("target").str.replace(r":[^:]*$", "").alias("platform"), "target", "bw_triad"
        )
        .sort("platform")
    )


def default_predictions(
    app: str, apps: pl.DataFrame, bandwidths: pl.DataFrame, runs: pl.DataFrame, model=None
) -> pl.DataFrame:
    """Each run predicted on every other platform of its programming model, as ``xamm predict``
    predicts a whole-program runtime.

    Args:
        app: the application's name.
        apps: :func:`best_runs`.
        bandwidths: :func:`platform_bandwidths` (which platforms have BabelStream, their targets).
        runs: their BabelStream ``benchmark_runs`` (the target benchmarks).
        model: the predictor (None: the shipped default).

    Returns:
        ``model, platform, platform_b`` and the default's relR with its 80% interval.
    """
    if model is None:
        model = load_model("xamm/default")
    a = apps.join(bandwidths.select("platform", "target"), on="platform")
    out = []
    for r in a.iter_rows(named=True):
        others = a.filter((pl.col("model") == r["model"]) & (pl.col("platform") != r["platform"]))
        if others.height == 0:
            continue
        prof = RegionProfile.from_runtime(app, r["runtime_s"], source=r["target"])
        got = predict_profile(
            prof, model, targets=others["target"].to_list(), target_benchmarks=runs
        ).programs.filter(pl.col("target") != r["target"])
        out.append(
            got.select(
                pl.lit(r["model"]).alias("model"),
                pl.lit(r["platform"]).alias("platform"),
                pl.col("target").str.replace(r":[^:]*$", "").alias("platform_b"),
                pl.col("relR").alias(DEFAULT),
                pl.col("relR_lo").alias("default_lo"),
                pl.col("relR_hi").alias("default_hi"),
            )
        )
    return pl.concat(out)


def pairs(apps: pl.DataFrame, bandwidths: pl.DataFrame, defaults: pl.DataFrame) -> pl.DataFrame:
    """Every ordered pair of platforms with the same model and BabelStream on both, with the true
    relR, each predictor's, the default's shipped interval and the interval from the other
    platforms' pairs.

    Args:
        apps: :func:`best_runs`.
        bandwidths: :func:`platform_bandwidths`.
        defaults: :func:`default_predictions`.

    Returns:
        One row per pair.
    """
    a = apps.join(bandwidths, on="platform")
    p = a.join(a, on="model", suffix="_b").filter(pl.col("platform") != pl.col("platform_b"))
    p = p.with_columns(
        (pl.col("runtime_s_b") / pl.col("runtime_s")).alias("relR"),
        (pl.col("bw_triad") / pl.col("bw_triad_b")).alias("Triad ratio"),
        pl.lit(1.0).alias("no change"),
    ).join(defaults, on=["model", "platform", "platform_b"], how="left", maintain_order="left")
    p = p.sort("model", "platform", "platform_b")
    err = np.log10(p["relR"].to_numpy() / p[DEFAULT].to_numpy())
    src, dst = p["platform"].to_numpy(), p["platform_b"].to_numpy()
    lo, hi = np.full(p.height, np.nan), np.full(p.height, np.nan)
    for i in range(p.height):
        others = ~np.isin(src, [src[i], dst[i]]) & ~np.isin(dst, [src[i], dst[i]])
        if others.sum() >= 5:
            lo[i], hi[i] = np.quantile(err[others], [0.1, 0.9])
    pred = p[DEFAULT].to_numpy()
    return p.with_columns(
        pl.Series("others_lo", pred * 10.0**lo), pl.Series("others_hi", pred * 10.0**hi)
    ).select(
        "model",
        "platform",
        "platform_b",
        "relR",
        *PREDICTORS,
        "default_lo",
        "default_hi",
        "others_lo",
        "others_hi",
    )


COVERAGE = {
    "default_lo": f"{DEFAULT}: 80% coverage, shipped time-only interval",
    "others_lo": f"{DEFAULT}: 80% coverage, interval from other platforms' pairs",
}


def _coverage(p: pl.DataFrame, lo: str, weights: np.ndarray) -> float:
    t = p["relR"].to_numpy()
    low, high = p[lo].to_numpy(), p[lo.replace("_lo", "_hi")].to_numpy()
    ok = np.isfinite(low)
    inside = (t >= low) & (t <= high)
    return float(np.average(inside[ok], weights=weights[ok])) if weights[ok].sum() else np.nan


def _scores(p: pl.DataFrame, weights: np.ndarray) -> dict[str, float]:
    t = p["relR"].to_numpy()
    out = {}
    for name in PREDICTORS:
        e = np.abs(np.log10(t / p[name].to_numpy()))
        out[f"{name}: within 2x"] = float(np.average(e <= LOG2, weights=weights))
        out[f"{name}: median abs(log10 err)"] = _weighted_median(e, weights)
    for figure in ("within 2x", "median abs(log10 err)"):
        out[f"default - Triad ratio: {figure}"] = (
            out[f"{DEFAULT}: {figure}"] - out[f"Triad ratio: {figure}"]
        )
    for lo, figure in COVERAGE.items():
        out[figure] = _coverage(p, lo, weights)
    return out


def _weighted_median(x: np.ndarray, w: np.ndarray) -> float:
    order = np.argsort(x)
    cum = np.cumsum(w[order])
    return float(x[order][np.searchsorted(cum, cum[-1] / 2)])


def score(p: pl.DataFrame, *, n_boot: int = 2000, seed: int = 0) -> pl.DataFrame:
    """Each figure with its 90% bootstrap interval over platforms.

    Args:
        p: :func:`pairs` of one application.
        n_boot: bootstrap draws.
        seed: the generator's seed.

    Returns:
        ``figure, value, lo, hi``.
    """
    point = _scores(p, np.ones(p.height))
    plats = sorted(set(p["platform"]) | set(p["platform_b"]))
    rng = np.random.default_rng(seed)
    src, dst = p["platform"].to_numpy(), p["platform_b"].to_numpy()
    draws: dict[str, list[float]] = {k: [] for k in point}
    for _ in range(n_boot):
        count = dict(
            zip(plats, rng.multinomial(len(plats), [1 / len(plats)] * len(plats)), strict=True)
        )
        w = np.array([count[s] * count[d] for s, d in zip(src, dst, strict=True)], dtype=float)
        if w.sum() == 0:
            continue
        for k, v in _scores(p, w).items():
            draws[k].append(v)
    return pl.DataFrame(
        [
            {
                "figure": k,
                "value": v,
                "lo": float(np.nanquantile(draws[k], 0.05)),
                "hi": float(np.nanquantile(draws[k], 0.95)),
            }
            for k, v in point.items()
        ]
    )


def markdown(app: str, p: pl.DataFrame, scores: pl.DataFrame) -> str:
    """The section of one application: what was compared and the figures.

    Args:
        app: the application's name.
        p: its :func:`pairs`.
        scores: its :func:`score`.

    Returns:
        Markdown text.
    """
    plats = sorted(set(p["platform"]) | set(p["platform_b"]))
    lines = [
        f"## {app}",
        "",
        f"{p.height} ordered pairs of {len(plats)} platforms ({', '.join(plats)}), "
        f"same programming model on both ends ({', '.join(sorted(set(p['model'])))}); the fastest "
        "verified run per platform and model.",
        "",
        "| figure | value | 90% interval over platforms |",
        "|---|---|---|",
    ]
    for r in scores.iter_rows(named=True):
        lines.append(f"| {r['figure']} | {r['value']:.3f} | [{r['lo']:.3f}, {r['hi']:.3f}] |")
    return "\n".join(lines) + "\n"
