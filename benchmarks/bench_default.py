"""Throughput of xamm's default predictor on CPU, intervals included (target: >= 1e5
predictions/s).

    python benchmarks/bench_default.py [--data ../shared/data] [--rows 100000] [--json F]
        [--out FILE]

Builds ``xplat-rajaperf`` from its named sources, fits
:class:`~xamm_models.predictors.default.model.StackedPredictor` on all its pairs, then times
``predict_pairs`` (relR with its 80% interval) on ``--rows`` pair rows (the data set's pairs
repeated), and ``rank_targets`` (with P(fastest)). The peer is the roofline
baseline on the same rows, in the same process (like with like), timed in turn with the default
(the fastest of ``--repeat`` rounds each); ``python -c pass`` is printed as the machine's
floor. ``--json`` keeps the figures; the test suite regenerates the page from them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
from _data import best_of, best_of_each, printed_to

REPO = Path(__file__).resolve().parents[1]
TARGET = 1e5
PEER_RATIO = 1.5  # predict_pairs with intervals at most this times the roofline's time
RANK_TARGET = 1e4  # rank_targets predictions per second, with P(fastest)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    args = ap.parse_args(argv)
    rec = measure(args)
    if args.json:
        args.json.write_text(json.dumps(rec, indent=1) + "\n")
    with printed_to(args.out, "bench_default.py"):
        return 0 if report(rec) else 1


def floor_s(repeat: int) -> float:
    """The fastest of ``repeat`` runs of ``python -c pass`` (the machine's floor)."""
    return best_of(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), repeat)


def measure(args) -> dict:
    """Fit, then time the default and the roofline on the same rows, in this process."""
    from _data import xplat_dataset

    ds, _ = xplat_dataset(args.data, "default")
    from xamm_models.benchmark import baselines
    from xamm_models.benchmark import dataset as xplat
    from xamm_models.predictors.default.model import StackedPredictor

    t = time.perf_counter()
    model = StackedPredictor(seed=0).fit(ds.pairs, ds.samples, dataset=f"{xplat.NAME}@{ds.version}")
    fit = time.perf_counter() - t
    rows = pl.concat([ds.pairs] * (args.rows // ds.pairs.height + 1)).head(args.rows)
    timed = best_of_each(
        {
            "default": lambda: model.predict_pairs(rows),
            "peer": lambda: baselines.roofline(ds.pairs, rows, samples=ds.samples),
        },
        args.repeat,
    )
    default, peer = timed["default"], timed["peer"]
    prof = ds.samples.filter(pl.col("target") == "quartz:cpu")
    prof = pl.concat([prof] * (20_000 // prof.height + 1)).head(20_000)
    targets = sorted(set(ds.samples.get_column("target")) - {"quartz:cpu"})
    rank = best_of(lambda: model.rank_targets(prof, "quartz:cpu", targets), 1)
    return {"cpus": os.cpu_count(), "python": sys.version.split()[0], "pairs": ds.pairs.height,
            "fit_s": fit, "rows": args.rows, "predict_pairs_s": default, "roofline_s": peer,
            "profiles": prof.height, "targets": len(targets), "rank_targets_s": rank,
            "floor_s": floor_s(args.repeat)}  # fmt: skip


def report(rec: dict) -> bool:
    """Print the figures of a record (:func:`measure`); True when the target is met."""
    n, s, peer = rec["rows"], rec["predict_pairs_s"], rec["roofline_s"]
    rate = n / s
    print(f"cpus: {rec['cpus']}   python {rec['python']}   in-process figures, best of the repeats")
    print(f"floor: python -c pass {rec['floor_s']:.3f} s (a whole process; not in these figures)")
    print(f"fit on {rec['pairs']} pairs (inner folds included): {rec['fit_s']:.1f} s")
    print(
        f"predict_pairs (with intervals): {n} rows in {s:.3f} s = {rate:,.0f} predictions/s "
        f"({rate / TARGET:.1f}x the 1e5/s target)"
    )
    print(
        f"peer, baseline/roofline on the same rows: {n / peer:,.0f} predictions/s "
        f"(default/peer time ratio {s / peer:.2f}; target <= {PEER_RATIO})"
    )
    k = rec["profiles"] * rec["targets"]
    print(
        f"rank_targets: {rec['profiles']} profiles x {rec['targets']} targets in "
        f"{rec['rank_targets_s']:.2f} s = {k / rec['rank_targets_s']:,.0f} predictions/s with "
        f"P(fastest) (4000 draws each; target >= {RANK_TARGET:,.0f})"
    )
    return rate >= TARGET and s / peer <= PEER_RATIO and k / rec["rank_targets_s"] >= RANK_TARGET


if __name__ == "__main__":
    sys.exit(main())
