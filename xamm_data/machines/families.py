"""Programming-model families: what makes two measurements of one machine comparable.

A RAJAPerf variant's back-end (``Seq``, ``OpenMP``, ``CUDA``, ...) runs a kernel very differently
on the same machine: one core, every core of a rank, or a GPU. A machine's signature measured from
a mix of them describes none of them, so runs and profiles are told apart by family:

* ``sequential``: one thread a rank on a CPU (``Seq``; an MPI-only application);
* ``threaded``: several threads a rank on a CPU (``OpenMP``, TBB, Kokkos or SYCL on a CPU, ...);
* ``gpu``: offloaded to a GPU (CUDA, HIP, SYCL, OpenMP target, ...).

:func:`family_expr` gives a ``benchmark_runs`` row's family from its ``backend`` and ``device``;
:func:`profile_family` a profile's from what its metadata says (programming model, threads, GPUs).
"""

from __future__ import annotations

import re

import polars as pl

FAMILIES = ("sequential", "threaded", "gpu")
# programming-model words that put a profile on a GPU, or on several CPU threads
GPU_WORDS = frozenset({"cuda", "hip", "sycl", "openacc", "opencl", "rocm", "gpu", "kokkos_cuda"})
THREAD_WORDS = frozenset({"openmp", "omp", "tbb", "threads", "pthreads", "kokkos"})

__all__ = ["FAMILIES", "family_expr", "family_of", "profile_family"]


def family_of(backend: str | None, device: str | None) -> str:
    """The family of a back-end on a device (see the module docstring).

    Args:
        backend: a ``benchmark_runs`` back-end (``Seq``, ``OpenMP``, ``CUDA``, ...).
        device: ``cpu`` or ``gpu``.

    Returns:
        ``sequential``, ``threaded`` or ``gpu``.
    """
    if device == "gpu":
        return "gpu"
    return "sequential" if backend in (None, "Seq") else "threaded"


def family_expr(backend: str = "backend", device: str = "device") -> pl.Expr:
    """Each ``benchmark_runs`` row's family, as a polars expression named ``family``."""
    return (
        pl.when(pl.col(device) == "gpu")
        .then(pl.lit("gpu"))
        .when(pl.col(backend).fill_null("Seq") == "Seq")
        .then(pl.lit("sequential"))
        .otherwise(pl.lit("threaded"))
        .alias("family")
    )


def profile_family(
    programming_model: str | None, threads: int | None, gpus: int | None, device: str | None
) -> tuple[str, str]:
    """A profile's family, and what said so.

    Args:
        programming_model: what its metadata names (``MPI``, ``OpenMP``, ``CUDA``, ``Seq``, ...).
        threads: threads per rank it ran with.
        gpus: GPUs it used.
        device: the device of the source it was measured on (``gpu`` when the profile measured GPU
            activity).

    Returns:
        (family, why).
    """
    words = set(re.split(r"[^a-z0-9_]+", (programming_model or "").lower())) - {""}
    if words & GPU_WORDS or gpus or device == "gpu":
        why = (
            f"programming model {programming_model}"
            if words & GPU_WORDS
            else (f"{gpus} GPUs" if gpus else "GPU activity measured")
        )
        return "gpu", why
    if words & THREAD_WORDS or (threads or 1) > 1:
        if words & THREAD_WORDS:
            return "threaded", f"programming model {programming_model}"
        return "threaded", f"{threads} threads a rank"
    return "sequential", (
        f"programming model {programming_model}, one thread a rank"
        if programming_model
        else "one thread a rank"
    )
