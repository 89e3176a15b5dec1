"""Whole processes against whole processes: an ``xamm-ingest`` command against Thicket reading the
same files in a process of its own, in CPU and wall.

    python benchmarks/bench_whole.py [--data ../shared/data] [--runs 3] [--repeats 3]
        [--sorting-files 1000] [--settle 2]
        [--json docs/bench/whole.json --out docs/bench/whole.md]

Two sets, each read by both in fresh processes, the runs interleaved (the floor, then each command
of each set in turn: a machine whose speed drifts weighs on all alike), every process started
after ``--settle`` seconds idle, as a user's command starts: a process started right after another
has kept the CPU busy for seconds (Thicket's read) runs slower, the CPU's clock and a virtual
machine's share of its host following their recent load, and in turn order that would weigh on
the command after Thicket's alone:

* **73 RAJAPerf** ``.cali`` files (the thicket-tutorial quartz runs):
  ``xamm-ingest rajaperf DIR --store NEW`` against
  ``python -c "import thicket; thicket.Thicket.from_caliperreader(FILES)"``;
* **the first ``--sorting-files`` parallel-sorting profiles** (sorted by path):
  ``xamm-ingest caliper DIR --app sort --machine grace --store NEW`` against the same Thicket
  read.

Each xamm run writes a new store with an ``XAMM_HOME`` of its own (the whole command of a first
ingest: discovery, parsing, checks, the commit, the file hashes recorded). A figure is the median
over ``--runs`` rounds (xamm's command ``--repeats`` times in each: seconds where Thicket's takes a
minute, and its median steadier for it) of the CPU seconds (user + system of the process and the
workers it waited for, and the system's share of them) and the wall seconds; the peak resident
memory is the largest process's; the page gives the range of xamm's runs and, round by round,
Thicket's CPU over the median of xamm's runs in that round. Beside each command, its major page
faults and the file pages the machine read back while it ran (Linux's ``workingset_refault_file``):
a virtual machine that pages out memory left idle for a while (the kernel's DAMON ``pageout``
scheme) makes a short command started after a minute's idle read its libraries back, which costs it
system time the floor below does not show. Beside them the machine's floor, ``python -c pass`` as a
process, and per set the floor of xamm's command: a process that only imports every module the
command imported (listed by a run under ``-X importtime``), with the cyclic collector paused as
``xamm-ingest`` loads its modules, and then ends as the command's console script does, without the
interpreter's teardown, which no reading, checking or writing can go below. xamm's sources are
compiled to bytecode first, as a wheel's install leaves them and Thicket's install left it.
Targets: the 73-file command at least 20x Thicket's, the 1,000-profile command at least 25x, in
CPU; the 73-file command's largest process under 150 MiB. ``--json`` writes the figures, from
which ``report`` prints the page again (``tests/test_bench_pages.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _data import compiled, published

REPO = Path(__file__).resolve().parents[1]
RAJAPERF = Path("LLNL+thicket-tutorial") / "data" / "quartz"
SORTING = Path("LLNL+thicket-tutorial") / "data" / "parallel-sorting"
TARGETS = {"rajaperf": 20.0, "sorting": 25.0}  # Thicket's CPU / xamm's, at least
RSS_TARGET_MIB = 150.0  # the 73-file command's largest process
THICKET = (
    "import sys, warnings\nwarnings.simplefilter('ignore')\nimport thicket\n"
    "tk = thicket.Thicket.from_caliperreader(sys.argv[1:], disable_tqdm=True)\n"
    "assert len(tk.profile) == len(sys.argv) - 1\n"
)


def refaulted_pages() -> int | None:
    """File pages the kernel has read back since boot after paging them out (Linux's
    ``workingset_refault_file``; None where ``/proc/vmstat`` does not say)."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("workingset_refault_file "):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def process(argv: list[str], cwd: Path, env: dict | None = None, settle: float = 0.0) -> dict:
    """CPU seconds (and the system's share), wall seconds, peak RSS (MiB, its largest process),
    major page faults of one command and the workers it waited for, and the file pages the
    machine read back while it ran, started after ``settle`` seconds idle."""
    time.sleep(settle)
    before = refaulted_pages()
    t = time.perf_counter()
    child = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert child.stderr is not None
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    after = refaulted_pages()
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    child.stderr.close()
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} ...: exit {child.returncode}\n{err[-2000:]!r}")
    return {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "sys_s": usage.ru_stime,
        "wall_s": wall,
        "rss_mib": usage.ru_maxrss / 1024,
        "major_faults": usage.ru_majflt,
        "refaults": None if before is None or after is None else after - before,
    }


IMPORTS = (
    "import gc, importlib, sys\n"
    "gc.disable()\n"  # as xamm-ingest loads its modules: the cyclic collector paused
    "for name in open(sys.argv[1]).read().split():\n"
    "    try:\n"
    "        importlib.import_module(name)\n"
    "    except ImportError:\n"  # a module the run only tried (another platform's)
    "        pass\n"
    "import os\n"
    "os._exit(0)\n"  # ended as xamm's console script ends: without the interpreter's teardown
)


def imported(argv: list[str], cwd: Path, into: Path, env: dict) -> Path:
    """The modules one run of ``argv`` (a Python script and its arguments) imported, in the order
    ``-X importtime`` lists them, one a line in the file ``into``."""
    r = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])} ...: exit {r.returncode}\n{r.stderr[-2000:]}")
    names = [
        line.rsplit("|", 1)[1].strip()
        for line in r.stderr.splitlines()
        if line.startswith("import time:") and not line.rstrip().endswith("imported package")
    ]
    into.write_text("\n".join(names) + "\n")
    return into


def commands(data: Path, tmp: Path, sorting_files: int) -> dict[str, dict[str, list[str]]]:
    """Per set: the xamm command (its store under ``tmp``, made anew each run) and Thicket's."""
    ingest = [str(Path(sys.executable).with_name("xamm-ingest"))]
    rajaperf = sorted((data / RAJAPERF).rglob("*.cali"))
    sorting = tmp / "sorting"
    sorting.mkdir()
    for i, f in enumerate(sorted((data / SORTING).rglob("*.cali"))[:sorting_files]):
        (sorting / f"{i:05d}-{f.name}").symlink_to(f)  # names kept apart: folders repeat them
    store = str(tmp / "store")
    return {
        "rajaperf": {
            "files": [str(len(rajaperf))],
            "xamm": [*ingest, "rajaperf", str(data / RAJAPERF), "--store", store],
            "thicket": [sys.executable, "-c", THICKET, *map(str, rajaperf)],
        },
        "sorting": {
            "files": [str(sorting_files)],
            "xamm": [
                *ingest,
                "caliper",
                str(sorting),
                "--app",
                "sort",
                "--machine",
                "grace",
                "--store",
                store,
            ],  # fmt: skip
            "thicket": [sys.executable, "-c", THICKET, *map(str, sorted(sorting.iterdir()))],
        },
    }


def measure(
    data: Path, runs: int, sorting_files: int, repeats: int = 1, settle: float = 0.0
) -> dict:
    """Every figure of the page: the floor and, per set, each command's medians (xamm's command
    ``repeats`` times a round: it costs seconds where Thicket's costs a minute, and more runs
    steady its median); each process started after ``settle`` seconds idle."""
    tmp = Path(tempfile.mkdtemp(prefix="xamm-bench-whole-"))
    try:
        cmds = commands(data, tmp, sorting_files)
        # each xamm command a user's first: a new store and an XAMM_HOME of its own, which no
        # earlier run has written to (the file hashes it records)
        env = {**os.environ, "XAMM_HOME": str(tmp / "home")}
        for name, c in cmds.items():
            for made in ("store", "home"):
                shutil.rmtree(tmp / made, ignore_errors=True)
            names = imported(c["xamm"], tmp, tmp / f"{name}-modules.txt", env)
            c["imports"] = [sys.executable, "-c", IMPORTS, str(names)]
        taken: dict[str, list[dict]] = {"floor": []}
        for _ in range(runs):
            taken["floor"].append(process([sys.executable, "-c", "pass"], tmp, None, settle))
            for name, c in cmds.items():
                for who in ("xamm",) * repeats + ("thicket", "imports"):
                    for made in ("store", "home"):
                        shutil.rmtree(tmp / made, ignore_errors=True)
                    got = process(c[who], tmp, env, settle)
                    taken.setdefault(f"{name}/{who}", []).append(got)
        med = {k: _medians(rs) for k, rs in taken.items()}
        files = {name: int(c["files"][0]) for name, c in cmds.items()}
        return {
            "runs": runs,
            "repeats": repeats,
            "settle_s": settle,
            "files": files,
            "figures": med,
            # each command's runs in the order run: round r holds xamm's runs r * repeats to
            # (r + 1) * repeats - 1 and Thicket's run r
            "cpu_s": {k: [r["cpu_s"] for r in rs] for k, rs in taken.items()},
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _medians(runs: list[dict]) -> dict:
    """The median of each figure over ``runs`` (a figure a run could not take left out)."""
    return {
        m: statistics.median(xs)
        for m in runs[0]
        if (xs := [r[m] for r in runs if r.get(m) is not None])
    }


def round_ratios(f: dict, name: str) -> list[float]:
    """Per round of set ``name``: Thicket's CPU seconds / the median of xamm's runs in that
    round (empty for figures recorded without the runs)."""
    runs = f.get("cpu_s", {})
    xamm, thicket = runs.get(f"{name}/xamm"), runs.get(f"{name}/thicket")
    if not xamm or not thicket:
        return []
    k = f.get("repeats", 1)
    return [t / statistics.median(xamm[i * k : (i + 1) * k]) for i, t in enumerate(thicket)]


def _table(f: dict) -> None:
    """One line per set and command: the medians."""
    print(
        f"{'set':9s} {'files':>5s}  {'command':8s} {'cpu s':>7s} {'sys s':>6s} {'wall s':>7s} "
        f"{'peak MiB':>9s} {'maj flt':>8s} {'refaults':>9s}"
    )
    for name, n in f["files"].items():
        for who in ("thicket", "xamm"):
            x = f["figures"][f"{name}/{who}"]
            sys_s, majflt, refaults = (x.get(m) for m in ("sys_s", "major_faults", "refaults"))
            print(
                f"{name:9s} {n:5d}  {who:8s} {x['cpu_s']:7.2f} "
                f"{'-' if sys_s is None else f'{sys_s:.2f}':>6s} {x['wall_s']:7.2f} "
                f"{x['rss_mib']:9.0f} {'-' if majflt is None else f'{majflt:.0f}':>8s} "
                f"{'-' if refaults is None else f'{refaults:.0f}':>9s}"
            )


def report(f: dict) -> None:
    """Print the table, the ratios against their targets and the machine's floor."""
    floor = f["figures"]["floor"]
    print(f"floor: `python -c pass` {floor['cpu_s']:.3f} cpu-s, {floor['wall_s']:.3f} s wall")
    repeats = f.get("repeats", 1)
    settle = f"started after {f['settle_s']:g} s idle" if f.get("settle_s") else "run in turn"
    print(
        f"medians of {f['runs']} interleaved rounds (xamm's command {repeats}x a round), each "
        f"command a fresh process, {settle}"
    )
    _table(f)
    for name, target in TARGETS.items():
        t, x = f["figures"][f"{name}/thicket"], f["figures"][f"{name}/xamm"]
        cpu, wall = t["cpu_s"] / x["cpu_s"], t["wall_s"] / x["wall_s"]
        verdict = "met" if cpu >= target else "NOT met"
        print(f"{name}: Thicket / xamm {cpu:.1f}x CPU, {wall:.1f}x wall (target >= {target:g}x "
              f"CPU: {verdict})")  # fmt: skip
        if ratios := round_ratios(f, name):
            print(
                f"{name}: round by round, Thicket / xamm's median {min(ratios):.1f}-"
                f"{max(ratios):.1f}x CPU ({len(ratios)} rounds)"
            )
    for name in f["files"]:
        if xs := f.get("cpu_s", {}).get(f"{name}/xamm"):
            print(f"{name}: xamm's {len(xs)} runs {min(xs):.2f}-{max(xs):.2f} cpu-s")
    for name in f["files"]:
        if imp := f["figures"].get(f"{name}/imports"):
            t, x = f["figures"][f"{name}/thicket"], f["figures"][f"{name}/xamm"]
            print(
                f"{name}: the modules xamm's command imports, imported alone: "
                f"{imp['cpu_s']:.2f} cpu-s, {imp['cpu_s'] / x['cpu_s']:.0%} of the command "
                f"(Thicket / that floor: {t['cpu_s'] / imp['cpu_s']:.1f}x)"
            )
    rss = f["figures"]["rajaperf/xamm"]["rss_mib"]
    verdict = "met" if rss < RSS_TARGET_MIB else "NOT met"
    print(
        f"rajaperf: xamm's largest process {rss:.1f} MiB (target < {RSS_TARGET_MIB:g}: {verdict})"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3, help="xamm's command per round")
    ap.add_argument("--sorting-files", type=int, default=1000)
    ap.add_argument(
        "--settle", type=float, default=2.0, help="seconds idle before each process starts"
    )
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    args = ap.parse_args()
    if not (args.data / RAJAPERF).is_dir() or not (args.data / SORTING).is_dir():
        print(f"{args.data}: the thicket-tutorial data is not there", file=sys.stderr)
        return 1
    compiled()
    figures = measure(args.data, args.runs, args.sorting_files, args.repeats, args.settle)
    published(figures, args.json, args.out, "bench_whole.py", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
