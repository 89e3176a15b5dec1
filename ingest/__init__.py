"""xamm_ingest: readers that turn HPC performance outputs into xamm tables.

Installed from the top-level folder ``ingest/`` under the import name ``xamm_ingest`` (a bare
``ingest`` module would collide with other packages).
"""

from xamm_ingest.errors import IngestError
from xamm_ingest.rajaperf import IngestReport, ingest_rajaperf, read_rajaperf

__all__ = ["IngestError", "IngestReport", "ingest_rajaperf", "read_rajaperf"]
