"""Real application runtimes across platforms, predicted from BabelStream signatures.

For every ordered pair of platforms (A, B) where an application ran with the same programming
model on both and both have BabelStream runs, the runtime on B is predicted from the runtime on A:

* **physics, time-only**: relR = sustained bandwidth of A / of B, each from the platform's
  physics signature at its largest measured working set. A whole-program time says nothing about
  bytes or flops, so the program is taken as memory-bound; that is all a time-only profile and a
  bandwidth-only signature can say. Its 80% interval is the 10th-90th percentile of the log errors
  on the pairs that share neither platform (so no pair calibrates its own interval);
* **Triad ratio**: relR = best BabelStream Triad bandwidth of A / of B;
* **no change**: relR = 1.

Each is scored by the share of pairs within 2x, the median |log10 error| and (physics) the coverage
of its intervals, with 90% bootstrap intervals over platforms (platforms resampled, every pair
between two drawn platforms kept). The inputs are frames, read by the caller (the ingest layer
reads the logs): application runs ``platform, model, runtime_s`` and BabelStream ``benchmark_runs``.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.machines.physics import physics_signature

LOG2 = float(np.log10(2.0))
PREDICTORS = ("physics, time-only", "Triad ratio", "no change")


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
    """Per platform: the physics signature's sustained bandwidth at its largest measured working
    set, and the best Triad bandwidth.

    Args:
        runs: BabelStream ``benchmark_runs`` rows.

    Returns:
        ``platform, bw_signature, bw_triad`` (bytes/s).
    """
    samples = samples_from_runs(runs)
    out = []
    for (target,), part in samples.group_by(["target"], maintain_order=True):
        sig = physics_signature(target, part)
        triad = part.filter(pl.col("app") == "Stream_TRIAD")
        out.append(
            {
                "platform": target.rsplit(":", 1)[0],
                "bw_signature": sig.sustained_bandwidth,
                "bw_triad": float((triad["bytes_per_rep"] / triad["time_per_rep_s"]).max()),
            }
        )
    return pl.DataFrame(out).sort("platform")


def pairs(apps: pl.DataFrame, bandwidths: pl.DataFrame) -> pl.DataFrame:
    """Every ordered pair of platforms with the same model and BabelStream on both, with the true
    and predicted relR and the physics prediction's interval.

    Args:
        apps: :func:`best_runs`.
        bandwidths: :func:`platform_bandwidths`.

    Returns:
        One row per pair.
    """
    a = apps.join(bandwidths, on="platform")
    p = a.join(a, on="model", suffix="_b").filter(pl.col("platform") != pl.col("platform_b"))
    p = p.with_columns(
        (pl.col("runtime_s_b") / pl.col("runtime_s")).alias("relR"),
        (pl.col("bw_signature") / pl.col("bw_signature_b")).alias("physics, time-only"),
        (pl.col("bw_triad") / pl.col("bw_triad_b")).alias("Triad ratio"),
        pl.lit(1.0).alias("no change"),
    ).sort("model", "platform", "platform_b")
    err = np.log10(p["relR"].to_numpy() / p["physics, time-only"].to_numpy())
    src, dst = p["platform"].to_numpy(), p["platform_b"].to_numpy()
    lo, hi = np.full(p.height, np.nan), np.full(p.height, np.nan)
    for i in range(p.height):
        others = ~np.isin(src, [src[i], dst[i]]) & ~np.isin(dst, [src[i], dst[i]])
        if others.sum() >= 5:
            lo[i], hi[i] = np.quantile(err[others], [0.1, 0.9])
    pred = p["physics, time-only"].to_numpy()
    return p.with_columns(
        pl.Series("relR_lo", pred * 10.0**lo), pl.Series("relR_hi", pred * 10.0**hi)
    ).select("model", "platform", "platform_b", "relR", *PREDICTORS, "relR_lo", "relR_hi")


def _scores(p: pl.DataFrame, weights: np.ndarray) -> dict[str, float]:
    t = p["relR"].to_numpy()
    out = {}
    for name in PREDICTORS:
        e = np.abs(np.log10(t / p[name].to_numpy()))
        out[f"{name}: within 2x"] = float(np.average(e <= LOG2, weights=weights))
        out[f"{name}: median abs(log10 err)"] = _weighted_median(e, weights)
    out["physics - Triad ratio: within 2x"] = (
        out["physics, time-only: within 2x"] - out["Triad ratio: within 2x"]
    )
    out["physics - Triad ratio: median abs(log10 err)"] = (
        out["physics, time-only: median abs(log10 err)"] - out["Triad ratio: median abs(log10 err)"]
    )
    lo, hi = p["relR_lo"].to_numpy(), p["relR_hi"].to_numpy()
    ok = np.isfinite(lo)
    inside = (t >= lo) & (t <= hi)
    out["physics, time-only: 80% coverage"] = (
        float(np.average(inside[ok], weights=weights[ok])) if weights[ok].sum() else float("nan")
    )
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
