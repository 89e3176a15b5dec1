"""A centre's archive: the 10,563 parallel-sorting Caliper profiles, and 100k of their replicas.

    python benchmarks/bench_archive.py [--data ../shared/data] [--replicas 10]
        [--json docs/bench/archive.json --out docs/bench/archive.md]
    python benchmarks/bench_archive.py --resume-only 10 --json docs/bench/archive-resume.json \
        --out docs/bench/archive-resume.md
    python benchmarks/bench_archive.py --memory-only 10 --json docs/bench/archive-memory.json \
        --out docs/bench/archive-memory.md
    python benchmarks/bench_archive.py --memory-only 100 --json docs/bench/archive-1m.json \
        --out docs/bench/archive-1m.md

For each corpus it runs ``xamm-ingest caliper DIR --app sort --machine grace`` into a new store
(2 worker processes, batched commits) and prints files/s and the CPU the process tree used
(2.0 = both cores busy the whole run), from a run nothing observes; then, from a second run
sampled every 20 ms, the peak resident memory of the ingest process (main MB) and the peak
proportional memory of it and its workers together (tree MB: pages the forked workers share with
it counted once). Beside it: the raw ``caliperreader`` parse of a sample of the files (one
core), and the machine's floor (``python -c pass`` as a process). xamm against Thicket, whole
process against whole process, is ``bench_whole.py``'s page.

A replica is the original file with its ``launchdate`` moved on by the replica's number of
seconds: a different file (its own SHA-256, so not skipped as a copy) of the same size and
content. Aims: at least 500 files/s on 2 cores; the tree's peak memory under 250 MB at 10^5
files, and flat whatever the corpus.

``--resume-only N`` ingests N replicas (10: 105,630 files), then runs the same command again on
the fully stored archive, :data:`RERUNS` times (the median run against the first ingest, aim: at
most 5%), then times commits of 1,000
sources into tables of 10^4, 10^5 and 10^6 rows (aim: flat after a run's first commit).

``--memory-only N`` runs only the sampled ingest of N replicas (100: 1,056,300 files): whether
the peak memory stays flat at a million files. Its files/s come from the sampled run, so they
are a little below an unobserved run's.

Last, a store of ``--scale-rows`` app_profiles rows (10 machines, 5 applications) is built and
four reads are timed, each in a fresh process with its peak memory (the faster of two): one
application of one machine and one machine (``load_dataset(..., lazy=True)``: partition and
predicate pushdown), one application of every machine (``Store.scan`` with a filter), and the whole
table.

``--json`` writes the figures, from which ``report`` prints the page again
(``tests/test_bench_pages.py``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _data import floor_cpu_s, published

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path("LLNL+thicket-tutorial") / "data" / "parallel-sorting"
_LAUNCH = re.compile(rb"__rec=node,id=(\d+),attr=8,data=launchdate,")


def replica(data: bytes, k: int) -> bytes:
    """``data`` (a .cali file) with its launchdate moved on by ``k`` seconds."""
    m = _LAUNCH.search(data)
    if m is None:
        return data + f"\n# replica {k}\n".encode()  # still a different file
    attr = m.group(1)
    pat = re.compile(rb"(attr=" + attr + rb",data=)(\d+)")
    return pat.sub(lambda v: v.group(1) + str(int(v.group(2)) + k).encode(), data, count=1)


def make_replicas(src: Path, dst: Path, n: int) -> int:
    """``n`` replicas of every file under ``src`` in ``dst/r<k>/``; the number of files."""
    count = 0
    files = sorted(src.rglob("*.cali"))
    for k in range(n):
        for f in files:
            out = dst / f"r{k:02d}" / f.relative_to(src)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(replica(f.read_bytes(), k) if k else f.read_bytes())
            count += 1
    return count


def _memory(pid: int) -> tuple[int, int]:
    """(resident bytes of ``pid``, proportional bytes of it and its descendants): PSS shares a
    page among the processes mapping it, so workers forked from the ingest process are not
    counted twice for the pages they share with it."""
    import psutil

    try:
        p = psutil.Process(pid)
        procs = [p, *p.children(recursive=True)]
        main = p.memory_info().rss
    except psutil.NoSuchProcess:
        return 0, 0
    total = 0
    for q in procs:
        try:
            total += q.memory_full_info().pss
        except psutil.NoSuchProcess:
            pass
    return main, total


def run_timed(cmd: list[str], env: dict, timeout: float | None = None) -> dict:
    """Run ``cmd`` unobserved: wall seconds, CPU seconds of it and its descendants, its stdout; or
    ``timed_out``."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timed_out": True, "seconds": time.perf_counter() - t0}
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": wall, "cpu": cpu, "stdout": r.stdout}


def run_sampled(cmd: list[str], env: dict) -> dict:
    """Run ``cmd`` sampling its memory every 20 ms (which costs CPU: timed apart, by
    :func:`run_timed`): peak RSS of the process and peak PSS of its tree (MB), its stdout. Its
    output goes to files: a pipe nobody reads while it runs would stop it once full."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, text=True)
        peak, peak_tree = 0, 0
        while proc.poll() is None:
            main, tree = _memory(proc.pid)
            peak, peak_tree = max(peak, main), max(peak_tree, tree)
            time.sleep(0.02)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode == -9:  # the kernel's out-of-memory killer
        return {"killed": True, "peak_mb": peak / 2**20}
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {stderr[-2000:]}")
    return {"peak_mb": peak / 2**20, "tree_mb": peak_tree / 2**20, "stdout": stdout}


def xamm_ingest(corpus: Path, store: Path, workers: int, memory: bool = True) -> dict:
    """``xamm-ingest caliper`` on ``corpus`` into a new store: timed, then (``memory``) run again
    into another new store with its memory sampled."""

    def cmd(st: Path) -> list[str]:
        return [
            sys.executable, "-m", "xamm_ingest.cli", "caliper", str(corpus), "--app", "sort",
            "--machine", "grace", "--store", str(st), "--workers", str(workers),
            "--no-progress", "--json",
        ]  # fmt: skip

    env = {**os.environ, "XAMM_HOME": str(store.parent / "home")}
    r = run_timed(cmd(store), env)
    r["summary"] = json.loads(r.pop("stdout"))
    if memory:
        m = run_sampled(cmd(store.parent / "sampled-store"), env)
        r.update(peak_mb=m["peak_mb"], tree_mb=m["tree_mb"])
    return r


def raw_parse_rate(files: list[Path]) -> float:
    import caliperreader

    t = time.perf_counter()
    for f in files:
        caliperreader.CaliperReader().read(str(f))
    return len(files) / (time.perf_counter() - t)


SCALE_APPS = ("sort", "lulesh", "amg", "kripke", "laghos")
SCALE_CODE = {
    "one application of one machine": (
        "load_dataset('node-03', 'app_profiles', lazy=True, store=st)"
        ".filter(pl.col('app') == 'amg').collect()"
    ),
    "one machine": "load_dataset('node-03', 'app_profiles', lazy=True, store=st).collect()",
    "one application, every machine": (
        "st.scan('app_profiles').filter(pl.col('app') == 'amg').collect()"
    ),
    "the whole table": "st.scan('app_profiles').collect()",
}


def scale_rows(machine: str, n: int, seed: int):
    """``n`` ``app_profiles`` rows of ``machine``, five applications, distinct sources."""
    import polars as pl

    from xamm_data.tables.schema import APP_PROFILES

    i = pl.int_range(0, n, eager=True)
    empty = pl.Series([[]] * n, dtype=APP_PROFILES.polars_schema["extra_counters"])
    return pl.DataFrame(
        {
            "app": pl.Series(SCALE_APPS).gather(i % len(SCALE_APPS)), "app_params": "{}",
            "machine": machine, "device": "cpu", "trial": 0, "input_size": i // 5,
            "ranks": 2 ** (i % 7), "runtime_s": (i % 997 + 1).cast(pl.Float64) / 10,
            "runtime_aggregation": "max over ranks", "counters_present": pl.Series([[]] * n),
            "extra_counters": empty, "source_path": i.cast(pl.String) + ".cali",
            "source_sha256": (i + seed * n).cast(pl.String).str.zfill(64),
            "source_format": "caliper-cali", "reader": "bench", "xamm_version": "0",
        }
    )  # fmt: skip


def scale_store(root: Path, rows: int, machines: int = 10) -> None:
    """A store of ``rows`` app_profiles rows over ``machines`` machines, one commit a machine."""
    from xamm_data.store.store import Store

    st = Store(root)
    for m in range(machines):
        st.append(scale_rows(f"node-{m:02d}", rows // machines, m), "app_profiles")


def measure_reads(root: Path, repeat: int = 2) -> list[dict]:
    """Time and peak memory of each read in ``SCALE_CODE``, each in a fresh process: the faster
    of ``repeat`` runs (a one-off stall of the disk is not the read's)."""
    got = []
    os.sync()  # the store just built is on disk, not being written back under the first read
    for what, expr in SCALE_CODE.items():
        code = (
            "import time, polars as pl\nfrom xamm_data import load_dataset\n"
            "from xamm_data.store.store import Store\n"
            f"st = Store({str(root)!r})\nt = time.perf_counter()\ndf = {expr}\n"
            "print(time.perf_counter() - t, df.height)"
        )
        runs = [run_sampled([sys.executable, "-c", code], dict(os.environ)) for _ in range(repeat)]
        if any(r.get("killed") for r in runs):
            got.append({"read": what, "killed_at_mb": max(r["peak_mb"] for r in runs)})
            continue
        best = min(runs, key=lambda r: float(r["stdout"].split()[0]))
        secs, rows = best["stdout"].split()
        got.append({"read": what, "rows": int(rows), "seconds": float(secs),
                    "peak_mb": best["peak_mb"]})  # fmt: skip
    return got


def measure_rates(corpus: Path, store: Path, n: int = 4096) -> tuple[float, float]:
    """(a Dask worker's rate on one core: hash, parse and check; the client's rate with Dask
    workers: walk and commit), files/s, on the first ``n`` files of ``corpus``."""
    import polars as pl

    from xamm_data.store.store import Store
    from xamm_ingest.format import get_format
    from xamm_ingest.pipeline import DASK_CHUNK_FILES, DEFAULT_BATCH_FILES
    from xamm_ingest.pipeline.executors import read_checked_chunk
    from xamm_ingest.readers.profile_common import SampleSpec
    from xamm_ingest.records import Bounds
    from xamm_ingest.sources import Plan

    opts = {"spec": SampleSpec(app="sort", machine="grace"), "bounds": Bounds()}
    t = time.perf_counter()
    walk_plan = Plan(root=corpus)
    tasks = list(itertools.islice(get_format("caliper").tasks([corpus], opts, walk_plan), n))
    walk = time.perf_counter() - t
    t = time.perf_counter()
    frames = [
        read_checked_chunk(tasks[i : i + DASK_CHUNK_FILES], "caliper", opts)[1]
        for i in range(0, len(tasks), DASK_CHUNK_FILES)
    ]
    worker = len(tasks) / (time.perf_counter() - t)
    rows = pl.concat(frames)
    st = Store(store)
    t = time.perf_counter()
    for i in range(0, rows.height, DEFAULT_BATCH_FILES):
        st.append(rows.slice(i, DEFAULT_BATCH_FILES), "app_profiles")
    client = len(tasks) / (walk + time.perf_counter() - t)
    return worker, client


def print_scaling(worker: float, client: float, per_node: int = 36) -> None:
    """The estimate for 1 to 16 nodes of ``per_node`` Dask worker processes."""
    print(
        f"a Dask worker process hashes, parses and checks {worker:.0f} files/s; the client walks "
        f"and commits {client:.0f} files/s (batches of the default size), so it bounds a run past "
        f"{client / worker:.0f} worker processes"
    )
    print(f"{'nodes':>6}{'workers':>9}{'estimate files/s':>18}{'10M files in':>14}   bound")
    for nodes in (1, 2, 4, 8, 16):
        w = nodes * per_node
        rate = min(w * worker, client)
        bound = "client" if w * worker > client else "workers"
        print(f"{nodes:>6}{w:>9}{rate:>18,.0f}{1e7 / rate / 3600:>12.1f} h   {bound}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--replicas", type=int, default=10, help="copies of the corpus (10: 105,630)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--scale-rows",
        type=int,
        default=10_000_000,
        help="rows of the store the reads are timed on",
    )
    ap.add_argument(
        "--memory-only",
        type=int,
        metavar="N",
        help="only the sampled ingest of N replicas (peak memory at scale)",
    )
    ap.add_argument(
        "--resume-only",
        type=int,
        metavar="N",
        help="only the resume figures: ingest N replicas, rerun on the stored archive, and the "
        "cost of one commit into tables of 10^4 to 10^6 rows",
    )
    ap.add_argument("--json", type=Path, help="write the figures here (the page is made from them)")
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    args = ap.parse_args(argv)
    corpus = args.data / CORPUS
    if not corpus.is_dir():
        print(f"no corpus at {corpus}", file=sys.stderr)
        return 1
    figures = {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "workers": args.workers,
        "floor_cpu_s": floor_cpu_s(),
    }
    if args.resume_only:
        figures.update(mode="resume", **measure_resume(args, corpus))
    elif args.memory_only:
        figures.update(mode="memory", **measure_memory(args, corpus))
    else:
        figures.update(mode="archive", **measure_archive(args, corpus))
    published(figures, args.json, args.out, "bench_archive.py", report)
    return 0


def _run_figures(name: str, n: int, r: dict) -> dict:
    """One ingest's line: its corpus, files, rows, commits, seconds, CPU and memory."""
    s = r["summary"]
    return {
        "corpus": name, "files": n, "rows": s["rows_written"], "commits": len(s["commits"]),
        "wall_s": r["seconds"], "cpu_s": r.get("cpu"), "peak_mb": r.get("peak_mb"),
        "tree_mb": r.get("tree_mb"), "already_stored": s.get("already_stored", 0),
    }  # fmt: skip


def measure_archive(args, corpus: Path) -> dict:
    """The 10.5k corpus and ``--replicas`` copies of it ingested (timed, then sampled); the rates
    a Dask run is bounded by; reads of a store of ``--scale-rows`` rows."""
    files = sorted(corpus.rglob("*.cali"))
    tmp = Path(tempfile.mkdtemp(prefix="xamm-bench-archive-"))
    try:
        raw = raw_parse_rate(files[::5])
        runs = [
            _run_figures(
                "10.5k", len(files), xamm_ingest(corpus, tmp / "s1" / "store", args.workers)
            )
        ]
        big = tmp / "replicas"
        n_big = make_replicas(corpus, big, args.replicas)
        r_big = xamm_ingest(big, tmp / "s2" / "store", args.workers)
        runs.append(_run_figures(f"x{args.replicas}", n_big, r_big))
        shutil.rmtree(big)
        worker, client = measure_rates(corpus, tmp / "rates")
        t = time.perf_counter()
        scale_store(tmp / "scale", args.scale_rows)
        built = time.perf_counter() - t
        reads = measure_reads(tmp / "scale")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "raw_parse_files_s": raw, "runs": runs, "dask_worker_files_s": worker,
        "dask_client_files_s": client, "scale_rows": args.scale_rows, "scale_built_s": built,
        "reads": reads,
    }  # fmt: skip


def measure_resume(args, corpus: Path) -> dict:
    """A fully stored archive ingested again (what a nightly rerun or a restart after a crash
    costs), beside its first ingest; then the cost of one commit as the table grows."""
    tmp = Path(tempfile.mkdtemp(prefix="xamm-bench-resume-"))
    try:
        n = make_replicas(corpus, tmp / "replicas", args.resume_only)
        first = xamm_ingest(tmp / "replicas", tmp / "s" / "store", args.workers, memory=False)
        # the rerun reads nothing and changes nothing: seconds a run, so the median of a few
        reruns = [
            xamm_ingest(tmp / "replicas", tmp / "s" / "store", args.workers, memory=False)
            for _ in range(RERUNS)
        ]
        again = sorted(reruns, key=lambda r: r["seconds"])[len(reruns) // 2]
        shutil.rmtree(tmp / "replicas")
        commits = commit_cost(tmp / "grow")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "runs": [
            _run_figures("first ingest", n, first),
            _run_figures("rerun, all stored", n, again),
        ],
        "rerun_walls_s": [r["seconds"] for r in reruns],
        "commits": commits,
    }


def commit_cost(root: Path, batch: int = 1000, sizes=(10_000, 100_000, 1_000_000)) -> list[dict]:
    """Seconds of archive commits (``Store.append`` of ``batch`` new sources, vouched unheld at the
    latest version, as the archive ingest does) into an ``app_profiles`` table of each of
    ``sizes`` rows (one machine): a run's first commit, which reads the rows held per
    configuration once, and the median of its next three, which use the counts the store kept."""
    import statistics

    from xamm_data.store.store import Store

    got = []
    for rows in sizes:
        Store(root / str(rows)).append(scale_rows("node-00", rows, 0), "app_profiles")
        st = Store(root / str(rows))  # a new run: nothing kept yet
        times = []
        for k in range(4):
            new = scale_rows("node-00", batch, 1000 + k)
            t = time.perf_counter()
            st.append(new, "app_profiles", unheld_at=st.version("app_profiles"))
            times.append(time.perf_counter() - t)
        got.append({"rows": rows, "first_s": times[0], "later_s": statistics.median(times[1:])})
    return got


def measure_memory(args, corpus: Path) -> dict:
    """The sampled ingest of ``--memory-only`` replicas: files/s (observed), peak memory."""
    tmp = Path(tempfile.mkdtemp(prefix="xamm-bench-archive-"))
    try:
        n = make_replicas(corpus, tmp / "replicas", args.memory_only)
        env = {**os.environ, "XAMM_HOME": str(tmp / "home")}
        cmd = [
            sys.executable, "-m", "xamm_ingest.cli", "caliper", str(tmp / "replicas"), "--app",
            "sort", "--machine", "grace", "--store", str(tmp / "store"), "--workers",
            str(args.workers), "--no-progress", "--json",
        ]  # fmt: skip
        t = time.perf_counter()
        m = run_sampled(cmd, env)
        m["seconds"] = time.perf_counter() - t
        m["summary"] = json.loads(m.pop("stdout"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"runs": [_run_figures(f"x{args.memory_only}", n, m)]}


TREE_TARGET_MB = 250.0  # the ingest tree's peak PSS at 10^5 files
RESUME_AIM = 0.05  # a rerun on a stored archive, against its first ingest
RATE_AIM = 500.0  # files/s of an unobserved ingest on 2 cores
RERUNS = 3  # reruns of the stored archive (--resume-only), the median one against the first


def _mb(v) -> str:
    return "-" if v is None else f"{v:.0f}"


def _runs_table(runs: list[dict]) -> None:
    print(
        f"{'corpus':<18}{'files':>9}{'rows':>9}{'commits':>8}{'wall s':>9}{'cpu s':>8}"
        f"{'files/s':>9}{'main MB':>9}{'tree MB':>9}"
    )
    for r in runs:
        cpu = "-" if r["cpu_s"] is None else f"{r['cpu_s']:.1f}"
        print(
            f"{r['corpus']:<18}{r['files']:>9}{r['rows']:>9}{r['commits']:>8}{r['wall_s']:>9.1f}"
            f"{cpu:>8}{r['files'] / r['wall_s']:>9.0f}{_mb(r['peak_mb']):>9}{_mb(r['tree_mb']):>9}"
        )


def report(f: dict) -> None:
    """Print the page of the figures ``f`` (``mode``: archive, resume or memory), each with its aim,
    and the machine's floor."""
    print(f"cpus: {f['cpus']}   python {f['python']}   workers: {f['workers']}")
    print(f"floor: `python -c pass` {f['floor_cpu_s']:.3f} cpu-s (a process, median of 7)")
    if f["mode"] == "archive":
        print(f"raw caliperreader parse, one core: {f['raw_parse_files_s']:.0f} files/s")
    _runs_table(f["runs"])
    if f["mode"] == "resume":
        first, again = f["runs"]
        share = again["wall_s"] / first["wall_s"]
        ok = "met" if share <= RESUME_AIM else "NOT met"
        print(f"rerun / first ingest: {share:.1%} (aim: at most {RESUME_AIM:.0%}: {ok})")
        if walls := f.get("rerun_walls_s"):
            each = ", ".join(f"{w:.1f}" for w in walls)
            print(f"the rerun {len(walls)} times, wall s: {each} (the median one shown)")
        print(f"{'table rows':>12}{'first commit s':>16}{'later commits s (median of 3)':>32}")
        for c in f["commits"]:
            print(f"{c['rows']:>12,}{c['first_s']:>16.3f}{c['later_s']:>32.3f}")
        return
    for r in f["runs"]:
        if f["mode"] == "archive":
            rate = r["files"] / r["wall_s"]
            ok = "met" if rate >= RATE_AIM else "NOT met"
            print(f"{r['corpus']}: {rate:.0f} files/s (aim: at least {RATE_AIM:.0f}: {ok})")
        if r["tree_mb"] is not None and r["files"] >= 100_000:
            ok = "met" if r["tree_mb"] < TREE_TARGET_MB else "NOT met"
            print(
                f"{r['corpus']}: the tree's peak {r['tree_mb']:.0f} MB "
                f"(target < {TREE_TARGET_MB:.0f}: {ok})"
            )
    if f["mode"] == "archive":
        print_scaling(f["dask_worker_files_s"], f["dask_client_files_s"])
        print(
            f"reading a store of {f['scale_rows']:,} app_profiles rows (10 machines, 5 "
            f"applications; built in {f['scale_built_s']:.0f} s):"
        )
        print(f"{'read':<34}{'rows':>12}{'s':>9}{'peak MB':>10}")
        for r in f["reads"]:
            if "killed_at_mb" in r:
                print(f"{r['read']:<34}  killed for memory at {r['killed_at_mb']:.0f} MB")
            else:
                print(f"{r['read']:<34}{r['rows']:>12,}{r['seconds']:>9.2f}{r['peak_mb']:>10.0f}")


if __name__ == "__main__":
    sys.exit(main())
