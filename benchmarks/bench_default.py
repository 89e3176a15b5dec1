"""Throughput of xamm's default predictor on CPU, intervals included (target: >= 1e5
predictions/s).

    python benchmarks/bench_default.py [--data ../shared/data] [--rows 100000] [--out FILE]

Builds ``xplat-rajaperf`` from its named sources, fits
:class:`~xamm_models.predictors.default.model.StackedPredictor` on all its pairs, then times
``predict_pairs`` (relR with its 80% interval) on ``--rows`` pair rows (the data set's pairs
repeated), and ``rank_targets`` (with P(fastest)). The peer is the roofline
baseline on the same rows.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import polars as pl
from _data import best_of, printed_to

REPO = Path(__file__).resolve().parents[1]
TARGET = 1e5


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    args = ap.parse_args(argv)
    with printed_to(args.out, "bench_default.py"):
        return run(args)


def run(args) -> int:
    """Fit, time and print."""
    from _data import xplat_dataset

    ds, _ = xplat_dataset(args.data, "default")
    from xamm_models.benchmark import baselines
    from xamm_models.benchmark import dataset as xplat
    from xamm_models.predictors.default.model import StackedPredictor

    t = time.perf_counter()
    model = StackedPredictor(seed=0).fit(ds.pairs, ds.samples, dataset=f"{xplat.NAME}@{ds.version}")
    print(f"fit on {ds.pairs.height} pairs (inner folds included): {time.perf_counter() - t:.1f} s")
    rows = pl.concat([ds.pairs] * (args.rows // ds.pairs.height + 1)).head(args.rows)
    s = best_of(lambda: model.predict_pairs(rows), args.repeat)
    rate = args.rows / s
    ok = rate >= TARGET
    print(
        f"predict_pairs (with intervals): {args.rows} rows in "
        f"{s:.3f} s = {rate:,.0f} predictions/s "
        f"({rate / TARGET:.1f}x the 1e5/s target)"
    )
    peer = best_of(lambda: baselines.roofline(ds.pairs, rows, samples=ds.samples), args.repeat)
    print(
        f"peer, baseline/roofline on the same rows: {args.rows / peer:,.0f} predictions/s "
        f"(default/peer time ratio {s / peer:.2f})"
    )
    prof = ds.samples.filter(pl.col("target") == "quartz:cpu")
    prof = pl.concat([prof] * (20_000 // prof.height + 1)).head(20_000)
    targets = sorted(set(ds.samples.get_column("target")) - {"quartz:cpu"})
    s = best_of(lambda: model.rank_targets(prof, "quartz:cpu", targets), 1)
    print(
        f"rank_targets: {prof.height} profiles x {len(targets)} targets in {s:.2f} s = "
        f"{prof.height * len(targets) / s:,.0f} predictions/s with P(fastest) (4000 draws each)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
