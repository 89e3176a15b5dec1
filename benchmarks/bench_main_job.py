"""Wall time of the README's main job (``examples/main_job.py``) against its budget: under a
minute after install, on 2 cores. The peer is the data side alone (``examples/quickstart.py``:
ingest, load, summarise).

    python benchmarks/bench_main_job.py [--runs DIR] [--repeat 3]

Prints the best of ``--repeat`` runs of each, in a fresh output folder each time, and the ratios.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUDGET = 60.0


def best_of(argv: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="xamm-bench-main-") as tmp:
            t = time.perf_counter()
            subprocess.run(
                [sys.executable, *argv, "--out" if "main_job" in argv[0] else "--store", tmp],
                check=True,
                capture_output=True,
            )
            best = min(best, time.perf_counter() - t)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--runs", type=Path, default=None, help="the new machine's RAJAPerf runs (default: dane)"
    )
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    job = [
        str(REPO / "examples" / "main_job.py"),
        *(["--runs", str(args.runs)] if args.runs else []),
    ]
    s = best_of(job, args.repeat)
    peer = best_of([str(REPO / "examples" / "quickstart.py")], args.repeat)
    print(
        "main job (ingest a new machine's RAJAPerf run, read a LULESH profile, predict and "
        "rank it on every machine with a signature, PNG), process start included: "
        f"{s:.1f} s = {s / BUDGET:.2f} of the {BUDGET:.0f} s budget"
    )
    print(
        f"peer, the data side alone (examples/quickstart.py): {peer:.1f} "
        f"s (main job / peer {s / peer:.1f}x)"
    )
    return 0 if s <= BUDGET else 1


if __name__ == "__main__":
    sys.exit(main())
