"""RAJAPerf naming rules: canonical kernel names, variant -> backend/device, tuning -> block
size."""

from __future__ import annotations

import functools
import re

KERNEL_RE = re.compile(r"^(?P<group>[A-Za-z]+)_(?P<name>[A-Z0-9][A-Z0-9_]*)$")
VARIANT_RE = re.compile(r"^(?P<impl>Base|RAJA|Lambda|Kokkos)_(?P<backend>[A-Za-z0-9]+)$")
_BACKENDS = {
    "Seq": ("Seq", "cpu"),
    "OpenMP": ("OpenMP", "cpu"),
    "OpenMPTarget": ("OpenMPTarget", "gpu"),
    "CUDA": ("CUDA", "gpu"),
    "HIP": ("HIP", "gpu"),
    "SYCL": ("SYCL", "gpu"),
    "StdPar": ("StdPar", "cpu"),
    "Lambda": ("Kokkos", "cpu"),
}
_BLOCK_RE = re.compile(r"(?:^|_)(\d+)$")


# the three below: pure functions of names a corpus repeats (each file lists every kernel)
@functools.lru_cache(maxsize=4096)
def split_kernel(kernel: str) -> tuple[str, str] | None:
    """``"Basic_DAXPY"`` -> ``("Basic", "Basic_DAXPY")``; ``None`` if not a RAJAPerf kernel name."""
    m = KERNEL_RE.match(kernel)
    return (m["group"], kernel) if m else None


def canonical_kernel(name: str, group: str | None = None) -> str | None:
    """The canonical ``Group_KERNEL`` name, prefixing ``group`` to a bare kernel name
    (``DAXPY``)."""
    name = name.strip()
    if KERNEL_RE.match(name):
        return name
    if group and re.match(r"^[A-Z0-9][A-Z0-9_]*$", name):
        return f"{group}_{name}"
    return None


@functools.lru_cache(maxsize=256)
def backend_device(variant: str) -> tuple[str, str] | None:
    """``"RAJA_CUDA"`` -> ``("CUDA", "gpu")``; ``None`` for an unknown variant."""
    m = VARIANT_RE.match(variant)
    if not m:
        return None
    if m["impl"] == "Kokkos":
        return ("Kokkos", "cpu")
    return _BACKENDS.get(m["backend"])


@functools.lru_cache(maxsize=1024)
def block_size(tuning: str, device: str) -> int | None:
    """GPU block size encoded in a tuning name (``block_256``, ``atomic_occgs_256`` -> 256)."""
    if device != "gpu":
        return None
    m = _BLOCK_RE.search(tuning)
    return int(m.group(1)) if m else None
