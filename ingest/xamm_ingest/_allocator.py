"""Imported first by the ``xamm-ingest`` command, before polars loads.

Polars' allocator (jemalloc) then hands freed pages back to the system at once instead of keeping
them for a second or more, so an archive ingest holds about one batch's memory
(``benchmarks/bench_archive.py`` measures it). Polars adds ``_RJEM_MALLOC_CONF`` to its own
settings when it loads, and a value the user set wins. Importing xamm as a library leaves the
process's allocator alone.
"""

from __future__ import annotations

import os

os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
