"""Speed of the profile path: ``xamm predict PROFILE`` end to end on a real LULESH Caliper file,
and ``predict_profile`` on 1e5 regions.

    python benchmarks/bench_profile.py [--data ../shared/data] [--regions 100000] [--repeat 3]

* **command**: ``xamm predict lulesh.cali --json`` as a process (start-up, reading, predicting
  every machine with a signature, ranking). Its peer is what a notebook user runs first: loading
  the same file into a Thicket (``Thicket.from_caliperreader``), also as a process.
* **API**: ``predict_profile`` on a synthetic profile of ``--regions`` regions (one parent, the
  rest leaves with bytes and flops; timing only, no accuracy claim) against every signature. Its
  peer is the default predictor's ``predict`` on the same rows as plain profile rows: the cost the
  composition adds is the ratio.

Prints the best of ``--repeat`` runs of each and the ratios.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
from _data import best_of

REPO = Path(__file__).resolve().parents[1]
LULESH = "LLNL+thicket-tutorial/data/lulesh/230906-105532_880456_M8YbWSOYgGWa.cali"
THICKET = "import sys, thicket; thicket.Thicket.from_caliperreader([sys.argv[1]])"


def synthetic(n: int, seed: int = 0):
    """A profile of ``n`` regions under one root, each with time, bytes and flops."""
    from xamm_data.tables.regions import ProfileMeta, RegionProfile, conform_regions

    rng = np.random.default_rng(seed)
    t = rng.lognormal(-6, 2, n)
    names = [f"k{i}" for i in range(n)]
    frame = pl.DataFrame(
        {
            "region": ["main", *(f"main/{k}" for k in names)],
            "name": ["main", *names],
            "parent": [None, *(["main"] * n)],
            "exclusive_s": [0.0, *t],
            "calls": [1.0, *rng.integers(1, 1000, n).astype(float)],
            "bytes": [None, *(t * rng.uniform(1e9, 2e10, n))],
            "flops": [None, *(t * rng.uniform(1e8, 1e11, n))],
            "work_from": "synthetic",
            "category": "compute",
        }
    )
    meta = ProfileMeta(path="synthetic", format="table", app="synthetic", source="quartz:cpu")
    return RegionProfile(meta, conform_regions(frame))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--regions", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    cali = args.data / LULESH
    exe = Path(sys.executable).parent
    cmd = [str(exe / "xamm"), "predict", str(cali), "--json"]
    run = lambda argv: subprocess.run(argv, check=True, capture_output=True)  # noqa: E731
    s_cmd = best_of(lambda: run(cmd), args.repeat)
    s_tk = best_of(lambda: run([sys.executable, "-c", THICKET, str(cali)]), args.repeat)
    print(
        f"xamm predict lulesh.cali (process): {s_cmd:.2f} s; Thicket loading the same file "
        f"(process): {s_tk:.2f} s; xamm / Thicket {s_cmd / s_tk:.2f}x"
    )
    from xamm_models.predictors.composed import predict_profile, region_rows
    from xamm_models.predictors.kinds import load_model

    model = load_model("xamm/default")
    prof = synthetic(args.regions)
    targets = list(model.targets)
    s_api = best_of(lambda: predict_profile(prof, model), args.repeat)
    rows = region_rows(prof.regions, 1.0).drop("time_only")
    s_peer = best_of(lambda: model.predict(rows, "quartz:cpu", targets), args.repeat)
    print(
        f"predict_profile, {args.regions:,} regions x {len(targets)} targets: {s_api:.2f} s "
        f"({args.regions / s_api:,.0f} regions/s); the predictor alone on the same rows: "
        f"{s_peer:.2f} s; composition adds {s_api / s_peer:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
