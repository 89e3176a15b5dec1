"""The benchmarks' common set-up: ``xplat-rajaperf`` built from its named sources in a temporary
store, with a temporary ``XAMM_HOME`` so no benchmark reads or writes the user's."""

from __future__ import annotations

import compileall
import contextlib
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def best_of(fn, repeat: int) -> float:
    """The fastest of ``repeat`` calls of ``fn``, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def best_of_each(fns: dict, repeat: int) -> dict:
    """The fastest of ``repeat`` calls of each of ``fns``, in seconds, the calls taken in turn
    (one of each a round): a machine whose load drifts weighs on every one alike.

    Args:
        fns: name -> what to call.
        repeat: rounds.
    """
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def compiled() -> None:
    """xamm's packages compiled to bytecode, as installing a wheel leaves them (and the peers, whose
    installs did): a process timed here never compiles xamm's sources, whatever
    ``PYTHONDONTWRITEBYTECODE`` says."""
    repo = Path(__file__).resolve().parents[1]
    for pkg in ("xamm_data", "ingest/xamm_ingest", "xamm_models"):
        compileall.compile_dir(repo / pkg, quiet=1)


def floor_cpu_s(runs: int = 7) -> float:
    """The machine's floor: the median CPU seconds of ``python -c pass`` as a fresh process.

    Args:
        runs: processes to take the median of.
    """
    got = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        got.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(got)


def published(figures: dict, json_path: Path | None, out: Path | None, script: str, report):
    """Write ``figures`` to ``json_path`` (when given), then print ``report(figures)``, also to the
    page ``out`` (when given): the page is what its JSON prints.

    Args:
        figures: what the benchmark measured.
        json_path: where its figures go (``--json``).
        out: the Markdown page (``--out``).
        script: the benchmark's file name, for the page's heading.
        report: prints the page's table from the figures; what it returns is returned.
    """
    if json_path:
        json_path.write_text(json.dumps(figures, indent=1) + "\n")
    with printed_to(out, script):
        return report(figures)


def xplat_dataset(data: Path, name: str):
    """(the data set built from ``data``'s named sources, the temporary folder holding its store and
    home)."""
    tmp = Path(tempfile.mkdtemp(prefix=f"xamm-bench-{name}-"))
    os.environ["XAMM_HOME"] = str(tmp / "home")
    from xamm_models.benchmark import dataset as xplat  # after XAMM_HOME is set

    xplat.ingest_sources(data, tmp / "store")
    return xplat.XplatDataset.from_store(tmp / "store"), tmp


class _Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, s: str) -> int:
        for st in self.streams:
            st.write(s)
        return len(s)

    def flush(self) -> None:
        for st in self.streams:
            st.flush()


@contextlib.contextmanager
def printed_to(path: Path | None, script: str):
    """Print as usual and, given ``path``, also write what was printed there as a Markdown page
    (the page the documentation links for the measured figures)."""
    if path is None:
        yield
        return
    buf = io.StringIO()
    with contextlib.redirect_stdout(_Tee(sys.stdout, buf)):
        yield
    head = (
        f"`python benchmarks/{script}` on {os.cpu_count()} cores, Python {sys.version.split()[0]}"
    )
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(f"# {script}\n\n{head}:\n\n```text\n{buf.getvalue().rstrip()}\n```\n")
