"""Content hashes: one function per kind of content, used wherever xamm versions data by what it
holds."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path
from typing import NamedTuple

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
    got = hash_file(path, chunk)
    return got.sha256, got.stat


class FileHash(NamedTuple):
    """A file's SHA-256, its ``stat`` once open, whether its path is a symbolic link (its last
    part; None where the system cannot tell as it opens a file), and the bytes hashed where they
    were kept."""

    sha256: str
    stat: os.stat_result
    link: bool | None
    data: bytes | None = None


_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def hash_file(path: str | Path, chunk: int = 1 << 20, keep: bool = False) -> FileHash:
    """:func:`file_sha256_stat`, and whether ``path`` is a symbolic link, told by the open that
    reads it (without following a link first: a link refuses it), which spares a reader of the
    path the ``lstat`` that would tell.

    Args:
        path: the file.
        chunk: bytes per read past the first.
        keep: keep the bytes hashed when the first read held them all (a file of at most
            ``chunk`` bytes, or one more), so that a reader parses the bytes hashed without
            reading them again.

    Returns:
        The hash, the ``stat``, the link, and the bytes where kept (else None).
    """
    fd, link = _open(path)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):  # open() of a directory refuses it so; os.open does not
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        # a file of at most ``chunk`` bytes in one read: one that gives the size ``fstat`` gave
        # holds the file as that ``stat`` saw it, so no read is asked to find its end; else the
        # reads go on until one finds it (a file that grew since, a read that fell short)
        first = os.read(fd, min(st.st_size, chunk) + 1)
        h = hashlib.sha256(first)
        whole = True
        if len(first) != st.st_size:
            while block := os.read(fd, chunk):
                h.update(block)
                whole = False
    finally:
        os.close(fd)
    return FileHash(h.hexdigest(), st, link, first if keep and whole else None)


def _open(path: str | Path) -> tuple[int, bool | None]:
    """A descriptor of ``path`` open for reading, and whether ``path`` is a symbolic link."""
    if not _NOFOLLOW:
        return os.open(path, _READ), None
    try:
        return os.open(path, _READ | _NOFOLLOW), False
    except OSError as e:  # ELOOP (EMLINK on FreeBSD): the last part is a link; opened below
        if e.errno not in (errno.ELOOP, errno.EMLINK):
            raise
    return os.open(path, _READ), True


def dir_sha256(path: str | Path) -> str:
    """SHA-256 of a directory: over its sorted ``relative path NUL file sha256 LF`` lines."""
    path = Path(path)
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f"{f.relative_to(path).as_posix()}\0{file_sha256(f)}\n".encode())
    return h.hexdigest()
