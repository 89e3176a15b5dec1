"""Wall time of the test suite against its budgets: the fast lane (``pytest -m "not slow"``) within
3 minutes, the whole suite within 12, on the machine it runs on (CI: 2 cores).

    python benchmarks/bench_tests.py [--lane fast|full|both] [--json]

Each lane runs in a fresh ``pytest -q -p no:cacheprovider`` with ``CI=true`` (a missing
``../shared/data`` fails rather than skips, so the figure is of the real suite). Prints the wall
time, pytest's own count line and whether the budget held; exits 1 when a lane fails its tests or
its budget.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LANES = {"fast": (["-m", "not slow"], 180.0), "full": ([], 720.0)}


def run_lane(name: str) -> dict:
    """One lane: its wall time, pytest's summary line, and the verdicts."""
    args, budget = LANES[name]
    cmd = [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", *args]
    t = time.perf_counter()
    r = subprocess.run(
        cmd, cwd=REPO, env={**os.environ, "CI": "true"}, capture_output=True, text=True
    )
    seconds = time.perf_counter() - t
    tail = [ln for ln in r.stdout.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    return {
        "lane": name,
        "seconds": round(seconds, 1),
        "budget_s": budget,
        "within_budget": seconds <= budget,
        "tests_passed": r.returncode == 0,
        "pytest": tail[-1].strip("= ") if tail else r.stdout[-500:],
        "failed": [ln.split(" - ")[0] for ln in r.stdout.splitlines() if ln.startswith("FAILED")],
        "cpus": os.cpu_count(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lane", choices=["fast", "full", "both"], default="both")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    lanes = ["fast", "full"] if args.lane == "both" else [args.lane]
    rows = [run_lane(n) for n in lanes]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            verdict = "within" if r["within_budget"] else "OVER"
            print(
                f"{r['lane']:>4}: {r['seconds']:7.1f} s ({verdict} the {r['budget_s']:.0f} s "
                f"budget, {r['cpus']} cpus): {r['pytest']}"
            )
            for name in r["failed"]:
                print(f"      {name}")
    return 0 if all(r["within_budget"] and r["tests_passed"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
