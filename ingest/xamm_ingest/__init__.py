"""xamm_ingest: readers that turn HPC performance outputs into xamm tables.

Installed from the folder ``ingest/xamm_ingest``. Every format is one
:class:`~xamm_ingest.format.Format` declaration (its work in a module it names), registered through
the ``xamm.formats`` entry points
(another package adds its own the same way), and every ingest goes through one pipeline,
:mod:`xamm_ingest.pipeline`. The public names load on first use, so ``xamm --help`` stays fast.
"""

from __future__ import annotations

import importlib

_PUBLIC = {
    "Bounds": "xamm_ingest.records",
    "IngestError": "xamm_ingest.errors",
    "RecordError": "xamm_ingest.errors",
    "IngestReport": "xamm_ingest.report",
    "ArchiveReport": "xamm_ingest.report",
    "MetadataMap": "xamm_ingest.metadata_map",
    "SampleSpec": "xamm_ingest.readers.profile_common",
    "from_thicket": "xamm_ingest.thicket",
    "read_regions": "xamm_ingest.regions",
    "guess_profile": "xamm_ingest.regions",
    "ingest": "xamm_ingest.pipeline",
    "read": "xamm_ingest.pipeline",
    **{n: "xamm_ingest.format" for n in ("Format", "get_format", "guess_format", "list_formats")},
    **{
        n: "xamm_ingest.api"
        for n in (
            "ingest_archive",
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
