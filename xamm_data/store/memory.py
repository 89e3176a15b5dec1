"""The process's C allocator, where it is glibc's: :func:`glibc` (the one test of it, which the
``xamm-ingest`` command's allocator settings use too: ``xamm_ingest._allocator``), and freed
memory given back before a commit.

glibc's allocator keeps the pages a process freed for its next allocations: a batch read, checked
and let go still counts in the process's resident memory, and a commit then adds delta-rs's own on
top (the largest peak of an ingest). ``malloc_trim(0)`` returns the free pages, as Dask's workers do
(``distributed.worker_memory``); where the C library is not glibc (macOS, musl) nothing is done.
"""

from __future__ import annotations

import ctypes
import functools
import os

__all__ = ["glibc", "release_freed_memory"]


@functools.cache
def glibc() -> ctypes.CDLL | None:
    """This process's C library when it is glibc's, else None.

    Returns:
        The library (its ``mallopt``, ``malloc_trim``, ...), or None.
    """
    try:
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return None
    except (ValueError, OSError, AttributeError):  # no such name here: not glibc
        return None
    return ctypes.CDLL(None)


def release_freed_memory() -> bool:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``).

    Returns:
        Whether it could (False where the C library is not glibc).
    """
    libc = glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
