"""How far a bandwidth-only signature's modelled times are from the full one's.

A machine known only through BabelStream has a signature of one kind: bandwidth at one array
size. On targets with both, this study builds that signature from the target's own RAJAPerf
Stream kernels, each at its largest problem size (Copy, Mul, Add, Triad, Dot: what BabelStream
runs)
and compares, for every benchmark sample of the target, the time it models with the time the full
signature (every kernel and size) models and with the measured time.

``python -m xamm_models.studies.bandwidth_only --out docs/bandwidth-only.md`` writes the page from
the embedded benchmark rows, and the spread of the measured times around the bandwidth-only modelled
ones per kernel class (:func:`spread`) into :data:`SPREAD_FILE`, the interval a prediction on a
bandwidth-only target is widened to where its work has flops the target's runs never timed; tests
check both are what this code computes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl

from xamm_data.hub import snapshot
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.machines.physics import MIN_INTENSITY, modelled_time, physics_signature
from xamm_models.predictors.composed import BW_ONLY_SPREAD_FILE

STREAM = ("Stream_COPY", "Stream_MUL", "Stream_ADD", "Stream_TRIAD", "Stream_DOT")


#: Where the spread of measured times around bandwidth-only modelled ones is kept, per class:
#: beside its reader, :mod:`xamm_models.predictors.composed`.
SPREAD_FILE = BW_ONLY_SPREAD_FILE
STREAMING_INTENSITY = 0.25  # flop/byte: at most Triad's 2 flops per 24 bytes, rounded up


def stream_only(samples: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """A target's Stream kernels, each at its largest problem size (what BabelStream measures); a
    target whose runs hold no Stream group (the H100 and MI300A nodes' RAJAPerf-Benchmark sets)
    stands in its streaming kernels: one launch per rep, at most :data:`STREAMING_INTENSITY`
    flop/byte, each at its largest size.

    Args:
        samples: one target's benchmark samples.

    Returns:
        (the rows of a bandwidth-only signature, which rows they are).
    """
    s = samples.filter(pl.col("app").is_in(STREAM))
    what = "Stream kernels"
    if s.is_empty():
        s = samples.filter(
            (pl.col("kernels_per_rep").fill_null(1) == 1)
            & (
                pl.col("flops_per_rep").fill_null(0)
                <= STREAMING_INTENSITY * pl.col("bytes_per_rep")
            )
            & (pl.col("bytes_per_rep") > 0)
        )
        what = "streaming kernels (no Stream group)"
    s = s.filter(pl.col("problem_size") == pl.col("problem_size").max().over("app"))
    return s, f"{s.height} {what}"


def compare(samples: pl.DataFrame) -> pl.DataFrame:
    """Per target and kernel class (Stream kernels, other memory-bound kernels, compute-bound
    kernels): the samples, the median |log10| of bandwidth-only over full modelled time, and the
    share of samples each signature models within 2x of the measured time.

    Args:
        samples: benchmark samples of targets that ran the Stream kernels.

    Returns:
        One row per target and class.
    """
    rows = []
    for (target,), part in samples.group_by(["target"], maintain_order=True):
        bw_rows, what = stream_only(part)
        if bw_rows.height < 2:
            continue
        full, only = physics_signature(target, part), physics_signature(target, bw_rows)
        t = part.get_column("time_per_rep_s").to_numpy()
        m_full, m_only = modelled_time(full, part), modelled_time(only, part)
        flops, moved = part["flops_per_rep"].fill_null(0), part["bytes_per_rep"].fill_null(0)
        dense = (flops >= MIN_INTENSITY * moved).to_numpy()
        stream = part.get_column("app").is_in(STREAM).to_numpy()
        for label, mask in (
            ("Stream", stream),
            ("other, < 1 flop/B", ~stream & ~dense),
            ("other, >= 1 flop/B", ~stream & dense),
        ):
            if mask.any():
                rows.append(_row(target, what, label, t[mask], m_full[mask], m_only[mask]))
    return pl.DataFrame(rows).sort("target", "kernels")


def _errors(samples: pl.DataFrame) -> dict[str, list[np.ndarray]]:
    """Per class (``memory``: below :data:`MIN_INTENSITY` flop/B; ``compute``: at or above it):
    log10(measured / bandwidth-only modelled time), one array per target."""
    out: dict[str, list[np.ndarray]] = {"memory": [], "compute": []}
    for (target,), part in samples.group_by(["target"], maintain_order=True):
        bw_rows, _ = stream_only(part)
        if bw_rows.height < 2:
            continue
        only = physics_signature(target, bw_rows)
        err = np.log10(part["time_per_rep_s"].to_numpy() / modelled_time(only, part))
        flops, moved = part["flops_per_rep"].fill_null(0), part["bytes_per_rep"].fill_null(0)
        dense = (flops >= MIN_INTENSITY * moved).to_numpy()
        out["memory"].append(err[~dense])
        out["compute"].append(err[dense])
    return out


def spread(samples: pl.DataFrame) -> dict:
    """The 10th and 90th percentiles of log10(measured / bandwidth-only modelled time) per kernel
    class, every target weighted alike (each target's samples get weight 1 / their count).

    Args:
        samples: benchmark samples of targets with enough kernels to build both signatures.

    Returns:
        ``{"quantiles": {class: [q10, q90]}, "samples": {class: n}, "targets": n,
        "measured_on": ...}``.
    """
    errs = _errors(samples)
    quantiles, counts = {}, {}
    for cls, parts in errs.items():
        parts = [e for e in parts if e.size]
        x = np.concatenate(parts)
        w = np.concatenate([np.full(e.size, 1.0 / e.size) for e in parts])
        order = np.argsort(x)
        cum = np.cumsum(w[order]) / w.sum()
        q = [float(x[order][np.searchsorted(cum, p)]) for p in (0.1, 0.9)]
        quantiles[cls] = [round(v, 6) for v in q]
        counts[cls] = int(x.size)
    return {
        "measured_on": "the embedded snapshot's benchmark samples, bandwidth-only signatures from "
        "each target's streaming kernels",
        "quantiles": quantiles,
        "samples": counts,
        "targets": len(errs["memory"]),
    }


def _row(target: str, what: str, label: str, t, full, only) -> dict:
    def within2(m):
        return float(np.mean(np.abs(np.log10(m / t)) <= np.log10(2)))

    return {
        "target": target,
        "bandwidth from": what,
        "kernels": label,
        "samples": len(t),
        "median abs(log10 bw-only / full)": float(np.median(np.abs(np.log10(only / full)))),
        "full: within 2x of measured": within2(full),
        "bw-only: within 2x of measured": within2(only),
    }


def markdown(table: pl.DataFrame) -> str:
    """The page: what was compared and the table.

    Args:
        table: :func:`compare`'s result.

    Returns:
        Markdown text.
    """
    cols = table.columns
    lines = [
        "# A bandwidth-only signature against the full one",
        "",
        "Generated by `python -m xamm_models.studies.bandwidth_only --out "
        "docs/bandwidth-only.md` from the embedded benchmark rows; do not edit by hand.",
        "",
        "The bandwidth-only signature is built from the target's own Stream kernels, each at its "
        "largest problem size (what BabelStream measures), or where the runs hold no Stream group "
        f"from its streaming kernels (one launch, at most {STREAMING_INTENSITY} flop/B): it has no "
        "launch overhead and no flop rate. Each row models every benchmark sample of the target "
        "with both signatures; the full signature is measured from every sample.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for r in table.iter_rows():
        lines.append(
            "| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in r) + " |"
        )
    return "\n".join(lines) + "\n"


def embedded_samples() -> pl.DataFrame:
    """The benchmark samples of the embedded snapshot's targets.

    Returns:
        Samples of every target the snapshot ships.
    """
    runs = pl.concat([snapshot.read("benchmark_runs", m) for m in snapshot.machines()])
    return samples_from_runs(runs)


def main(argv: list[str] | None = None) -> int:
    """Write the page and the spread.

    Args:
        argv: ``--out PATH [--spread PATH]``.

    Returns:
        0.
    """
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--spread", type=Path, default=SPREAD_FILE, help="where the spread goes")
    args = p.parse_args(argv)
    samples = embedded_samples()
    args.out.write_text(markdown(compare(samples)))
    args.spread.write_text(json.dumps(spread(samples), indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
