"""Content hashes: one function per kind of content, used wherever xamm versions data by what it
holds."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import polars as pl


def frame_sha256(df: pl.DataFrame) -> str:
    """SHA-256 of a frame's column names and values, in order (nulls distinct from empty
    strings)."""
    h = hashlib.sha256(",".join(df.columns).encode())
    for series in df.iter_columns():
        h.update(series.cast(pl.String).fill_null("\0").str.join("\x1f").item().encode())
    return h.hexdigest()


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes (a file of at most ``chunk`` bytes in one unbuffered read: an
    archive's profiles are a few kB each, and resuming one is bound by hashing them)."""
    with open(path, "rb", buffering=0) as f:
        if os.fstat(f.fileno()).st_size <= chunk:
            return hashlib.sha256(f.readall()).hexdigest()
        h = hashlib.sha256()
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def dir_sha256(path: str | Path) -> str:
    """SHA-256 of a directory: over its sorted ``relative path NUL file sha256 LF`` lines."""
    path = Path(path)
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f"{f.relative_to(path).as_posix()}\0{file_sha256(f)}\n".encode())
    return h.hexdigest()
