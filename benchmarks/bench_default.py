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
import os
import sys
import time
from pathlib import Path

import polars as pl
from _data import best_of

REPO = Path(__file__).resolve().parents[1]
TARGET = 1e5


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, help="also write the lines printed here (Markdown)")
    args = ap.parse_args(argv)
    lines: list[str] = []

    def say(text: str) -> None:
        print(text)
        lines.append(text)

    from _data import xplat_dataset

    ds, _ = xplat_dataset(args.data, "default")
    from xamm_models.benchmark import baselines
    from xamm_models.benchmark import dataset as xplat
    from xamm_models.predictors.default.model import StackedPredictor

    t = time.perf_counter()
    model = StackedPredictor(seed=0).fit(ds.pairs, ds.samples, dataset=f"{xplat.NAME}@{ds.version}")
    say(f"fit on {ds.pairs.height} pairs (inner folds included): {time.perf_counter() - t:.1f} s")
    rows = pl.concat([ds.pairs] * (args.rows // ds.pairs.height + 1)).head(args.rows)
    s = best_of(lambda: model.predict_pairs(rows), args.repeat)
    rate = args.rows / s
    ok = rate >= TARGET
    say(
        f"predict_pairs (with intervals): {args.rows} rows in "
        f"{s:.3f} s = {rate:,.0f} predictions/s "
        f"({rate / TARGET:.1f}x the 1e5/s target)"
    )
    peer = best_of(lambda: baselines.roofline(ds.pairs, rows, samples=ds.samples), args.repeat)
    say(
        f"peer, baseline/roofline on the same rows: {args.rows / peer:,.0f} predictions/s "
        f"(default/peer time ratio {s / peer:.2f})"
    )
    prof = ds.samples.filter(pl.col("target") == "quartz:cpu")
    prof = pl.concat([prof] * (20_000 // prof.height + 1)).head(20_000)
    targets = sorted(set(ds.samples.get_column("target")) - {"quartz:cpu"})
    s = best_of(lambda: model.rank_targets(prof, "quartz:cpu", targets), 1)
    say(
        f"rank_targets: {prof.height} profiles x {len(targets)} targets in {s:.2f} s = "
        f"{prof.height * len(targets) / s:,.0f} predictions/s with P(fastest) (4000 draws each)"
    )
    if args.out:
        head = (
            f"`python benchmarks/bench_default.py` on {ds.pairs.height} pairs, "
            f"{os.cpu_count()} cores:\n\n"
        )
        args.out.write_text(head + "".join(f"* {t}\n" for t in lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
