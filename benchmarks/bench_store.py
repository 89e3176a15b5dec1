"""The Delta Lake store against the 0.2 store it replaced, on the public RAJAPerf data.

    python benchmarks/bench_store.py [--data ../shared/data] [--replicas 14]
        [--json docs/bench/store.json --out docs/bench/store.md]

Prints, with its targets:
  * warm ``load_dataset`` of one machine (target <= 50 ms), and the cost of checking every file's
    SHA-256 against the same read without the check (target <= 20% of the warm load);
  * writing the ingest of >= 1,000 ``.cali`` files: the new store vs the 0.2 store (taken from git
    at ``OLD_STORE_REV``), parse included and store write alone (target: no slower than 1.2x);
  * commit latency of a one-file ingest into a store of >= 100k rows;
  * concurrent writers: 4 processes x 5 one-source commits into one table vs the same 20 commits in
    one process.

Beside them the machine's floor (``python -c pass`` as a process). ``--json`` writes the figures,
from which ``report`` prints the page again (``tests/test_bench_pages.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
from _data import floor_cpu_s, published

REPO = Path(__file__).resolve().parents[1]
# the last commit with the 0.2 store (one Parquet file per machine, lock + rename)
OLD_STORE_REV = "97c9913"


def old_store_class(tmp: Path):
    src = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{OLD_STORE_REV}:xamm_data/store.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = tmp / "old_store.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("old_store", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["old_store"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod.Store


def timed(fn, repeat=1):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def replicate(src: Path, dst: Path, n: int) -> list[Path]:
    files = sorted(src.rglob("*.cali"))
    for i in range(n):
        for f in files:
            out = dst / f"r{i}" / f.relative_to(src)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, out)
    return sorted(dst.rglob("*.cali"))


def bench_load(st, machine: str) -> dict:
    import hashlib

    from xamm_data import load_dataset

    load_dataset(machine, store=st)  # warm the caches
    t = statistics.median(timed(lambda: load_dataset(machine, store=st))[0] for _ in range(15))
    files = st.partition_files("benchmark_runs", machine)
    blobs = [f.read_bytes() for f in files]
    check = statistics.median(
        timed(lambda: [hashlib.sha256(b).hexdigest() for b in blobs])[0] for _ in range(15)
    )
    opening = statistics.median(
        timed(lambda: st.partition_files("benchmark_runs", machine))[0] for _ in range(15)
    )
    mb = sum(map(len, blobs)) / 1e6
    return {"machine": machine, "load_s": t, "open_log_s": opening, "mb": mb, "check_s": check}


def bench_ingest(data: Path, tmp: Path, replicas: int) -> dict:
    from xamm_data.store.store import Store
    from xamm_ingest import read_rajaperf

    files = replicate(data / "LLNL+thicket-tutorial" / "data" / "quartz", tmp / "cali", replicas)
    parse, rep = timed(lambda: read_rajaperf(tmp / "cali", workers=2, machine="quartz"))
    frame = rep.frame
    Old = old_store_class(tmp)
    new_w, _ = timed(
        lambda: Store(tmp / f"new{time.perf_counter_ns()}").write(frame, "benchmark_runs"), 3
    )
    old_w, _ = timed(
        lambda: Old(tmp / f"old{time.perf_counter_ns()}").write(frame, "benchmark_runs"), 3
    )
    return {"files": len(files), "rows": frame.height, "parse_s": parse, "new_s": new_w,
            "old_s": old_w}  # fmt: skip


def bench_commit(st, tmp: Path) -> dict:
    from xamm_data.store.store import Store

    big = Store(tmp / "big")
    runs = st.scan("benchmark_runs").collect()
    copies = []
    k = 0
    while sum(c.height for c in copies) < 100_000:
        copies.append(runs.with_columns((pl.col("machine") + f"-copy{k}").alias("machine")))
        k += 1
    big.write(pl.concat(copies), "benchmark_runs")
    one = runs.filter(pl.col("source_sha256") == runs.get_column("source_sha256")[0])
    lat = []
    for i in range(5):
        changed = one.with_columns(pl.col("time_per_rep_s") * (1 + i / 100))
        lat.append(timed(lambda c=changed: big.write(c, "benchmark_runs"))[0])
    total = big.scan("benchmark_runs").select(pl.len()).collect().item()
    return {"rows": one.height, "total_rows": total, "median_s": statistics.median(lat)}


WRITER = """
import sys, polars as pl
from xamm_data.store.store import Store
st, df = Store(sys.argv[1]), pl.read_parquet(sys.argv[2])
for (k,), part in df.group_by(["batch"], maintain_order=True):
    st.write(part.drop("batch"), "benchmark_runs")
"""


def bench_concurrent(st, tmp: Path) -> dict:
    runs = st.scan("benchmark_runs").collect()
    one = runs.filter(pl.col("source_sha256") == runs.get_column("source_sha256")[0])
    batches = []
    for w in range(4):
        for b in range(5):
            tag = f"{w}{b}"
            batches.append(
                one.with_columns(
                    pl.lit(f"w{w}").alias("batch"),
                    (pl.lit(f"c{tag}/") + pl.col("source_path")).alias("source_path"),
                    (pl.col("source_sha256").str.slice(0, 60) + pl.lit(f"{w:02d}{b:02d}")).alias(
                        "source_sha256"
                    ),
                    pl.lit("node-a" if w % 2 else "node-b").alias("machine"),
                )
            )
    allb = pl.concat(batches)
    paths = []
    for w in range(4):
        p = tmp / f"w{w}.parquet"
        allb.filter(pl.col("batch") == f"w{w}").with_columns(
            pl.col("batch").str.slice(1).cast(pl.Int64) * 0 + pl.int_range(pl.len()) // one.height
        ).write_parquet(p)
        paths.append(p)
    t = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp / "conc"), str(p)]) for p in paths
    ]
    assert all(p.wait() == 0 for p in procs)
    conc = time.perf_counter() - t
    t = time.perf_counter()
    for p in paths:
        subprocess.run([sys.executable, "-c", WRITER, str(tmp / "seq"), str(p)], check=True)
    seq = time.perf_counter() - t
    from xamm_data.store.store import Store

    n = Store(tmp / "conc").scan("benchmark_runs").select(pl.len()).collect().item()
    assert n == allb.height, (n, allb.height)
    return {"seconds": conc, "rows": n, "sequential_s": seq}


def report(f: dict) -> None:
    """Print every figure with its target, and the machine's floor."""
    print(f"floor: `python -c pass` {f['floor_cpu_s']:.3f} cpu-s (a process, median of 7)")
    ld, c, w, i = f["load"], f["commit"], f["concurrent"], f["ingest"]
    print(
        f"warm load_dataset({ld['machine']!r}): {ld['load_s'] * 1000:.1f} ms (target <= 50 ms), "
        f"of which opening the Delta log {ld['open_log_s'] * 1000:.1f} ms; checking the SHA-256 "
        f"of its {ld['mb']:.1f} MB costs {ld['check_s'] * 1000:.2f} ms, "
        f"{100 * ld['check_s'] / ld['load_s']:.0f}% of the load (target <= 20%)"
    )
    print(
        f"commit latency, one-source ingest ({c['rows']} rows) into a store of "
        f"{c['total_rows']:,} rows: median {c['median_s'] * 1000:.0f} ms over 5 commits"
    )
    print(
        f"concurrent writers: 4 processes x 5 commits in {w['seconds']:.1f} s "
        f"({20 / w['seconds']:.1f} commits/s, all {w['rows']} rows kept) vs the same 4 processes "
        f"one after another {w['sequential_s']:.1f} s ({20 / w['sequential_s']:.1f} commits/s)"
    )
    print(
        f"ingest of {i['files']} .cali files ({i['rows']} rows): parse {i['parse_s']:.2f} s; "
        f"store write new {i['new_s']:.2f} s vs 0.2 store {i['old_s']:.2f} s "
        f"({i['new_s'] / i['old_s']:.2f}x); parse + write "
        f"{(i['parse_s'] + i['new_s']) / (i['parse_s'] + i['old_s']):.2f}x the 0.2 store "
        "(target <= 1.2x)"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--replicas", type=int, default=14)
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    args = ap.parse_args(argv)
    figures = {**measure(args.data, args.replicas), "floor_cpu_s": floor_cpu_s()}
    published(figures, args.json, args.out, "bench_store.py", report)
    return 0


def measure(data: Path, replicas: int) -> dict:
    """Every figure, in a temporary store and home."""
    tmp = Path(tempfile.mkdtemp(prefix="xamm-bench-store-"))
    os.environ["XAMM_HOME"] = str(tmp / "home")
    from xamm_data.store.store import Store
    from xamm_ingest import ingest_rajaperf

    st = Store(tmp / "store")
    b = data / "llnl+RAJAPerf-Benchmark" / "2026-FCR" / "data"
    ingest_rajaperf(
        data / "LLNL+thicket" / "thicket" / "tests" / "data" / "rajaperf", store=st, workers=2
    )
    ingest_rajaperf(
        [b / "RPBenchmark_H100_tier1", b / "RPBenchmark_H100_tier2"],
        machine="h100-node",
        store=st,
        workers=2,
    )
    try:
        return {
            "load": bench_load(st, "h100-node"),
            "commit": bench_commit(st, tmp),
            "concurrent": bench_concurrent(st, tmp),
            "ingest": bench_ingest(data, tmp, replicas),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
