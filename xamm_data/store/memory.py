"""Freed memory given back to the system before a commit.

glibc's allocator keeps the pages a process freed for its next allocations: a batch read, checked
and let go still counts in the process's resident memory, and a commit then adds delta-rs's own on
top (the largest peak of an ingest). ``malloc_trim(0)`` returns the free pages, as Dask's workers do
(``distributed.worker_memory``); where there is no glibc (macOS, musl) nothing is done.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable

__all__ = ["release_freed_memory"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


def release_freed_memory() -> bool:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``).

    Returns:
        Whether it could (False where the C library has no ``malloc_trim``).
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
