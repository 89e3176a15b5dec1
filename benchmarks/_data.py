"""The benchmarks' common set-up: ``xplat-rajaperf`` built from its named sources in a temporary
store, with a temporary ``XAMM_HOME`` so no benchmark reads or writes the user's."""

from __future__ import annotations

import contextlib
import io
import os
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
