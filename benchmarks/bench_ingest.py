"""Ingest speed and memory against the peers, measured in one run.

    python benchmarks/bench_ingest.py [--data ../shared/data] [--replicas 14] [--skip-thicket-large]
        [--json docs/bench/ingest.json --out docs/bench/ingest.md]

Sets:
  tutorial   the thicket-tutorial quartz .cali files (73 RAJAPerf runs with top-down counters)
  x<N>       the same files copied N times into a temporary directory (>= 1,000 files)
  csv        the RAJAPerf CSV runs of the H100 and MI300A nodes (476 runs)

For each .cali set it prints the wall time of: xamm (read + validate, 1 and 2 worker processes),
plain ``Thicket.from_caliperreader`` on the same files, and raw ``caliperreader`` parsing alone;
then the ratios, time per file (linearity) and peak memory (RSS of the process tree).
Targets: >= 20x faster than Thicket, within 3x of the raw parse, linear in files,
bounded memory; the CSV set in under 2 s including validation. Every figure is in-process against
in-process (``bench_whole.py`` compares whole processes), beside the machine's floor
(``python -c pass`` as a process). ``--json`` writes the figures, from which ``report`` prints the
page again (``tests/test_bench_pages.py``).
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _data import floor_cpu_s, published

REPO = Path(__file__).resolve().parents[1]


def timed(fn, repeat: int = 1):
    best = float("inf")
    out = None
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def raw_parse(files):
    import caliperreader

    for f in files:
        r = caliperreader.CaliperReader()
        r.read(str(f))


def thicket_read(files):
    import thicket

    return thicket.Thicket.from_caliperreader([str(f) for f in files], disable_tqdm=True)


def xamm_read(paths, workers, machine=None):
    from xamm_ingest import read_rajaperf

    rep = read_rajaperf(paths, workers=workers, machine=machine)
    assert not rep.rejected, rep.rejected[:3]
    return rep.frame.height


def peak_rss_mb(code: str) -> float:
    """Peak RSS (MB) of a fresh interpreter running ``code``: max of its own high-water mark and its
    workers'.

    VmHWM is read from /proc because ru_maxrss of a process started by fork + exec from this
    (large) benchmark process would count this process's pages before the exec.
    """
    tail = (
        "\nimport resource, re\nhwm = int(re.search(r'VmHWM:\\s+(\\d+)', "
        "open('/proc/self/status').read()).group(1))"
        "\nprint(max(hwm, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code + tail], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument(
        "--replicas", type=int, default=14, help="copies of the tutorial set (14 x 73 = 1022 files)"
    )
    ap.add_argument(
        "--skip-thicket-large", action="store_true", help="do not run Thicket on the replicated set"
    )
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    args = ap.parse_args(argv)
    quartz = args.data / "LLNL+thicket-tutorial" / "data" / "quartz"
    if not any(quartz.rglob("*.cali")):
        print(f"no .cali files under {quartz}", file=sys.stderr)
        return 1
    figures = {
        **measure(args.data, args.replicas, args.skip_thicket_large),
        "floor_cpu_s": floor_cpu_s(),
    }
    published(figures, args.json, args.out, "bench_ingest.py", report)
    return 0


def _replicated(quartz: Path, tmp: Path, replicas: int) -> list[Path]:
    big = []
    for i in range(replicas):
        for f in sorted(quartz.rglob("*.cali")):
            dst = tmp / f"copy{i:02d}" / f.relative_to(quartz)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dst)
            big.append(dst)
    return big


def _csv_sets(data: Path) -> list[dict]:
    csv = data / "llnl+RAJAPerf-Benchmark" / "2026-FCR" / "data"
    h100 = [csv / "RPBenchmark_H100_tier1", csv / "RPBenchmark_H100_tier2"]
    mi = [csv / "RPBenchmark_MI300A_tier1-SPX", csv / "RPBenchmark_MI300A_tier2-SPX"]
    if not all(p.is_dir() for p in h100 + mi):
        return []
    out = []
    for w in (1, 2):
        tc, n = timed(
            lambda: xamm_read(h100, w, "h100-node") + xamm_read(mi, w, "mi300a-spx"), repeat=2
        )
        out.append({"workers": w, "rows": n, "seconds": tc})
    return out


def measure(data: Path, replicas: int, skip_thicket_large: bool) -> dict:
    """Every figure: per ``.cali`` set the seconds of each reader, the peak memory, the CSV set."""
    quartz = data / "LLNL+thicket-tutorial" / "data" / "quartz"
    files = sorted(quartz.rglob("*.cali"))
    tmp = Path(tempfile.mkdtemp(prefix="xamm-bench-"))
    try:
        big = _replicated(quartz, tmp, replicas)
        sets = []
        for name, fs, root in (("tutorial", files, quartz), (f"x{replicas}", big, tmp)):
            t1, n1 = timed(lambda: xamm_read(root, 1), repeat=2)
            t2, n2 = timed(lambda: xamm_read(root, 2), repeat=2)
            assert n1 == n2
            tr, _ = timed(lambda: raw_parse(fs))
            skip = name != "tutorial" and skip_thicket_large
            tt = None if skip else timed(lambda: thicket_read(fs))[0]
            sets.append({"set": name, "files": len(fs), "xamm_1w_s": t1, "xamm_2w_s": t2,
                         "raw_parse_s": tr, "thicket_s": tt})  # fmt: skip
        code = (
            f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
            "from xamm_ingest import read_rajaperf\nread_rajaperf({!r}, workers=2)"
        )
        memory = [peak_rss_mb(code.format(str(quartz))), peak_rss_mb(code.format(str(tmp)))]
        return {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "sets": sets,
            "peak_rss_mb": memory,
            "csv": _csv_sets(data),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def report(f: dict) -> None:
    """Print the table, linearity, memory, the CSV set and the machine's floor."""
    print(f"floor: `python -c pass` {f['floor_cpu_s']:.3f} cpu-s (a process, median of 7)")
    print(f"cpus: {f['cpus']}   python {f['python']}   (in-process figures, wall seconds)")
    print(
        f"{'set':<10}{'files':>7}{'xamm 1w s':>11}{'xamm 2w s':>11}"
        f"{'raw parse s':>13}{'thicket s':>11}"
        f"{'thicket/xamm':>14}{'xamm/raw':>10}{'ms/file':>9}"
    )
    for r in f["sets"]:
        best = min(r["xamm_1w_s"], r["xamm_2w_s"])
        tt = float("nan") if r["thicket_s"] is None else r["thicket_s"]
        print(
            f"{r['set']:<10}{r['files']:>7}{r['xamm_1w_s']:>11.3f}{r['xamm_2w_s']:>11.3f}"
            f"{r['raw_parse_s']:>13.3f}{tt:>11.2f}{tt / best:>13.1f}x"
            f"{best / r['raw_parse_s']:>9.2f}x{1000 * best / r['files']:>9.2f}"
        )
    small, big = f["sets"]
    per = [min(r["xamm_1w_s"], r["xamm_2w_s"]) / r["files"] for r in (small, big)]
    print(
        f"linearity: time per file at {big['files']} files / at {small['files']} files "
        f"= {per[1] / per[0]:.2f}"
    )
    m_small, m_big = f["peak_rss_mb"]
    print(
        f"peak RSS, xamm 2 workers: {m_small:.0f} MB at {small['files']} files, "
        f"{m_big:.0f} MB at {big['files']} files"
    )
    for c in f["csv"]:
        print(
            f"csv set (476 RAJAPerf runs, {c['rows']} rows), {c['workers']} worker(s), read + "
            f"validate: {c['seconds']:.3f} s"
        )


if __name__ == "__main__":
    sys.exit(main())
