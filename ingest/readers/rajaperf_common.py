"""Steps shared by the RAJAPerf readers: checking names and times, and the derived columns."""

from __future__ import annotations

import math

from xamm_ingest.errors import IngestError
from xamm_ingest.readers.names import backend_device, block_size, split_kernel

GIB = float(1 << 30)


def check_time(src_path, value, what: str, record: str) -> float:
    """A time must be a finite number > 0."""
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise IngestError(src_path, f"{what} is {value!r}; expected a finite time > 0", record=record)
    return float(value)


def finish_row(row: dict, *, src_path, record: str, omp_max_threads: int | None = None) -> dict:
    """Fill the columns derived from kernel, variant, tuning and the per-rep figures; check names."""
    sk = split_kernel(row["kernel"])
    if sk is None:
        raise IngestError(src_path, f"kernel name {row['kernel']!r} is not of the form Group_KERNEL", record=record)
    row["group"] = sk[0]
    bd = backend_device(row["variant"])
    if bd is None:
        raise IngestError(src_path, f"unknown RAJAPerf variant {row['variant']!r} (expected e.g. Base_Seq, RAJA_CUDA)",
                          record=record)
    row["backend"], row["device"] = bd
    if row.get("block_size") is None:
        row["block_size"] = block_size(row["tuning"], row["device"])
    if row.get("threads") is None:
        if row["backend"] in ("OpenMP",):
            row["threads"] = omp_max_threads
        else:
            row["threads"] = 1
    row.setdefault("omp_max_threads", omp_max_threads)
    row.setdefault("suite", "RAJAPerf")
    row.setdefault("trial", 0)
    t = row["time_per_rep_s"]
    b, f = row.get("bytes_per_rep"), row.get("flops_per_rep")
    row["bandwidth_bytes_per_s"] = b / t if b is not None else None
    row["flops_per_s"] = f / t if f is not None else None
    return row
