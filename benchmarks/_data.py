"""The benchmarks' common set-up: ``xplat-rajaperf`` built from its named sources in a temporary
store, with a temporary ``XAMM_HOME`` so no benchmark reads or writes the user's."""

from __future__ import annotations

import os
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
