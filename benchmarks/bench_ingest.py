"""Ingest speed and memory against the peers, measured in one run.

    python benchmarks/bench_ingest.py [--data ../shared/data] [--replicas 14] [--skip-thicket-large]

Sets:
  tutorial   the thicket-tutorial quartz .cali files (73 RAJAPerf runs with top-down counters)
  x<N>       the same files copied N times into a temporary directory (>= 1,000 files)
  csv        the RAJAPerf CSV runs of the H100 and MI300A nodes (476 runs)

For each .cali set it prints the wall time of: xamm (read + validate, 1 and 2 worker processes),
plain ``Thicket.from_caliperreader`` on the same files, and raw ``caliperreader`` parsing alone;
then the ratios, time per file (linearity) and peak memory (RSS of the process tree).
Targets: >= 20x faster than Thicket, within 3x of the raw parse, linear in files,
bounded memory; the CSV set in under 2 s including validation.
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

from _data import printed_to

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
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    args = ap.parse_args(argv)
    with printed_to(args.out, "bench_ingest.py"):
        return run(args)


def run(args) -> int:
    """Every set timed, printed."""
    quartz = args.data / "LLNL+thicket-tutorial" / "data" / "quartz"
    files = sorted(quartz.rglob("*.cali"))
    if not files:
        print(f"no .cali files under {quartz}", file=sys.stderr)
        return 1
    tmp = Path(tempfile.mkdtemp(prefix="xamm-bench-"))
    rows = []
    try:
        big = []
        for i in range(args.replicas):
            for f in files:
                dst = tmp / f"copy{i:02d}" / f.relative_to(quartz)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dst)
                big.append(dst)
        sets = [("tutorial", files, quartz), (f"x{args.replicas}", big, tmp)]
        print(f"cpus: {os.cpu_count()}   python {sys.version.split()[0]}")
        print(
            f"{'set':<10}{'files':>7}{'xamm 1w s':>11}{'xamm 2w s':>11}"
            f"{'raw parse s':>13}{'thicket s':>11}"
            f"{'thicket/xamm':>14}{'xamm/raw':>10}{'ms/file':>9}"
        )
        for name, fs, root in sets:
            t1, n1 = timed(lambda: xamm_read(root, 1), repeat=2)
            t2, n2 = timed(lambda: xamm_read(root, 2), repeat=2)
            assert n1 == n2
            tr, _ = timed(lambda: raw_parse(fs))
            if name != "tutorial" and args.skip_thicket_large:
                tt = float("nan")
            else:
                tt, _ = timed(lambda: thicket_read(fs))
            best = min(t1, t2)
            rows.append((name, len(fs), t1, t2, tr, tt))
            print(
                f"{name:<10}{len(fs):>7}{t1:>11.3f}{t2:>11.3f}{tr:>13.3f}{tt:>11.2f}"
                f"{tt / best:>13.1f}x"
                f"{best / tr:>9.2f}x{1000 * best / len(fs):>9.2f}"
            )
        (_, n_small, *_s), (_, n_big, *_b) = rows
        per_small = min(rows[0][2], rows[0][3]) / n_small
        per_big = min(rows[1][2], rows[1][3]) / n_big
        print(
            f"linearity: time per file at {n_big} files / at {n_small} files "
            f"= {per_big / per_small:.2f}"
        )
        code = (
            f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
            "from xamm_ingest import read_rajaperf\nread_rajaperf({!r}, workers=2)"
        )
        m_small = peak_rss_mb(code.format(str(quartz)))
        m_big = peak_rss_mb(code.format(str(tmp)))
        print(
            f"peak RSS, xamm 2 workers: {m_small:.0f} MB at {n_small} files, "
            f"{m_big:.0f} MB at {n_big} files"
        )
        csv = args.data / "llnl+RAJAPerf-Benchmark" / "2026-FCR" / "data"
        h100 = [csv / "RPBenchmark_H100_tier1", csv / "RPBenchmark_H100_tier2"]
        mi = [csv / "RPBenchmark_MI300A_tier1-SPX", csv / "RPBenchmark_MI300A_tier2-SPX"]
        if all(p.is_dir() for p in h100 + mi):
            for w in (1, 2):
                tc, n = timed(
                    lambda: xamm_read(h100, w, "h100-node") + xamm_read(mi, w, "mi300a-spx"),
                    repeat=2,
                )
                print(
                    f"csv set (476 RAJAPerf runs, {n} rows), {w} worker(s), read + "
                    f"validate: {tc:.3f} s"
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
