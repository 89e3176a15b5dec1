"""Whole-process start-up of the ``xamm`` commands against the interpreter's own, in CPU and wall.

    python benchmarks/bench_startup.py [--runs 7] [--out docs/bench/startup.md]

Each case runs in a fresh interpreter (a command as its installed console script runs it: its
``console`` entry point on its ``sys.argv``, which ends it without the interpreter's teardown,
:func:`xamm_data.cli.tools.exit_now`; the floors are plain ``python -c``); its CPU seconds
(user + system, of the child process) and wall seconds are the median of ``--runs``. Two floors
run beside them in the same run: ``python -c pass`` and
``python -c "import polars, numpy, pydantic"``. The targets are ratios to them (a loaded machine
slows every case alike): every ``--help`` at most 8x the first floor's CPU;
``xamm predict`` on the README's LULESH profile (from ``--data``, skipped without it) at most 2x the
second's. Beside them, the second floor ended as the console scripts end (``os._exit``), and
``xamm predict`` against it: the import cost alone, without a teardown the command does not pay.
``--json`` writes the figures for a page generator or a test.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _data import printed_to

REPO = Path(__file__).resolve().parents[1]

HELP_TARGET = 8.0  # x the CPU of ``python -c pass``
PREDICT_TARGET = 2.0  # x the CPU of ``import polars, numpy, pydantic``
PREDICT = "xamm predict lulesh.cali --json"
LULESH = "LLNL+thicket-tutorial/data/lulesh/230906-105532_880456_M8YbWSOYgGWa.cali"
# what the installed console script runs (``[project.scripts]``), ``sys.argv`` as it would see it
SCRIPT = "import sys\nfrom {module} import console\nsys.argv = [{prog!r}, *{{argv!r}}]\nconsole()"
XAMM = SCRIPT.format(module="xamm_data.cli.commands", prog="xamm")
INGEST = SCRIPT.format(module="xamm_ingest.cli", prog="xamm-ingest")
FLOOR, LIBS = "python -c pass", "import polars, numpy, pydantic"
# the same imports ended as the console scripts end, without the interpreter's teardown
LIBS_ONLY = "the same, ended by os._exit"
CASES = {
    FLOOR: "pass",
    LIBS: "import polars, numpy, pydantic",
    LIBS_ONLY: "import os, polars, numpy, pydantic\nos._exit(0)",
    "import xamm_data": "import xamm_data",
    "xamm --help": XAMM.format(argv=["--help"]),
    "xamm --version": XAMM.format(argv=["--version"]),
    "xamm predict --help": XAMM.format(argv=["predict", "--help"]),
    "xamm compare --help": XAMM.format(argv=["compare", "--help"]),
    "xamm datasets list --help": XAMM.format(argv=["datasets", "list", "--help"]),
    "xamm-ingest --help": INGEST.format(argv=["--help"]),
    "xamm-ingest rajaperf --help": INGEST.format(argv=["rajaperf", "--help"]),
    "xamm-ingest caliper --help": INGEST.format(argv=["caliper", "--help"]),
    "xamm datasets list": XAMM.format(argv=["datasets", "list"]),
}


def run(code: str, home: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one fresh interpreter running ``code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        env={"XAMM_HOME": home, "PATH": "/usr/bin:/bin"},
        check=False,
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def cases(data: Path) -> dict[str, str]:
    """The cases, with ``xamm predict`` on the README's profile when ``data`` holds it."""
    if not (data / LULESH).is_file():
        print(f"note: {data / LULESH} not found: `{PREDICT}` not measured", file=sys.stderr)
        return dict(CASES)
    return {**CASES, PREDICT: XAMM.format(argv=["predict", str(data / LULESH), "--json"])}


def measure(runs: int, data: Path) -> dict[str, dict[str, float]]:
    """Per case, the median CPU and wall seconds of ``runs`` runs, interleaved (each round runs
    every case once, so a load that comes and goes weighs on all of them)."""
    home = tempfile.mkdtemp()
    todo = cases(data)
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in todo}
    for _ in range(runs):
        for name, code in todo.items():
            got[name].append(run(code, home))
    return {
        name: {
            "cpu_s": statistics.median(c for c, _ in r),
            "wall_s": statistics.median(w for _, w in r),
        }
        for name, r in got.items()
    }


def report(figures: dict[str, dict[str, float]], runs: int) -> None:
    """Print the table: each case's CPU and wall, as ratios to the two floors, and the target."""
    floor, libs = figures[FLOOR]["cpu_s"], figures[LIBS]["cpu_s"]
    print(f"python {sys.version.split()[0]}; medians of {runs} interleaved runs")
    print(f"floors: `{FLOOR}` {floor:.3f} cpu-s; `{LIBS}` {libs:.3f} cpu-s")
    print(f"{'command':32s} {'cpu s':>7s} {'wall s':>7s} {'x floor':>8s} {'x libs':>7s}  target")
    for name, f in figures.items():
        target = ""
        if name.endswith("--help"):
            ok = f["cpu_s"] <= HELP_TARGET * floor
            target = f"<= {HELP_TARGET:g}x floor: {'met' if ok else 'NOT met'}"
        elif name == PREDICT:
            ok = f["cpu_s"] <= PREDICT_TARGET * libs
            target = f"<= {PREDICT_TARGET:g}x libs: {'met' if ok else 'NOT met'}"
        print(
            f"{name:32s} {f['cpu_s']:7.3f} {f['wall_s']:7.3f} {f['cpu_s'] / floor:8.1f} "
            f"{f['cpu_s'] / libs:7.2f}  {target}"
        )
    if PREDICT in figures and LIBS_ONLY in figures:
        ratio = figures[PREDICT]["cpu_s"] / figures[LIBS_ONLY]["cpu_s"]
        print(f"`{PREDICT}` / `{LIBS}` ended by os._exit: {ratio:.2f}x (neither pays the teardown)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument(
        "--data", type=Path, default=REPO.parent / "shared" / "data", help="the shared data"
    )
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    figures = measure(args.runs, args.data)
    if args.json:
        args.json.write_text(json.dumps({"runs": args.runs, "cases": figures}, indent=1) + "\n")
    with printed_to(args.out, "bench_startup.py"):
        report(figures, args.runs)


if __name__ == "__main__":
    main()
