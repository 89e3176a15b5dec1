"""Everything a format author needs, from one module (xarray's backends are the model).

A format is one :class:`Format` and one entry-point line in the author's package
(``[project.entry-points."xamm.formats"]``); ``docs/extending.md`` builds one from these names
only::

    from xamm_ingest.plugin import APP_PROFILES, Format, ReadResult, profiles, whole_program

The names here are the contract: they keep their meaning across releases, wherever they live
inside xamm.
"""

from __future__ import annotations

from xamm_data.tables.regions import (
    ProfileMeta,
    RegionProfile,
    RegionProfileError,
    category_expr,
    check_regions,
    conform_regions,
)
from xamm_data.tables.schema import APP_PROFILES, BENCHMARK_RUNS
from xamm_ingest import profiles
from xamm_ingest.errors import IngestError, RecordError
from xamm_ingest.format import Deferred, Format
from xamm_ingest.readers.base import ReadResult
from xamm_ingest.readers.profile_common import whole_program
from xamm_ingest.report import Rejected
from xamm_ingest.sources import Plan, Task

__all__ = [
    "APP_PROFILES",
    "BENCHMARK_RUNS",
    "Deferred",
    "Format",
    "IngestError",
    "Plan",
    "ProfileMeta",
    "ReadResult",
    "RecordError",
    "RegionProfile",
    "RegionProfileError",
    "Rejected",
    "Task",
    "category_expr",
    "check_regions",
    "conform_regions",
    "profiles",
    "whole_program",
]
