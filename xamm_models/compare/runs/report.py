"""A comparison as a report: Markdown tables and two PNG plots (``xamm compare --out DIR``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from xamm_models.compare.runs.comparison import Comparison

__all__ = ["markdown", "plot_bandwidth", "plot_ratios", "write_report"]

RATIOS_PNG = "ratios.png"
BANDWIDTH_PNG = "bandwidth.png"
REPORT_MD = "report.md"


def _cell(v) -> str:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return ""
    if isinstance(v, bool):
        return "yes" if v else ""
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def table(df: pl.DataFrame) -> str:
    """``df`` as a Markdown table, floats to three significant digits."""
    head = "| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns) + "\n"
    return head + "".join("| " + " | ".join(map(_cell, r)) + " |\n" for r in df.iter_rows())


def _interval_text(c: Comparison) -> str:
    parts = []
    for scenario, band in c.intervals.items():
        if band is None:
            parts.append(f"{scenario}: no interval measured, nothing flagged")
        else:
            parts.append(f"{scenario}: {10 ** band[0]:.3g}x to {10 ** band[1]:.3g}x")
    return "; ".join(parts)


def markdown(c: Comparison, *, plots: bool = True) -> str:
    """The report's Markdown.

    Args:
        c: a comparison.
        plots: link the two PNGs :func:`write_report` writes beside it.

    Returns:
        Markdown.
    """
    kcols = ["ref", "group", "kernel", "relR", "relR_min", "relR_max", "relR_node", "sizes",
             "predicted", "departure", "flagged"]  # fmt: skip
    backends = ", ".join(f"{t} {b}" for t, b in c.backends.items())
    out = [
        f"# {c.new} against {', '.join(c.refs)}\n",
        f"Variant family {c.family}, back-ends: {backends}. relR = seconds per iteration on "
        f"{c.new} / on the reference, one rank against one rank as the runs ran (below 1: "
        f"{c.new} is faster); relR_node = a whole node against a whole node"
        + ("" if c.node_view else " (empty: a node is not known for every target)")
        + f"; problem sizes matched within {c.size_ratio:g}x.\n\n",
        "".join(
            f"- {t}: {how}; {c.scales[t].basis}: {c.scales[t].why}\n"
            if t in c.scales
            else f"- {t}: {how}\n"
            for t, how in c.configurations.items()
        ),
        "\n",
        "## Physics figures\n",
        table(c.physics()),
    ]
    missing = [f"- {t}: {m}" for t, ms in c.missing().items() for m in ms]
    if missing:
        out += ["\nNot measured:\n", "\n".join(missing) + "\n"]
    out += ["\n## Kernel groups (geometric mean per rank and per node, 90% bootstrap interval "
            "over kernels)\n", table(c.groups)]  # fmt: skip
    out += [
        "\n## Where it departs from the physics\n",
        f"Flagged outside the interval measured on the benchmark's machines ({_interval_text(c)}); "
        "slower than predicted first.\n\n",
        table(c.flags.select(*kcols, "excess")) if c.flags.height else "No kernel is flagged.\n",
    ]
    if plots:
        out += [f"\n![relR per kernel]({RATIOS_PNG})\n", f"\n![bandwidth]({BANDWIDTH_PNG})\n"]
    out += ["\n## Every kernel\n", table(c.kernels.select(kcols))]
    why = c.unmatched.group_by("ref", "side", "why").len().sort("ref", "side", "why")
    out += ["\n## Not matched\n", table(why) if why.height else "Everything was matched.\n"]
    return "".join(out)


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # plotting only; heavy
    from matplotlib.figure import Figure  # plotting only; heavy

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def plot_ratios(c: Comparison, path: Path) -> None:
    """relR per kernel on a log scale, kernels grouped by kernel group, one series per reference,
    the trial and size range as a bar, the physics prediction as a hollow marker, flags in red;
    the legend names each (:func:`ratios_figure`)."""
    fig = ratios_figure(c)
    fig.savefig(path, dpi=150, metadata={"Software": None})


def ratios_figure(c: Comparison):
    """The figure :func:`plot_ratios` writes (a matplotlib ``Figure``)."""
    k = c.kernels.sort("group", "kernel")
    kernels = k.select("group", "kernel").unique(maintain_order=True)
    x = {r: i for i, r in enumerate(kernels.get_column("kernel"))}
    fig = _figure(max(6.0, 0.16 * len(x) + 2), 4.5)
    ax = fig.add_subplot()
    flags_shown = False
    for j, (ref,) in enumerate(k.select("ref").unique(maintain_order=True).iter_rows()):
        part = k.filter(pl.col("ref") == ref)
        xs = np.array([x[n] for n in part.get_column("kernel")]) + 0.15 * j
        y = part.get_column("relR").to_numpy()
        err = [
            y - part.get_column("relR_min").to_numpy(),
            part.get_column("relR_max").to_numpy() - y,
        ]
        ax.errorbar(xs, y, yerr=err, fmt="o", ms=3, lw=0.8, label=f"vs {ref}")
        # the hollow markers and the flags once in the legend, whatever the references
        ax.scatter(xs, part.get_column("predicted").to_numpy(), marker="o", s=14,
                   facecolors="none", edgecolors="grey", linewidths=0.7,
                   label="predicted by the physics" if j == 0 else None)  # fmt: skip
        flagged = part.get_column("flagged").to_numpy()
        ax.scatter(xs[flagged], y[flagged], s=40, facecolors="none", edgecolors="red",
                   label="flagged" if flagged.any() and not flags_shown else None)  # fmt: skip
        flags_shown = flags_shown or bool(flagged.any())
    ax.axhline(1.0, color="black", lw=0.6)
    ax.set_yscale("log")
    ax.set_ylabel(f"relR: time on {c.new} / on reference")
    bounds = (
        kernels.with_row_index()
        .group_by("group", maintain_order=True)
        .agg(pl.col("index").min(), pl.col("index").max().alias("end"))
    )
    for g, lo, hi in bounds.iter_rows():
        ax.axvline(hi + 0.5, color="grey", lw=0.4)
        ax.text((lo + hi) / 2, 1.01, g, transform=ax.get_xaxis_transform(), ha="center", fontsize=7)
    ax.set_xticks(list(x.values()), list(x), rotation=90, fontsize=5)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_bandwidth(c: Comparison, path: Path) -> None:
    """Each target's sustained bandwidth, one rank as its runs ran, against the working set per
    launch, at the working sets its streaming kernels measured (never above what a run
    achieved)."""
    fig = _figure(6.0, 4.0)
    ax = fig.add_subplot()
    for t, s in c.signatures.items():
        how = c.configurations.get(t, "")
        ax.plot(2.0 ** np.array(s.bw_log2_ws), np.array(s.bw) / 1e9, marker="o", ms=3,
                label=f"{t} ({how})" if how else t)  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("working set per launch (bytes)")
    ax.set_ylabel("sustained bandwidth a rank (GB/s)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=150, metadata={"Software": None})


def write_report(c: Comparison, out: Path) -> list[Path]:
    """Write ``report.md``, ``ratios.png`` and ``bandwidth.png`` into ``out`` (created).

    Args:
        c: a comparison.
        out: the directory.

    Returns:
        The files written.
    """
    out.mkdir(parents=True, exist_ok=True)
    files = [out / REPORT_MD, out / RATIOS_PNG, out / BANDWIDTH_PNG]
    plot_ratios(c, files[1])
    plot_bandwidth(c, files[2])
    files[0].write_text(markdown(c))
    return files
