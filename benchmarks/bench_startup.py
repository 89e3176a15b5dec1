"""Whole-process start-up of the ``xamm`` command, and ``import xamm_data`` (target: <= 0.8 s,
median of 5).

    python benchmarks/bench_startup.py [--runs 5]

Each command runs in a fresh interpreter (``python -m``-style, through the installed entry point
function), so the figure includes Python's own start-up; the bare interpreter is printed beside it
as the floor. Prints the median and worst of ``--runs`` runs, and whether torch was imported.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _data import printed_to

TARGET_S = 0.8
CASES = {
    "python -c pass (floor)": "pass",
    "import xamm_data": "import xamm_data",
    "xamm --help": "import sys\nfrom xamm_data.cli.commands import main\ntry:\n    "
    "main(['--help'])\nexcept SystemExit:\n    pass",
    "xamm --version": "from xamm_data.cli.commands import main\ntry:\n    "
    "main(['--version'])\nexcept SystemExit:\n    pass",
    "xamm datasets list": "import sys\nfrom xamm_data.cli.commands import main\nmain(['datasets', "
    "'list', '--store', sys.argv[1]])",
}


def run(code: str, store: str) -> tuple[float, bool]:
    probe = code + (
        "\nimport sys as _s\nprint('TORCH' if 'torch' in _s.modules else "
        "'NO-TORCH', file=_s.stderr)"
    )
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", probe, store], capture_output=True, text=True)
    lines = out.stderr.strip().splitlines()
    return time.perf_counter() - t, bool(lines) and lines[-1] == "TORCH"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    args = ap.parse_args()
    with printed_to(args.out, "bench_startup.py"):
        report(args.runs)


def report(runs: int) -> None:
    """Time each command ``runs`` times and print the medians against the target."""
    store = tempfile.mkdtemp()
    print(f"python {sys.version.split()[0]}; target <= {TARGET_S} s (median of {runs})")
    print(f"{'command':28s} {'median s':>9s} {'worst s':>8s}  torch imported  vs target")
    for name, code in CASES.items():
        got = [run(code, store) for _ in range(runs)]
        times = [t for t, _ in got]
        med = statistics.median(times)
        print(
            f"{name:28s} {med:9.3f} {max(times):8.3f}  "
            f"{'yes' if any(t for _, t in got) else 'no':>14s}  "
            f"{med / TARGET_S:8.2f}x"
        )


if __name__ == "__main__":
    main()
