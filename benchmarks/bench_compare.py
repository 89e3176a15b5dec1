"""``xamm compare`` on every real pair of the shared data, as a whole command (target: under 2 s on
the largest pair, median of 5).

    python benchmarks/bench_compare.py [--runs 5] [--json docs/bench/compare.json]
        [--out docs/bench/compare.md]

The xplat-rajaperf sources are ingested into a temporary store first, and the Thicket tutorial's
quartz and lassen runs (the largest pair: several problem sizes each) into another (not timed).
Each command runs in a fresh interpreter through the ``xamm`` entry point function, so the figure
includes Python's start-up and every import; the rows of both ends are printed beside it.
``--out`` adds the report (Markdown and two PNG plots) and is timed apart. The floor beside them
is ``python -c pass``, timed the same way; ``--json`` keeps every figure, and the test suite
regenerates the page's table from it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
from _data import published, xplat_dataset

TARGET_S = 2.0
PAIRS = (
    ("dane", "quartz", "--size-ratio", "16"),
    ("lassen", "quartz"),
    ("h100-node:gpu", "lassen"),
    ("h100-node:gpu", "mi300a-spx:gpu"),
    ("h100-node:gpu", "mi300a-spx:gpu", "lassen", "quartz"),
)


def timed(args: list[str], store: Path, runs: int) -> list[float]:
    """Wall seconds of ``runs`` fresh ``xamm compare`` commands."""
    code = "import sys\nfrom xamm_data.cli.commands import main\nsys.exit(main(sys.argv[1:]))"
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-c", code, "compare", *args, "--store", str(store), "--json"],
            capture_output=True,
            text=True,
            env=os.environ,
        )
        out.append(time.perf_counter() - t)
        if r.returncode != 0:
            raise RuntimeError(f"xamm compare {' '.join(args)}: {r.stderr[-1000:]}")
    return out


def floor(runs: int) -> list[float]:
    """Wall seconds of ``runs`` fresh ``python -c pass`` (the machine's floor)."""
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        out.append(time.perf_counter() - t)
    return out


def measure(data: Path, runs: int) -> dict:
    """Every pair's rows and wall seconds, the largest pair with ``--out``, and the floor."""
    ds, tmp = xplat_dataset(data, "compare")
    rows = ds.runs.group_by("machine", "device").len()
    cases = []
    for pair in PAIRS:
        names = [p for p in pair if not p.startswith("--") and not p.isdigit()]
        n = sum(_rows(rows, t) for t in names)
        cases.append(
            {"label": " ".join(pair), "rows": n, "s": timed(list(pair), tmp / "store", runs)}
        )
    tutorial = _tutorial_store(data, tmp / "tutorial-store")
    n = tutorial.scan("benchmark_runs").select(pl.len()).collect().item()
    cases.append(
        {
            "label": "lassen quartz (Thicket tutorial runs)",
            "rows": n,
            "s": timed(["lassen", "quartz"], tutorial.root, runs),
        }
    )
    out = timed(["lassen", "quartz", "--out", str(tmp / "report")], tutorial.root, runs)
    cases.append(
        {"label": "the largest pair with --out (report and plots)", "rows": None, "s": out}
    )
    return {"cpus": os.cpu_count(), "python": sys.version.split()[0], "runs": runs,
            "floor_s": floor(runs), "cases": cases}  # fmt: skip


def report(rec: dict) -> bool:
    """Print the table of a record (:func:`measure`); True when every pair meets the target."""
    print(f"cpus: {rec['cpus']}   python {rec['python']}   runs: {rec['runs']}")
    print(f"floor: python -c pass {statistics.median(rec['floor_s']):.3f} s (median)")
    print(f"{'xamm compare ...':<58}{'rows':>7}{'median s':>10}{'worst s':>9}")
    worst = 0.0
    for c in rec["cases"]:
        med = statistics.median(c["s"])
        if c["rows"] is not None:
            worst = max(worst, med)
        rows = "" if c["rows"] is None else str(c["rows"])
        print(f"{c['label']:<58}{rows:>7}{med:>10.2f}{max(c['s']):>9.2f}")
    met = worst < TARGET_S
    print(f"target: every pair, the largest too, under {TARGET_S} s: {'met' if met else 'NOT met'}")
    return met


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=Path(__file__).parents[2] / "shared" / "data")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    args = ap.parse_args(argv)
    rec = measure(args.data, args.runs)
    published(rec, args.json, args.out, "bench_compare.py", report)
    return 0


def _tutorial_store(data: Path, root: Path):
    """The Thicket tutorial's quartz and lassen RAJAPerf runs in a store of their own."""
    from xamm_data.store.store import Store
    from xamm_ingest import read_rajaperf

    st = Store(root)
    for machine in ("quartz", "lassen"):
        runs = read_rajaperf(data / "LLNL+thicket-tutorial" / "data" / machine, workers=2)
        st.write(runs.frame, "benchmark_runs")
    return st


def _rows(rows, target: str) -> int:
    machine, _, device = target.partition(":")
    part = rows.filter(pl.col("machine") == machine)
    if device:
        part = part.filter(pl.col("device") == device)
    return int(part.get_column("len").sum())


if __name__ == "__main__":
    sys.exit(main())
