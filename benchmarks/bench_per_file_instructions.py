"""The per-file path against the parser in instructions executed (valgrind), beside their CPU.

    python benchmarks/bench_per_file_instructions.py [--data ../shared/data] [--files 200]
        [--out docs/bench/per-file-instructions.md --json docs/bench/per-file-instructions.json]

The same two figures as ``bench_per_file.py`` (the parser, and the per-file path: read, hash,
parse, regions, metadata, the row, the hash noted for a resume) on the first ``--files`` Caliper
profiles of the parallel-sorting corpus, counted in instructions rather than timed: each in its own
process under ``valgrind --tool=callgrind`` (set up, both warmed by one pass over the files, then
that one over them again), less a third process that only sets up and warms. An instruction count
does not move with the machine's load, where the CPU seconds of ``bench_per_file.py`` do (repeats
agree within 0.1%; a change to the set-up before the counted pass can move a count by a few per
cent, so counts are compared under one set-up); it does not say what an instruction costs
either. So the same files are also timed here (in-process, as ``bench_per_file.py`` times them),
and the page shows the nanoseconds an instruction of the parser takes beside one of the path
beyond the parser: the target (the path at most 1.5x the parser) is in CPU seconds, and where the
path's CPU is over it, this says whether it executes too much or executes slowly.

valgrind's CPU has no SHA instructions, so under it the hash of each source runs OpenSSL's
software SHA-256: its instructions (libcrypto's) are shown apart, and left out of the
per-instruction figures together with the hash's CPU timed natively here.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gc
import hashlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_per_file
from _data import floor_cpu_s, published

MODES = ("base", "parser", "path")


def worker(data: Path, n: int, mode: str) -> None:
    """Set up as ``bench_per_file.py`` does, warm the parser and the path on the first ``n`` files
    (chunk by chunk, in turn), then run ``mode`` (``parser``, ``path``; ``base``: nothing) on them
    again: what a valgrind process counts.

    Args:
        data: the shared data folder.
        n: files.
        mode: what runs after the warm pass.
    """
    from xamm_ingest.readers import base

    chunks, parser, per_file = bench_per_file.chunk_calls(data, n, Path(tempfile.mkdtemp()))
    with bench_per_file.command_state():
        for chunk in chunks:
            parser(chunk)
            per_file(chunk)
        base.relative_path.cache_clear()  # as every pass of bench_per_file.py resolves anew
        # the counted pass starts from one state of the collector whatever the warm pass left:
        # the collections inside it are then its own (a full one is millions of instructions)
        gc.collect()
        if mode != "base":
            for chunk in chunks:
                (parser if mode == "parser" else per_file)(chunk)


def counted(data: Path, n: int, mode: str, out: Path) -> dict[str, int]:
    """(the instructions, libcrypto's among them) of one valgrind process running ``mode``.

    Args:
        data: the shared data folder.
        n: files.
        mode: ``base``, ``parser`` or ``path``.
        out: where callgrind writes its profile.
    """
    cmd = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        __file__,
        "--worker",
        mode,
        "--data",
        str(data),
        "--files",
        str(n),
    ]
    # one hash seed for the three processes: a dict's layout, and so its probes, are the same;
    # one polars thread: idle pool threads add a count that varies from run to run
    env = {**os.environ, "PYTHONHASHSEED": "0", "POLARS_MAX_THREADS": "1", "RAYON_NUM_THREADS": "1"}
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    return {"all": _total(out), "libcrypto": _object_total(out, "libcrypto")}


def _total(profile: Path) -> int:
    """The instructions a callgrind profile counted in all."""
    for line in profile.read_text(errors="replace").splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise ValueError(f"{profile}: no totals line; expected a callgrind profile")


def _object_total(profile: Path, name: str) -> int:
    """The instructions a callgrind profile counted in the shared objects whose file name holds
    ``name`` (the functions' own costs, as ``callgrind_annotate`` adds them up)."""
    text = subprocess.run(
        ["callgrind_annotate", "--threshold=100", str(profile)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    row = re.compile(r"^\s*([\d,]+)\s.*\[(.*)\]\s*$")
    return sum(
        int(m[1].replace(",", ""))
        for line in text.splitlines()
        if (m := row.match(line)) and name in Path(m[2]).name
    )


def hash_cpu_s(data: Path, n: int, runs: int = 5) -> float:
    """The thread CPU seconds of SHA-256 over the first ``n`` files' bytes, natively (the median
    of ``runs`` passes)."""
    files = sorted((data / bench_per_file.CORPUS).rglob("*.cali"))[:n]
    blobs = [f.read_bytes() for f in files]
    got = []
    for _ in range(runs):
        t = time.thread_time()
        for b in blobs:
            hashlib.sha256(b).hexdigest()
        got.append(time.thread_time() - t)
    return statistics.median(got)


def measure(data: Path, n: int, runs: int) -> dict:
    """The instructions of the parser and the path per ``n`` files, and their CPU seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            jobs = {m: pool.submit(counted, data, n, m, Path(tmp) / f"{m}.out") for m in MODES}
            ir = {m: job.result() for m, job in jobs.items()}
    cpu = bench_per_file.measure(data, n, runs)
    return {
        "files": n,
        "runs": runs,
        "instructions": {m: ir[m]["all"] - ir["base"]["all"] for m in MODES if m != "base"},
        "libcrypto": {
            m: ir[m]["libcrypto"] - ir["base"]["libcrypto"] for m in MODES if m != "base"
        },
        "parser_cpu_s": cpu["parser_cpu_s"],
        "per_file_cpu_s": cpu["per_file_cpu_s"],
        "hash_cpu_s": hash_cpu_s(data, n, runs),
        "valgrind": subprocess.run(
            ["valgrind", "--version"], check=True, capture_output=True, text=True
        ).stdout.strip(),
    }


def report(f: dict) -> None:
    """Print the instructions per file, their ratio, and what an instruction costs."""
    n, ins, crypto = f["files"], f["instructions"], f["libcrypto"]
    parser, path = ins["parser"] / n, ins["path"] / n
    sha = (crypto["path"] - crypto["parser"]) / n
    beyond = path - parser
    print(f"floor: `python -c pass` {f['floor_cpu_s']:.3f} cpu-s (a process, median of 7)")
    print(f"{n} parallel-sorting Caliper profiles; instructions by {f['valgrind']} (callgrind)")
    print(f"{'':34s} {'instructions/file':>18s} {'x parser':>9s}")
    print(f"{'the parser':34s} {parser:18,.0f} {1:9.2f}")
    print(f"{'the per-file path':34s} {path:18,.0f} {path / parser:9.2f}")
    print(f"{'  beyond the parser':34s} {beyond:18,.0f} {beyond / parser:9.2f}")
    print(f"{'    of which SHA-256 (libcrypto)':34s} {sha:18,.0f} {sha / parser:9.2f}")
    print(f"{'    the rest':34s} {beyond - sha:18,.0f} {(beyond - sha) / parser:9.2f}")
    print(f"per-file path / parser in instructions: {path / parser:.2f}x")
    cpu_parser = f["parser_cpu_s"] / n
    cpu_rest = (f["per_file_cpu_s"] - f["parser_cpu_s"] - f["hash_cpu_s"]) / n
    print(
        f"the same files timed (medians of {f['runs']} passes, as bench_per_file.py times them): "
        f"parser {cpu_parser * 1e6:.0f} us/file, path {f['per_file_cpu_s'] / n * 1e6:.0f}, "
        f"SHA-256 natively {f['hash_cpu_s'] / n * 1e6:.1f}: "
        f"{f['per_file_cpu_s'] / f['parser_cpu_s']:.2f}x in CPU"
    )
    print(
        f"CPU per instruction: the parser {cpu_parser / parser * 1e9:.3f} ns; the path beyond the "
        f"parser, SHA-256 left out, {cpu_rest / (beyond - sha) * 1e9:.3f} ns "
        f"({cpu_rest / (beyond - sha) / (cpu_parser / parser):.1f}x the parser's)"
    )


def main() -> int:
    ap = bench_per_file.options(__doc__, 200)
    ap.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not bench_per_file.corpus_found(args.data):
        return 1
    if args.worker:
        worker(args.data, args.files, args.worker)
        return 0
    missing = [t for t in ("valgrind", "callgrind_annotate") if shutil.which(t) is None]
    if missing:
        print(f"{', '.join(missing)}: not found (apt install valgrind)", file=sys.stderr)
        return 1
    figures = {**measure(args.data, args.files, args.runs), "floor_cpu_s": floor_cpu_s()}
    published(figures, args.json, args.out, "bench_per_file_instructions.py", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
