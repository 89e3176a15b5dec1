"""A drift as a report: Markdown tables and a plot (``xamm compare M@now M@accepted --out DIR``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from xamm_data.atomic import write_text_atomic
from xamm_models.compare.history.drift import Drift
from xamm_models.compare.runs.report import table

__all__ = ["drift_markdown", "plot_drift", "write_drift_report"]

DRIFT_MD = "drift.md"
DRIFT_PNG = "drift.png"


def drift_markdown(d: Drift, *, plot: bool = True) -> str:
    """The drift's Markdown.

    Args:
        d: a drift.
        plot: link the PNG :func:`write_drift_report` writes beside it.

    Returns:
        Markdown.
    """
    moved = d.kernels.filter(pl.col("verdict") != "same")
    sides = pl.DataFrame(
        [
            {"side": k, **{c: (", ".join(v) if isinstance(v, list) else v) for c, v in s.items()}}
            for k, s in d.sides.items()
        ]  # fmt: skip
    )
    out = [
        f"# Drift of {d.target}: {d.after} against {d.before}\n",
        f"ratio = time per rep after / before (above 1: slower), the geometric mean over trials; "
        f"a kernel or group is flagged when its whole {d.level:.0%} family-wise interval lies "
        f"beyond {d.tolerance:.0%} either way. Kernels' intervals come from their trials' spread "
        "(shrunk toward the median kernel's), groups' from a bootstrap over their kernels and "
        "trials.\n",
        "## The runs\n",
        table(sides),
        "\n## Kernel groups\n",
        table(d.groups),
        "\n## Kernels that moved\n",
        table(moved) if moved.height else "None.\n",
    ]
    if plot:
        out.append(f"\n![ratio per kernel with its interval]({DRIFT_PNG})\n")
    if d.unmatched.height:
        out += ["\n## On one side only\n", table(d.unmatched)]
    return "\n".join(out)


def plot_drift(d: Drift, path: Path) -> None:
    """Each kernel's ratio with its interval, log scale, the tolerance band shaded.

    Args:
        d: a drift.
        path: the PNG written.
    """
    import matplotlib  # heavy, and only for --out

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy, and only for --out

    k = d.kernels.sort("ratio")
    n = k.height
    fig, ax = plt.subplots(figsize=(7, max(3.0, 0.14 * n + 1)), dpi=110)
    y = np.arange(n)
    r = k.get_column("ratio").to_numpy()
    lo = k.get_column("lo").fill_null(np.nan).to_numpy()
    hi = k.get_column("hi").fill_null(np.nan).to_numpy()
    colour = {"slower": "tab:red", "faster": "tab:green"}
    c = [colour.get(v, "tab:gray") for v in k.get_column("verdict")]
    ax.hlines(y, lo, hi, colors=c, lw=1.2)
    ax.scatter(r, y, c=c, s=10, zorder=3)
    ax.axvspan(1 / (1 + d.tolerance), 1 + d.tolerance, color="0.9", zorder=0)
    ax.axvline(1, color="0.5", lw=0.8)
    ax.set_xscale("log")
    ax.set_yticks(y, [f"{a} {b}" for a, b in zip(k["kernel"], k["problem_size"])], fontsize=5)
    ax.set_xlabel(f"time after / before ({d.level:.0%} family-wise intervals)")
    ax.set_title(f"{d.target}: drift", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_drift_report(d: Drift, out: str | Path) -> list[Path]:
    """Write ``drift.md`` and ``drift.png`` into ``out``.

    Returns:
        The paths.
    """
    o = Path(out)
    o.mkdir(parents=True, exist_ok=True)
    png = o / DRIFT_PNG
    plot_drift(d, png)
    md = o / DRIFT_MD
    write_text_atomic(md, drift_markdown(d))
    return [md, png]
