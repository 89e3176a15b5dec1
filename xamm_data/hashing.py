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
    return file_sha256_stat(path, chunk)[0]


def file_sha256_stat(path: str | Path, chunk: int = 1 << 20) -> tuple[str, os.stat_result]:
    """:func:`file_sha256`, and the file's ``stat`` taken once it was open, before it was read
    (a change while it is read changes its modification time after that ``stat``).

    Args:
        path: the file.
        chunk: bytes per read past the first.
    """
    with open(path, "rb", buffering=0) as f:
        st = os.fstat(f.fileno())
        if st.st_size <= chunk:
            return hashlib.sha256(f.readall()).hexdigest(), st
        h = hashlib.sha256()
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest(), st


def dir_sha256(path: str | Path) -> str:
    """SHA-256 of a directory: over its sorted ``relative path NUL file sha256 LF`` lines."""
    path = Path(path)
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f"{f.relative_to(path).as_posix()}\0{file_sha256(f)}\n".encode())
    return h.hexdigest()
