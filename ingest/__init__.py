"""xamm_ingest: readers that turn HPC performance outputs into xamm tables.

Installed from the top-level folder ``ingest/`` under the import name ``xamm_ingest`` (a bare
``ingest`` module would collide with other packages). Every format goes through one dispatcher,
:mod:`xamm_ingest.dispatch`.
"""

from xamm_ingest.dispatch import (ingest_profiles, ingest_rajaperf, ingest_sources, read_profiles, read_rajaperf,
                                  read_sources)
from xamm_ingest.errors import IngestError, RecordError
from xamm_ingest.records import Bounds
from xamm_ingest.report import IngestReport

__all__ = ["Bounds", "IngestError", "IngestReport", "RecordError", "ingest_profiles", "ingest_rajaperf",
           "ingest_sources", "read_profiles", "read_rajaperf", "read_sources"]
