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
    sk = split_kernel(row["kernel"])
    if sk is None:
        raise RecordError(
            src_path,
            f"kernel name {row['kernel']!r} is not of the form Group_KERNEL",
            record=record,
            field="kernel",
            value=row["kernel"],
        )
    row["group"] = sk[0]
    try:
        row["backend"], row["device"] = check_variant(src_path, row["variant"], record)
    except IngestError as e:
        raise RecordError(
            src_path, e.problem, record=record, field="variant", value=row["variant"]
        ) from None
    if row.get("block_size") is None:
        row["block_size"] = block_size(row["tuning"], row["device"])
    if row.get("threads") is None:
        row["threads"] = omp_max_threads if row["backend"] == "OpenMP" else 1
    # RAJAPerf's GPU runs are launched one MPI rank per GPU (llnl/RAJAPerf-Benchmark's run scripts)
    row.setdefault("gpus", row.get("ranks") if row["device"] == "gpu" else None)
    row.setdefault("omp_max_threads", omp_max_threads)
    row.setdefault("suite", "RAJAPerf")
    row.setdefault("trial", 0)
    t = row["time_per_rep_s"]
    ok = isinstance(t, (int, float)) and math.isfinite(t) and t > 0
    b, f = row.get("bytes_per_rep"), row.get("flops_per_rep")
    row["bandwidth_bytes_per_s"] = b / t if ok and b is not None and b >= 0 else None
    row["flops_per_s"] = f / t if ok and f is not None and f >= 0 else None
    return row
