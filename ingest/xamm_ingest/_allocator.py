"""Imported first by the ``xamm-ingest`` command, before polars loads.

Polars' allocator (jemalloc) then hands freed pages back to the system at once instead of keeping
them for a second or more, so an archive ingest holds about one batch's memory
(``benchmarks/bench_archive.py`` measures it): :func:`xamm_data.cli.tools.free_pages_at_once`,
which every console script calls too, here set before anything the command imports loads polars.

The C library's allocator (glibc's, where the process has it: delta-rs, Python's large objects)
keeps its threshold for serving a block from ``mmap`` at 128 KiB. By default glibc raises that
threshold to the size of each large block freed, after which a commit's transient buffers are
carved from the heap, whose freed middle is never given back: at 10^5 files the tree's peak is
several MB higher. A threshold the user set (``MALLOC_MMAP_THRESHOLD_``, or
``glibc.malloc.mmap_threshold`` in ``GLIBC_TUNABLES``) wins.

Importing xamm as a library leaves the process's allocators alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from xamm_data.cli.tools import free_pages_at_once
from xamm_data.store.memory import glibc

__all__ = ["MMAP_THRESHOLD", "fix_mmap_threshold"]

M_MMAP_THRESHOLD = -3  # glibc's <malloc.h>
MMAP_THRESHOLD = 128 * 1024  # glibc's own starting value, kept


def fix_mmap_threshold(mallopt: Callable[[int, int], int] | None = None) -> bool:
    """Fix glibc's ``mmap`` threshold at :data:`MMAP_THRESHOLD` (glibc only; a value the user set
    in ``MALLOC_MMAP_THRESHOLD_`` or ``GLIBC_TUNABLES`` wins).

    Args:
        mallopt: the C library's ``mallopt`` (default: this process's, when it is glibc's).

    Returns:
        Whether the threshold was set.
    """
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "malloc.mmap_threshold" in os.environ.get(
        "GLIBC_TUNABLES", ""
    ):
        return False
    if mallopt is None:
        if (libc := glibc()) is None:
            return False
        mallopt = libc.mallopt
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))


free_pages_at_once()
fix_mmap_threshold()
