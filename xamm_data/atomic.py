"""Atomic file writes: write a temporary file beside the target, fsync, then rename over it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in ``target``'s directory; on success it replaces ``target``
    atomically.

    On any exception the temporary file is removed and ``target`` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text_atomic(target: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``target`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


@contextlib.contextmanager
def locked(lock_file: str | os.PathLike, timeout: float = -1) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_file`` (``filelock``: fcntl on POSIX, msvcrt on Windows).

    ``timeout`` seconds to wait (-1: forever); ``filelock.Timeout`` when it runs out.
    """
    # filelock: imported on use (a command that writes no shared file, most of them, never loads it)
    from filelock import FileLock

    lock_file = Path(lock_file)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(lock_file, timeout=timeout):
        yield
