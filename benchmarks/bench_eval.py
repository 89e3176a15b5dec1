"""Wall time of ``xamm eval`` against its budgets: ``--quick`` within 3 minutes,
everything (``--experiment all``, all three schemes) within 15 minutes, on 2 cores.

    python benchmarks/bench_eval.py [--data ../shared/data] [--skip-full]

Builds ``xplat-rajaperf`` from its named sources into a temporary store once, then times the two
commands' work (:func:`xamm_models.experiments.run.run_experiments`) and prints seconds and the
ratio to the budget. The full run's own figure is also recorded in ``docs/eval/results.json``
(``seconds``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUDGETS = {"quick": 180.0, "full": 900.0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--skip-full", action="store_true", help="time --quick only")
    args = ap.parse_args(argv)
    from _data import xplat_dataset

    t = time.perf_counter()
    ds, tmp = xplat_dataset(args.data, "eval")
    build = time.perf_counter() - t
    from xamm_models.benchmark import dataset as xplat
    from xamm_models.experiments.run import EvalSettings, run_experiments

    print(
        f"build {xplat.NAME} from its sources: {build:.1f} s "
        f"({ds.pairs.height} pairs, version {ds.version})"
    )
    runs = [("quick", EvalSettings.for_quick())] + (
        [] if args.skip_full else [("full", EvalSettings())]
    )
    ok = True
    for name, settings in runs:
        t = time.perf_counter()
        run_experiments(
            dataset=ds,
            experiments=(1, 2, 3, 4),
            settings=settings,
            out_dir=tmp / name,
            progress=lambda *_: None,
        )
        s = time.perf_counter() - t + build
        ok &= s <= BUDGETS[name]
        print(
            f"xamm eval {'--quick' if name == 'quick' else '--experiment all'}: {s:.0f} s "
            f"(budget {BUDGETS[name]:.0f} s, ratio {s / BUDGETS[name]:.2f}) "
            f"on {os.cpu_count()} cores"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
