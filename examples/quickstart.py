"""The main job on the small sample kept in the repo: ingest RAJAPerf outputs, load them back,
summarise.

    python examples/quickstart.py [--store out/quickstart-store]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from xamm_data import Store, load_dataset
from xamm_data.cli.summary import print_frame, summarize_benchmark_runs
from xamm_ingest import ingest_rajaperf

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "tests" / "fixtures" / "rajaperf_sample"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--store", type=Path, default=REPO / "out" / "quickstart-store")
    args = ap.parse_args()
    store = Store(args.store)
    report = ingest_rajaperf(SAMPLE, store=store, workers=1)
    print(
        f"ingested {report.frame.height} rows from {report.sources_read} "
        f"sources under {SAMPLE.relative_to(REPO)}; "
        f"rejected {len(report.rejected)}; CSV+Caliper rows merged {report.merged_rows}"
    )
    df = load_dataset("example-node", store=store)
    print_frame(
        summarize_benchmark_runs(df), title=f"load_dataset('example-node'): {df.height} rows"
    )
    print_frame(
        df.select(
            "kernel",
            "variant",
            "tuning",
            "problem_size",
            "trial",
            "time_per_rep_s",
            "bandwidth_bytes_per_s",
            "source_format",
        ).sort("kernel", "variant", "trial"),
        title="benchmark_runs",
    )
    print(f"store: {store.partition_path('benchmark_runs', 'example-node')}")


if __name__ == "__main__":
    main()
