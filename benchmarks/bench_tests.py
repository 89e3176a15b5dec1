"""Wall time of the test suite against its budgets: the fast lane (``pytest -m "not slow"``) within
90 s, the whole suite within 10 minutes, on the machine it runs on (CI: 2 cores).

    python benchmarks/bench_tests.py [--lane fast|full|both] [--record] [--json F] [--out FILE]

Each lane runs in a fresh ``pytest -q -p no:cacheprovider`` with ``CI=true`` (a missing
``../shared/data`` fails rather than skips, so the figure is of the real suite), with the workers
``pyproject.toml`` asks for. Prints the wall time, the CPU seconds, pytest's own count line and
whether the budget held, and the machine's floor (``python -c pass`` in CPU seconds, the median of
7 processes) before the first lane and after the last: the budgets are for 2 idle cores, and the
floor says how far from idle the machine was. Exits 1 when a lane fails its tests or its budget;
a lane whose tests fail keeps pytest's whole output (the failures' tracebacks) in a file whose path
it prints.
``--json`` keeps the figures; the test suite regenerates the page (``--out``) from them.
``--record`` also writes each test's seconds from the whole suite's run to ``tests/durations.json``,
with the setup seconds of each fixture a module's tests share: the tests over ``SLOW_SECONDS``
there, and the tests using a shared fixture over it, are the slow ones (``tests/conftest.py``), so
the fast lane follows the suite as it grows.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _data import floor_cpu_s, printed_to

REPO = Path(__file__).resolve().parents[1]
LANES = {"fast": (["-m", "not slow"], 90.0), "full": ([], 600.0)}
DURATIONS = REPO / "tests" / "durations.json"
FIXTURES_VAR = "XAMM_FIXTURE_SECONDS_DIR"  # tests/conftest.py: FIXTURE_SECONDS_DIR
_DURATION = re.compile(r"^([0-9.]+)s (?:call|setup|teardown)\s+(.+)$")


def durations(stdout: str) -> dict[str, float]:
    """Seconds per test id (setup, call and teardown summed) from ``--durations=0`` output.

    Args:
        stdout: pytest's output.

    Returns:
        The seconds by test id, rounded to 0.01 s.
    """
    out: dict[str, float] = {}
    for line in stdout.splitlines():
        if m := _DURATION.match(line.strip()):
            out[m.group(2)] = out.get(m.group(2), 0.0) + float(m.group(1))
    return {k: round(v, 2) for k, v in sorted(out.items())}


def fixture_seconds(folder: Path) -> dict[str, float]:
    """The longest setup of each shared fixture over the workers' files in ``folder``.

    Args:
        folder: where each worker wrote ``{fixture: seconds}`` (``tests/conftest.py``).

    Returns:
        Seconds by fixture (``<where it is defined>::<name>``), rounded to 0.01 s.
    """
    out: dict[str, float] = {}
    for f in sorted(folder.glob("*.json")):
        for k, s in json.loads(f.read_text()).items():
            out[k] = max(out.get(k, 0.0), s)
    return {k: round(v, 2) for k, v in sorted(out.items())}


def write_record(tests: dict[str, float], fixtures: dict[str, float]) -> None:
    """``tests/durations.json``: each test's seconds and each shared fixture's setup seconds."""
    record = {"cpus": os.cpu_count(), "seconds": tests, "fixtures": fixtures}
    DURATIONS.write_text(json.dumps(record, indent=0) + "\n")


def run_lane(name: str, record: bool = False) -> dict:
    """One lane: its wall and CPU time, pytest's summary line, and the verdicts.

    Args:
        name: ``fast`` or ``full``.
        record: also write each test's seconds to ``tests/durations.json`` (the whole suite).

    Returns:
        The lane's figures.
    """
    args, budget = LANES[name]
    cmd = [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", *args]
    if record:
        cmd.append("--durations=0")
    with tempfile.TemporaryDirectory() as fixtures:
        env = {**os.environ, "CI": "true", **({FIXTURES_VAR: fixtures} if record else {})}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if record and r.returncode == 0:
            write_record(durations(r.stdout), fixture_seconds(Path(fixtures)))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tail = [ln for ln in r.stdout.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    return {
        "lane": name,
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "budget_s": budget,
        "within_budget": seconds <= budget,
        "tests_passed": r.returncode == 0,
        "pytest": tail[-1].strip("= ") if tail else r.stdout[-500:],
        "failed": [ln.split(" - ")[0] for ln in r.stdout.splitlines() if ln.startswith("FAILED")],
        # the failures' tracebacks, which the figures do not hold: a flaky test is read from them
        "output": None if r.returncode == 0 else kept_output(name, r.stdout + r.stderr),
        "cpus": os.cpu_count(),
    }


def kept_output(lane: str, text: str) -> str:
    """Keep a failed lane's whole pytest output in a file of its own.

    Args:
        lane: the lane's name (part of the file's name).
        text: what pytest printed.

    Returns:
        The file's path.
    """
    fd, path = tempfile.mkstemp(prefix=f"bench-tests-{lane}-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def report(figures: dict) -> bool:
    """Print the lanes against their budgets, the machine's floor before and after them.

    Args:
        figures: what :func:`main` measured (``floor_before_cpu_s``, ``floor_after_cpu_s``,
            ``lanes``).

    Returns:
        Whether every lane passed its tests within its budget.
    """
    print(
        f"floor (`python -c pass`, median of 7): {figures['floor_before_cpu_s']:.3f} cpu-s before, "
        f"{figures['floor_after_cpu_s']:.3f} cpu-s after"
    )
    for r in figures["lanes"]:
        verdict = "within" if r["within_budget"] else "OVER"
        print(
            f"{r['lane']:>4}: {r['seconds']:7.1f} s, {r['cpu_seconds']:.0f} cpu-s ({verdict} "
            f"the {r['budget_s']:.0f} s budget, {r['cpus']} cpus): {r['pytest']}"
        )
        for name in r["failed"]:
            print(f"      {name}")
        if r.get("output"):
            print(f"      pytest's output: {r['output']}")
    return all(r["within_budget"] and r["tests_passed"] for r in figures["lanes"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lane", choices=["fast", "full", "both"], default="both")
    ap.add_argument("--record", action="store_true", help="write tests/durations.json (full lane)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    args = ap.parse_args(argv)
    lanes = ["fast", "full"] if args.lane == "both" else [args.lane]
    before = floor_cpu_s()
    # the full lane first when it records: the fast lane then runs with what it recorded
    rows = [run_lane(n, record=args.record and n == "full") for n in sorted(lanes, reverse=True)]
    figures = {"floor_before_cpu_s": before, "floor_after_cpu_s": floor_cpu_s(), "lanes": rows}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    with printed_to(args.out, "bench_tests.py"):
        return 0 if report(figures) else 1


if __name__ == "__main__":
    sys.exit(main())
