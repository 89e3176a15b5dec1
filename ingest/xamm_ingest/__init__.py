"""xamm_ingest: readers that turn HPC performance outputs into xamm tables.

Installed from the top-level folder ``ingest/`` under the import name ``xamm_ingest`` (a bare
``ingest`` module would collide with other packages). Every format goes through one dispatcher,
:mod:`xamm_ingest.dispatch`. The public names load on first use, so ``xamm --help`` stays fast.
"""

from __future__ import annotations

import importlib

_PUBLIC = {
    "Bounds": "xamm_ingest.records",
    "IngestError": "xamm_ingest.errors",
    "RecordError": "xamm_ingest.errors",
    "IngestReport": "xamm_ingest.report",
    "ArchiveReport": "xamm_ingest.archive",
    "ingest_archive": "xamm_ingest.archive",
    "MetadataMap": "xamm_ingest.metadata_map",
    "from_thicket": "xamm_ingest.thicket",
    "read_regions": "xamm_ingest.readers.regions",
    **{
        n: "xamm_ingest.dispatch"
        for n in (
            "ingest_babelstream",
            "ingest_profiles",
            "ingest_rajaperf",
            "ingest_sources",
            "read_babelstream",
            "read_profiles",
            "read_rajaperf",
            "read_sources",
        )
    },
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'xamm_ingest' has no attribute {name!r}")
