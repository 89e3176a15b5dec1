"""A table of regions in, predictions out: a TeaLeaf run on the P100, predicted on every platform
of the UoB study that has BabelStream runs, beside what TeaLeaf measured there.

    python examples/predict_region_table.py [--uob DIR] [--out out/tealeaf.csv]

``--out`` is the region table written from the log; the predictions beside the measurements go
next to it as Parquet.

A region table is what a team without a profiler has: one row per region with its time (and bytes
and flops where known). Here it is one region, the whole program, its time the TeaLeaf log's last
wall clock. Every platform's signature comes from its own BabelStream runs (UoB study, 2019);
TeaLeaf's measured runtimes on the other platforms (same programming model, CUDA) are printed
beside the predictions. The shell form is ``xamm predict TABLE --source p100-isambard:gpu
--target-benchmarks STORE``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

from xamm_data.cli.summary import print_frame
from xamm_ingest import read_babelstream, read_regions
from xamm_ingest.readers.app_logs import tealeaf_run
from xamm_models.predictors.composed import predict_profile

REPO = Path(__file__).resolve().parents[1]
UOB = REPO.parent / "shared" / "data" / "UoB-HPC+performance-portability/benchmarking/2019"
# TeaLeaf's CUDA logs per platform (the study's file names)
CUDA_LOGS = {
    "p100-isambard": "p100-cuda.out",
    "v100-isambard": "cuda-nvcc-10.0.out",
    "k20-bcp3": "cuda-7.5.out",
    "gtx2080ti-zoo": "cuda-10.1.out",
}


def measured(uob: Path) -> pl.DataFrame:
    """TeaLeaf's CUDA runtime per platform, from its logs (runs that passed)."""
    rows = []
    for plat, name in CUDA_LOGS.items():
        log = uob / "tealeaf" / plat / "results" / name
        run = tealeaf_run(log.read_text(errors="replace")) if log.is_file() else None
        if run and run.passed and run.runtime_s:
            rows.append({"target": f"{plat}:gpu", "measured_s": run.runtime_s})
    return pl.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--uob", type=Path, default=UOB, help="the UoB study's 2019 folder")
    ap.add_argument("--out", type=Path, default=REPO / "out" / "tealeaf.csv")
    args = ap.parse_args()
    truth = measured(args.uob)
    source = truth.filter(pl.col("target") == "p100-isambard:gpu")["measured_s"][0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"region": ["tealeaf"], "time_s": [source]}).write_csv(args.out)
    stream = read_babelstream(
        args.uob / "babelstream", path_patterns=[r"^(?P<machine>[^/]+)/"], workers=1
    )
    pred = predict_profile(
        read_regions(args.out),
        source="p100-isambard:gpu",
        targets=truth["target"].to_list(),
        target_benchmarks=stream.frame,
    )
    table = pred.programs.join(truth, on="target", how="left").with_columns(
        (pl.col("measured_s") / source).alias("measured_relR")
    )
    print_frame(
        table.select("rank", "target", "relR", "relR_lo", "relR_hi", "measured_relR", "time_s"),
        title=f"TeaLeaf ({source:.1f} s on the P100) on the other GPUs; 80% intervals",
    )
    print("\n".join(f"- {n}" for n in pred.notes))
    table.write_parquet(args.out.with_suffix(".parquet"))


if __name__ == "__main__":
    main()
