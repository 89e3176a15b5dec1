"""Steps shared by the RAJAPerf readers: checking names, and the derived columns."""

from __future__ import annotations

import math

from xamm_ingest.errors import IngestError, RecordError
from xamm_ingest.readers.names import backend_device, block_size, split_kernel

GIB = float(1 << 30)


def check_variant(src_path, variant: str, record: str | None = None) -> tuple[str, str]:
    """(backend, device) of a RAJAPerf variant; an unknown one is an error naming it."""
    bd = backend_device(variant)
    if bd is None:
        raise IngestError(
            src_path,
            f"unknown RAJAPerf variant {variant!r} (expected e.g. Base_Seq, RAJA_CUDA)",
            record=record,
        )
    return bd


def finish_row(row: dict, *, src_path, record: str, omp_max_threads: float | None = None) -> dict:
    """Fill the columns derived from kernel, variant, tuning and the per-rep figures; check names.

    A bad kernel or variant name raises :class:`RecordError` (that record is dropped, not the file).
    Numbers are checked later, over the whole frame (:mod:`xamm_ingest.records`).
    """
    row["group"] = kernel_group(row["kernel"], src_path, record)
    try:
        run = run_columns(row["variant"], row.get("ranks"), omp_max_threads, src_path)
    except IngestError as e:
        raise RecordError(
            src_path, e.problem, record=record, field="variant", value=row["variant"]
        ) from None
    row["backend"], row["device"] = run["backend"], run["device"]
    if row.get("threads") is None:
        row["threads"] = run["threads"]
    for column in ("gpus", "omp_max_threads", "suite", "trial"):  # the row's own value wins
        row.setdefault(column, run[column])
    return finish_kernel(row, run["device"])


def run_columns(variant: str, ranks, omp_max_threads, src_path) -> dict:
    """What :func:`finish_row` derives from a run's variant, ranks and OpenMP threads alone, for
    a file whose rows are all of one run (each row then takes :func:`finish_kernel`).

    Args:
        variant: the run's variant (an unknown one raises :class:`IngestError`).
        ranks: the run's MPI ranks (or None).
        omp_max_threads: the run's OpenMP threads (or None).
        src_path: the file, for the error.

    Returns:
        ``backend``, ``device``, ``threads``, ``gpus``, ``omp_max_threads``, ``suite`` and
        ``trial``, as :func:`finish_row` sets them on a row that has none of them.
    """
    backend, device = check_variant(src_path, variant)
    return {
        "backend": backend,
        "device": device,
        "threads": omp_max_threads if backend == "OpenMP" else 1,
        # RAJAPerf's GPU runs are launched one MPI rank per GPU (llnl/RAJAPerf-Benchmark's run
        # scripts)
        "gpus": ranks if device == "gpu" else None,
        "omp_max_threads": omp_max_threads,
        "suite": "RAJAPerf",
        "trial": 0,
    }


def kernel_group(kernel: str, src_path, record: str) -> str:
    """The group of a RAJAPerf kernel name; another name raises :class:`RecordError`."""
    sk = split_kernel(kernel)
    if sk is None:
        raise RecordError(
            src_path,
            f"kernel name {kernel!r} is not of the form Group_KERNEL",
            record=record,
            field="kernel",
            value=kernel,
        )
    return sk[0]


def finish_kernel(row: dict, device: str) -> dict:
    """The columns of ``row`` derived from its tuning and per-rep figures on ``device``: the block
    size a GPU tuning names, where the row has none, and its bandwidth and FLOP rate."""
    if row.get("block_size") is None:
        row["block_size"] = block_size(row["tuning"], device)
    t = row["time_per_rep_s"]
    ok = isinstance(t, (int, float)) and math.isfinite(t) and t > 0
    b, f = row.get("bytes_per_rep"), row.get("flops_per_rep")
    row["bandwidth_bytes_per_s"] = b / t if ok and b is not None and b >= 0 else None
    row["flops_per_s"] = f / t if ok and f is not None and f >= 0 else None
    return row
