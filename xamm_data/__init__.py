"""xamm_data: validated, versioned Parquet datasets of HPC performance runs.

Public entry points::

    from xamm_data import load_dataset, list_datasets, Store
    df = load_dataset("quartz")                       # benchmark_runs of quartz
    prof = load_dataset("quartz", kind="app_profiles")
    tk = to_thicket(df)              # a Thicket (xamm_ingest.from_thicket goes back)

Every error xamm raises on purpose, in any of its packages, derives from :class:`XammError`.
"""

from xamm_data._version import __version__
from xamm_data.datasets import UnknownDatasetError, list_datasets, load_dataset, registry_frame
from xamm_data.errors import XammError
from xamm_data.schema import APP_PROFILES, BENCHMARK_RUNS, COUNTERS_TABLE, TABLES, get_table
from xamm_data.store import Store
from xamm_data.thicket import to_thicket
from xamm_data.validate import ValidationError, validate

__all__ = [
    "__version__",
    "load_dataset",
    "list_datasets",
    "registry_frame",
    "UnknownDatasetError",
    "Store",
    "ValidationError",
    "validate",
    "to_thicket",
    "get_table",
    "TABLES",
    "BENCHMARK_RUNS",
    "APP_PROFILES",
    "COUNTERS_TABLE",
    "XammError",
]
