"""The per-file path against the parser under it, in CPU seconds, in each of a few processes.

    python benchmarks/bench_per_file.py [--data ../shared/data] [--files 2000] [--runs 5]
        [--processes 5] [--out docs/bench/per-file.md --json docs/bench/per-file.json]

On the first ``--files`` Caliper profiles of the parallel-sorting corpus (sorted by path), two
figures side by side, in-process, in thread CPU seconds summed over chunks of 25 files taken in
turn (the parser on a chunk, then the path on the same chunk: a machine whose speed drifts weighs on
both alike), the median of ``--runs`` such passes, read in the state the command reads its sources
in (:func:`command_state`: what the modules made is frozen). Each of ``--processes`` fresh
processes measures it all; the page shows the process whose ratio is the median, and every
process's ratio (on a shared machine one process's figure may stray from the next one's by more
than the passes within it do):

* **the parser**: :func:`xamm_ingest.readers.caliper_files.load_profile` on each file (read,
  decode, parse the ``.cali`` stream into records, globals and attribute metadata);
* **the per-file path**: what ``xamm-ingest caliper`` does for each source of an archive the
  store does not hold yet: read it once, hash those bytes and parse them into its
  ``app_profiles`` row (:func:`xamm_ingest.pipeline.stages.read_chunk` on the walk's tasks, as a
  worker reads them: regions, times, metadata, the row), and record its hash with its ``stat``
  for a later resume (:func:`xamm_ingest.pipeline.commit.note_hashed`, in the main process).

The target: the per-file path at most 1.5x the parser. Beside them, the machine's floor: the CPU
seconds of ``python -c pass`` as a process (the median of 7), the range of the ratio over the
passes (the machine's speed drifts between them), and where the path's CPU goes: in further passes
(``--runs`` of them, each after a plain one, the figures above taken without it), each step of the
path timed where it is called (:data:`STEPS`), per file, less what the timing itself adds inside a
step (a clock read of the thread's CPU time is a system call: :func:`timer_cost` measures it on a
step that does nothing); the rest is the plain path less those steps (the worker's loop, the
format's dispatch, the outcome, freeing what the parse built), and the timing's whole cost, inside
the steps and around them, is shown apart. The parse in the path does not read the file: it parses
the bytes the hash read, where the parser alone reads the file first (whether it then costs less
than the parser alone depends on the machine's state: the page shows both). ``--json`` writes the
figures, from which ``report`` prints the page again (``tests/test_bench_pages.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _data import floor_cpu_s, published

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path("LLNL+thicket-tutorial") / "data" / "parallel-sorting"
TARGET = 1.5


CHUNK = 25
_REGIONS = "xamm_ingest.readers.caliper_regions"
# the per-file path's steps, each timed where the path calls it: (what it does, module, function);
# a step of several functions is named once for each (none of them calls another)
STEPS = (
    ("read and hash the source", "xamm_ingest.pipeline.stages", "_sha"),
    ("its path relative to the root", "xamm_ingest.pipeline.stages", "_rel"),
    ("parse it (load_profile)", _REGIONS, "load_profile"),
    ("records: attribute by attribute", _REGIONS, "_uniform"),
    ("records: one by one (the rest)", _REGIONS, "_measured"),
    ("records: one by one (the rest)", _REGIONS, "_gathered"),
    ("regions: times, work, categories", _REGIONS, "_time_plan"),
    ("regions: times, work, categories", _REGIONS, "_region_columns"),
    ("regions: times, work, categories", _REGIONS, "_uniform_columns"),
    ("metadata: the map, the record", _REGIONS, "_caliper_meta"),
    ("metric totals", _REGIONS, "_totals"),
    ("the app_profiles row", "xamm_ingest.readers.caliper_profile", "whole_program"),
    ("record the hash for a resume", "xamm_ingest.pipeline.commit", "note_hashed"),
)


def cpu_of(fn, *args) -> float:
    """The thread CPU seconds of one call of ``fn``."""
    t = time.thread_time()
    fn(*args)
    return time.thread_time() - t


def _timed(fn, name: str, spent: dict[str, float], calls: dict[str, int]):
    """``fn`` as a call that adds its thread CPU seconds to ``spent[name]`` and counts itself in
    ``calls[name]``."""

    def timed(*args, **kwargs):
        t = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.thread_time() - t
            calls[name] += 1

    return timed


def timer_cost(n: int = 20000) -> tuple[float, float]:
    """(the thread CPU seconds a timed step's figure holds per call beyond the step's own, the
    seconds each timed call costs in all), measured on ``n`` calls of a step that does nothing.

    Args:
        n: how many calls to time.
    """
    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    step = _timed(lambda: None, "nothing", spent, calls)
    t = time.thread_time()
    for _ in range(n):
        step()
    whole = time.thread_time() - t
    return spent["nothing"] / n, whole / n


@contextlib.contextmanager
def steps_timed(spent: dict[str, float], calls: dict[str, int]):
    """Each of :data:`STEPS` replaced where the path looks it up by a call that adds its thread CPU
    seconds to ``spent`` and counts itself in ``calls`` (by step); put back on exit."""
    saved = []
    for name, module, attr in STEPS:
        mod = importlib.import_module(module)
        fn = getattr(mod, attr)
        spent[name] += 0.0  # each step listed, in STEPS' order, even one this corpus never takes
        calls[name] += 0
        saved.append((mod, attr, fn))
        setattr(mod, attr, _timed(fn, name, spent, calls))
    try:
        yield
    finally:
        for mod, attr, fn in saved:
            setattr(mod, attr, fn)


@contextlib.contextmanager
def command_state():
    """The process as ``xamm-ingest`` reads its sources in: what its modules made is frozen before
    the first source (:func:`xamm_data.cli.tools.loaded`; a local worker is forked from that
    state), so the collector's full collections walk what the reading made, not every module's
    objects. Unfrozen on exit."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def chunk_calls(data: Path, n: int, records: Path) -> tuple[list, object, object]:
    """(the first ``n`` Caliper profiles of the corpus in chunks of :data:`CHUNK` tasks, the
    parser on a chunk, the per-file path on a chunk), the path recording hashes in ``records``.

    Args:
        data: the shared data folder.
        n: files.
        records: a folder for the path's record of hashes.
    """
    from xamm_ingest.pipeline import commit
    from xamm_ingest.pipeline.file_hashes import FileHashes
    from xamm_ingest.pipeline.stages import read_chunk
    from xamm_ingest.readers.caliper_files import load_profile
    from xamm_ingest.readers.profile_common import SampleSpec
    from xamm_ingest.records import Bounds
    from xamm_ingest.sources import Task

    root = data / CORPUS
    files = sorted(root.rglob("*.cali"))[:n]
    opts = {"spec": SampleSpec(app="sort", machine="grace"), "bounds": Bounds()}
    tasks = [Task("caliper", f, root) for f in files]
    hashes = FileHashes(records / "file-hashes.bin")
    noted = [0]

    def parser(chunk):
        for t in chunk:
            load_profile(t.path)

    def per_file(chunk):
        got = read_chunk(chunk, opts)
        commit.note_hashed(hashes, [out for out, _, _ in got])
        assert sum(len(rows) for _, rows, _ in got) == len(chunk) == hashes.noted - noted[0]
        noted[0] = hashes.noted

    return [tasks[i : i + CHUNK] for i in range(0, len(tasks), CHUNK)], parser, per_file


def measure(data: Path, n: int, runs: int) -> dict:
    """The parser's and the per-file path's CPU seconds on the first ``n`` files."""
    from xamm_ingest.readers import base

    records = tempfile.TemporaryDirectory()
    chunks, parser, per_file = chunk_calls(data, n, Path(records.name))

    def one_pass() -> tuple[float, float]:
        if hasattr(base, "relative_path"):  # every pass resolves its paths as a new worker would
            base.relative_path.cache_clear()
        both = [(cpu_of(parser, c), cpu_of(per_file, c)) for c in chunks]
        return sum(p for p, _ in both), sum(q for _, q in both)

    with command_state():
        one_pass()  # warm the page cache, the imports, the caches a worker fills on its first files
        inside, whole = timer_cost()
        taken, timed = [], []
        for _ in range(runs):  # plain and timed passes in turn: a drift of speed weighs on both
            taken.append(one_pass())
            timed.append(_steps_pass(one_pass))
    records.cleanup()
    return {
        "files": sum(map(len, chunks)),
        "runs": runs,
        "parser_cpu_s": statistics.median(p for p, _ in taken),
        "per_file_cpu_s": statistics.median(q for _, q in taken),
        "ratios": [q / p for p, q in taken],
        "steps_cpu_s": {k: statistics.median(p[k] for p, _, _ in timed) for k in timed[0][0]},
        "step_calls": timed[0][1],  # the same in every pass
        "timed_pass_cpu_s": statistics.median(t for _, _, t in timed),
        "timer_inside_s": inside,
        "timer_call_s": whole,
    }


def _steps_pass(one_pass) -> tuple[dict[str, float], dict[str, int], float]:
    """(each step's thread CPU seconds in one pass of the path, timing included; the calls of
    each; the pass's seconds with the timing)."""
    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    with steps_timed(spent, calls):
        path = one_pass()[1]
    return dict(spent), dict(calls), path


def report(f: dict) -> None:
    """Print the two figures, the machine's floor and the ratio against the target."""
    ratio = f["per_file_cpu_s"] / f["parser_cpu_s"]
    print(f"floor: `python -c pass` {f['floor_cpu_s']:.3f} cpu-s (a process, median of 7)")
    print(f"{f['files']} parallel-sorting Caliper profiles; medians of {f['runs']} runs, CPU s")
    print(f"{'path':28s} {'cpu s':>7s} {'files/cpu-s':>12s}")
    for name, key in (("the parser", "parser_cpu_s"), ("the per-file path", "per_file_cpu_s")):
        print(f"{name:28s} {f[key]:7.2f} {f['files'] / f[key]:12.0f}")
    verdict = "met" if ratio <= TARGET else "NOT met"
    print(f"per-file path / parser: {ratio:.2f}x (target <= {TARGET:g}x: {verdict})")
    lo, hi = min(f["ratios"]), max(f["ratios"])
    print(f"the ratio pass by pass: {lo:.2f}x to {hi:.2f}x")
    if got := f.get("process_ratios"):
        under = sum(r <= TARGET for r in got)
        print(
            f"the ratio process by process ({len(got)} fresh processes, the median one shown): "
            f"{', '.join(f'{r:.2f}x' for r in got)}; at most {TARGET:g}x in {under} of {len(got)}"
        )
    _report_steps(f)
    beyond = f["per_file_cpu_s"] - f["parser_cpu_s"]
    allowed = (TARGET - 1.0) * f["parser_cpu_s"]
    print(
        f"the path beyond the parser: {beyond / f['files'] * 1e6:.0f} us/file; the target leaves "
        f"{allowed / f['files'] * 1e6:.0f} ({TARGET - 1:g}x the parser's)"
    )


def _report_steps(f: dict) -> None:
    """Where the path's CPU goes: each step less the timing inside it, the rest (the plain path
    less the steps), and the timing's own cost apart. In the path a timed call costs more than
    on a step that does nothing, so its cost is taken as measured there (the timed passes less
    the plain ones), split inside and around a step as :func:`timer_cost` splits it."""
    us = 1e6 / f["files"]
    calls = f["step_calls"]
    extra = f["timed_pass_cpu_s"] - f["per_file_cpu_s"]
    inside = max(0.0, extra) / max(1, sum(calls.values())) * f["timer_inside_s"] / f["timer_call_s"]
    steps = {k: max(0.0, v - calls[k] * inside) for k, v in f["steps_cpu_s"].items()}
    steps["the rest"] = f["per_file_cpu_s"] - sum(steps.values())
    print(f"where the path's CPU goes, each step timed where it is called ({f['runs']} runs):")
    print(f"{'step':36s} {'us/file':>8s} {'x parser':>9s}")
    for name, cpu in steps.items():
        print(f"{name:36s} {cpu * us:8.0f} {cpu / f['parser_cpu_s']:9.2f}")
    n = sum(calls.values()) / f["files"]
    print(
        f"the timing itself, taken out above: {extra * us:.0f} us/file ({n:.1f} timed calls a "
        f"file; {inside * 1e6:.1f} us of each inside its step; on a step that does nothing a timed "
        f"call costs {f['timer_call_s'] * 1e6:.1f} us, {f['timer_inside_s'] * 1e6:.1f} inside it)"
    )
    if extra < 0:
        print(
            "(the timed passes took less CPU than the plain ones: the machine's speed moved by "
            "more than the timing costs, so the steps are as timed and the rest is the remainder)"
        )


def options(doc: str, files: int) -> argparse.ArgumentParser:
    """The options of a per-file benchmark: ``--data``, ``--files`` (default ``files``),
    ``--runs``, ``--json`` and ``--out``; its description the first line of ``doc``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--files", type=int, default=files)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    return ap


def corpus_found(data: Path) -> bool:
    """Whether ``data`` holds the corpus; where not, says so on stderr."""
    if (data / CORPUS).is_dir():
        return True
    print(f"{data / CORPUS}: not found (the shared data)", file=sys.stderr)
    return False


def in_processes(args: argparse.Namespace) -> dict:
    """:func:`measure` in each of ``args.processes`` fresh processes (one after another): the
    figures of the process whose ratio is the median (the lower one of an even count), with every
    process's ratio in the order they ran (``process_ratios``)."""
    got = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "one.json"
        for _ in range(args.processes):
            cmd = [sys.executable, __file__, "--one", "--data", str(args.data)]
            cmd += ["--files", str(args.files), "--runs", str(args.runs), "--json", str(out)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            got.append(json.loads(out.read_text()))
    return median_process(got)


def median_process(got: list[dict]) -> dict:
    """The figures of the process whose ratio is the median (the lower one of an even count),
    with every process's ratio in the order given (``process_ratios``).

    Args:
        got: each process's :func:`measure` figures.
    """
    ratio = [f["per_file_cpu_s"] / f["parser_cpu_s"] for f in got]
    middle = sorted(range(len(got)), key=ratio.__getitem__)[(len(got) - 1) // 2]
    return {**got[middle], "process_ratios": ratio}


def main() -> int:
    ap = options(__doc__, 2000)
    ap.add_argument("--processes", type=int, default=5, help="fresh processes that measure")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # one such process
    args = ap.parse_args()
    if args.one and args.json is None:
        ap.error("--one writes its figures to --json")
    if not corpus_found(args.data):
        return 1
    if args.one:
        args.json.write_text(json.dumps(measure(args.data, args.files, args.runs)))
        return 0
    figures = {**in_processes(args), "floor_cpu_s": floor_cpu_s()}
    published(figures, args.json, args.out, "bench_per_file.py", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
