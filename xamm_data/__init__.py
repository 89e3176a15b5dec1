"""xamm_data: validated, versioned Parquet datasets of HPC performance runs.

Public entry points::

    from xamm_data import load_dataset, list_datasets, Store
    df = load_dataset("quartz")                       # benchmark_runs of quartz
    prof = load_dataset("quartz", kind="app_profiles")
    tk = to_thicket(df)              # a Thicket (xamm_ingest.from_thicket goes back)

Every error xamm raises on purpose, in any of its packages, derives from :class:`XammError`.

The rooms, bottom up (``docs/layout.md`` draws them from the imports): the shared base (this
folder's modules), :mod:`~xamm_data.tables` and :mod:`~xamm_data.machines`, :mod:`~xamm_data.store`,
:mod:`~xamm_data.hub`, then :mod:`~xamm_data.cli` and the use-cases over the store
(:mod:`~xamm_data.thicket`, :mod:`~xamm_data.stored_profiles`). The names below load on first use,
so ``xamm --help`` pays for none of them.
"""

import sys

from xamm_data import _moved
from xamm_data._lazy import lazy_exports
from xamm_data._version import __version__
from xamm_data.errors import XammError

_PUBLIC = {
    "load_dataset": "xamm_data.hub.datasets",
    "list_datasets": "xamm_data.hub.datasets",
    "registry_frame": "xamm_data.hub.datasets",
    "UnknownDatasetError": "xamm_data.hub.datasets",
    "Store": "xamm_data.store.store",
    "ValidationError": "xamm_data.tables.validate",
    "validate": "xamm_data.tables.validate",
    "to_thicket": "xamm_data.thicket",
    "get_table": "xamm_data.tables.schema",
    "TABLES": "xamm_data.tables.schema",
    "BENCHMARK_RUNS": "xamm_data.tables.schema",
    "APP_PROFILES": "xamm_data.tables.schema",
    "COUNTERS_TABLE": "xamm_data.tables.schema",
}
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
_moved.install(sys.modules[__name__], set(_PUBLIC))


__all__ = ["__version__", "XammError", *_PUBLIC]  # noqa: PLE0604
