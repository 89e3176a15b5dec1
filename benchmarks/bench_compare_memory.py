"""Peak memory of ``xamm compare`` and ``xamm accept`` as a machine's runs grow: the commands print
one row per kernel, so their memory should not grow with the runs behind those rows.

    python benchmarks/bench_compare_memory.py [--runs 10 100 1000] [--json F] [--out PAGE]

A store holds quartz's public RAJAPerf runs (the Thicket tests' ``rajaperf/quartz``) and N runs of
dane: dane's five public ``Base_Seq`` runs, copied until there are N, each copy made distinct by
trailing blank lines (which the reader skips), so the store keeps every one as a run of its own.
Synthetic in count only: every row is a real run's. For each N, each command runs in a fresh
interpreter (the ``xamm`` console script, as the installed command runs) and its peak
resident memory (VmHWM, MiB) is read from ``/proc``; beside them, the same figure of
``python -c pass`` and of ``import polars, numpy, pydantic`` (the floors). Target: at most
200 MiB at the most runs (1,000); the growth from the fewest runs is printed beside it. A second
table gives what each command holds resident at its end (VmRSS): what it keeps per run, apart
from the peak of its largest query.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_MIB = 200.0
DANE = "LLNL+thicket-newer/thicket/tests/data/rajaperf/dane/clang14.0.6_8388608/O3"
QUARTZ = "LLNL+thicket/thicket/tests/data/rajaperf/quartz"
_HWM = (
    "\nimport re\n_s = open('/proc/self/status').read()\n"
    "print('HWM', *(re.search(k + r':\\s+(\\d+)', _s).group(1) for k in ('VmHWM', 'VmRSS')))"
)
CASES = {
    "xamm compare dane quartz --size-ratio 16 --json": [
        "compare", "dane", "quartz", "--size-ratio", "16", "--json",
    ],
    "xamm accept dane --against quartz --no-record --json": [
        "accept", "dane", "--against", "quartz", "--criteria",
        str(REPO / "examples" / "criteria.toml"), "--no-record", "--json",
    ],
}  # fmt: skip
FLOORS = {
    "python -c pass": "pass",
    "import polars, numpy, pydantic": "import polars, numpy, pydantic",
}


def memory_mib(code: str, env: dict) -> tuple[float, float]:
    """Peak resident memory (MiB) of a fresh interpreter running ``code``, and what it holds
    resident at its end."""
    # -P: the working folder is not put first on the path, so PYTHONPATH picks the code measured
    r = subprocess.run(
        [sys.executable, "-P", "-c", code + _HWM], capture_output=True, text=True, env=env
    )
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("HWM ")][-1]
    return int(line.split()[1]) / 1024, int(line.split()[2]) / 1024


def store_with(n: int, data: Path, root: Path) -> Path:
    """A store with quartz's runs and ``n`` runs of dane (see the module docstring)."""
    from xamm_data.store.store import Store
    from xamm_ingest import ingest_rajaperf

    runs = sorted((data / DANE).glob("*/*.cali"))
    if not runs:
        raise FileNotFoundError(f"no dane runs under {data / DANE}")
    folder = root / f"dane-{n}"
    for i in range(n):
        src = runs[i % len(runs)]
        dst = folder / f"run{i:05d}" / src.name
        dst.parent.mkdir(parents=True)
        dst.write_bytes(src.read_bytes() + b"\n" * (i // len(runs)))
    store = Store(root / f"store-{n}")
    ingest_rajaperf(data / QUARTZ, store=store, machine="quartz", workers=1)
    ingest_rajaperf(folder, store=store, machine="dane", workers=2)
    shutil.rmtree(folder)
    return store.root


def measure(counts: list[int], data: Path) -> dict:
    """Peak MiB per case and number of runs, and the floors."""
    tmp = Path(tempfile.mkdtemp(prefix="xamm-bench-memory-"))
    env = {**os.environ, "XAMM_HOME": str(tmp / "home"), "HF_HUB_OFFLINE": "1"}
    out = {"floors": {k: memory_mib(v, env)[0] for k, v in FLOORS.items()}, "cases": {}}
    out["held"] = {}
    for n in counts:
        root = store_with(n, data, tmp)
        for label, argv in CASES.items():
            # the installed command: its console script, whose exit handlers print the peak
            code = (
                f"import atexit, sys\natexit.register(lambda: exec({_HWM!r}, {{}}))\n"
                f"sys.argv = {['xamm', *argv, '--store', str(root)]!r}\n"
                "from xamm_data.cli.commands import console\nconsole()"
            )
            peak, held = memory_mib(code, env)
            out["cases"].setdefault(label, {})[str(n)] = peak
            out["held"].setdefault(label, {})[str(n)] = held
    shutil.rmtree(tmp)
    return out


def report(rec: dict) -> bool:
    """Print the table of a record (:func:`measure`); True when every case meets the targets."""
    counts = sorted({int(n) for v in rec["cases"].values() for n in v})
    print("peak resident MiB by dane's runs; floors: " + ", ".join(
        f"{k} {v:.0f}" for k, v in rec["floors"].items()))  # fmt: skip
    print(f"{'command':<54}" + "".join(f"{n:>8}" for n in counts) + f"{'growth':>8}  target")
    ok = True
    for label, per in rec["cases"].items():
        figs = [per[str(n)] for n in counts]
        growth = figs[-1] - figs[0]
        met = figs[-1] <= TARGET_MIB
        ok &= met
        print(
            f"{label:<54}" + "".join(f"{f:>8.0f}" for f in figs) + f"{growth:>8.0f}  "
            + ("met" if met else "NOT met")
        )  # fmt: skip
    print(
        f"target: <= {TARGET_MIB:.0f} MiB at {counts[-1]} runs; growth: from {counts[0]} to "
        f"{counts[-1]} runs"
    )
    if rec.get("held"):
        print("\nresident MiB at the command's end (what it holds once its queries are done)")
        print(f"{'command':<54}" + "".join(f"{n:>8}" for n in counts) + f"{'growth':>8}")
        for label, per in rec["held"].items():
            figs = [per[str(n)] for n in counts]
            print(
                f"{label:<54}" + "".join(f"{f:>8.0f}" for f in figs) + f"{figs[-1] - figs[0]:>8.0f}"
            )
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--runs", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--out", type=Path, help="also write the page here (Markdown)")
    args = ap.parse_args(argv)
    rec = measure(args.runs, args.data)
    rec["cpus"], rec["python"] = os.cpu_count(), sys.version.split()[0]
    if args.json:
        args.json.write_text(json.dumps(rec, indent=1) + "\n")
    ok = report(rec)
    if args.out:
        from contextlib import redirect_stdout
        from io import StringIO

        buf = StringIO()
        with redirect_stdout(buf):
            report(rec)
        args.out.write_text(page(buf.getvalue(), rec))
    return 0 if ok else 1


def page(table: str, rec: dict) -> str:
    """The Markdown page around the printed table."""
    return (
        "# bench_compare_memory.py\n\n"
        f"`python benchmarks/bench_compare_memory.py` on {rec['cpus']} cores, Python "
        f"{rec['python']} (figures in `compare-memory.json`; the table is regenerated from them "
        "by the test suite):\n\n```text\n" + table.strip() + "\n```\n"
    )


if __name__ == "__main__":
    sys.exit(main())
