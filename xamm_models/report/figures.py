"""The report's figures, drawn with matplotlib (the models extra; a site built without it says so
where each figure would be): a signature's physics figures over its versions, and a profile's
predicted time per target (also ``xamm predict --plot``). The drift plot is
:func:`~xamm_models.compare.history.drift_report.plot_drift`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

__all__ = ["plot_programs", "plot_signature_versions"]


def _pyplot():
    """matplotlib's pyplot on the file backend."""
    import matplotlib  # the models extra: only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after the backend is chosen

    return plt


def plot_signature_versions(figures: pl.DataFrame, title: str, path: Path) -> Path | None:
    """One panel per physics figure a version measured: its value per signature version with the
    90% bootstrap interval over that version's runs.

    Args:
        figures: ``version``, ``figure``, ``value``, ``lo``, ``hi``
            (:class:`~xamm_models.report.gather.TargetView`'s ``figures``).
        title: the figure's title.
        path: the PNG to write.

    Returns:
        ``path``, or None when no version measured any figure.
    """
    measured = figures.filter(pl.col("value").is_not_null())
    # a figure every version measured as zero (no launch overhead on a CPU) draws a flat line
    shown = measured.group_by("figure").agg(pl.col("value").abs().max().alias("top"))
    nonzero = set(shown.filter(pl.col("top") > 0).get_column("figure").to_list())
    names = [n for n in dict.fromkeys(measured.get_column("figure").to_list()) if n in nonzero]
    if not names:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names) + 0.6, 3.0), dpi=100)
    for ax, name in zip(np.atleast_1d(axes), names):
        f = measured.filter(pl.col("figure") == name).sort("version")
        x, y = f.get_column("version").to_numpy(), f.get_column("value").to_numpy()
        lo = f.get_column("lo").fill_null(np.nan).to_numpy()
        hi = f.get_column("hi").fill_null(np.nan).to_numpy()
        err = np.nan_to_num(np.vstack([y - lo, hi - y]), nan=0.0).clip(min=0)
        ax.errorbar(x, y, yerr=err, fmt="o-", capsize=3, lw=1)
        ax.set_title(name, fontsize=8)
        ax.set_xticks(x)
        ax.set_xlabel("signature version", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def _label(row: dict) -> str:
    """A target's label on the plot: itself, its basis and configuration, what it assumes."""
    run = row.get("target_configuration") or ""
    extra = f", assumes {row['assumes']}" if row.get("assumes") else ""
    return f"{row['target']}\n{row.get('basis', '')}: {run}{extra}"


def plot_programs(programs: pl.DataFrame, title: str, path: Path) -> Path:
    """Predicted whole-program time per target in seconds with its 80% interval, most likely
    fastest first, log scale; each target labelled with its basis (a node, or per rank), its
    benchmark runs' configuration and what the prediction assumes; the source's measured time
    marked.

    Args:
        programs: :func:`~xamm_models.predictors.composed.predict_profile`'s ``programs``.
        title: the plot's title.
        path: the PNG to write.

    Returns:
        ``path``.
    """
    import matplotlib  # the models extra, only for --plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after the backend is chosen
    import matplotlib.ticker  # noqa: F401  (matplotlib.ticker below)

    p = programs.sort("rank", "relR", nulls_last=True)
    y = p["time_s"].to_numpy()
    err = [y - p["time_lo_s"].to_numpy(), p["time_hi_s"].to_numpy() - y]
    fig, ax = plt.subplots(figsize=(9, 0.7 * p.height + 1.6), dpi=100)
    ranked = p["rank"].is_not_null().to_numpy()
    for keep, style in ((ranked, "o"), (~ranked, "s")):
        idx = [i for i in range(p.height) if keep[i]]
        ax.errorbar(y[keep], idx, xerr=[e[keep] for e in err], fmt=style, capsize=3)
    ax.axvline(float(p["time_source_s"][0]), color="grey", lw=0.8, label="measured on the source")
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_yticks(range(p.height), [_label(r) for r in p.iter_rows(named=True)], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("predicted time, s (80% interval)\nsquares: per rank, not ranked")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path
