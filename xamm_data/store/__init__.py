"""The Delta store: :class:`~xamm_data.store.store.Store` over the table log (:mod:`.log`,
:mod:`.delta_log`), reading, writing, appending and checking (:mod:`.read`, :mod:`.write`,
:mod:`.append`, :mod:`.verify`), the self-describing Parquet files (:mod:`.files`),
locations, per-configuration counts and write reports. Imports the tables and the base.
"""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

# what ``xamm_data.store`` exports (its main module's names), loaded on first use
_PUBLIC = {
    "CorruptDataError": "xamm_data.store.store",
    "CorruptLogError": "xamm_data.store.store",
    "PartitionReport": "xamm_data.store.store",
    "Store": "xamm_data.store.store",
    "TableLocation": "xamm_data.store.store",
    "WriteReport": "xamm_data.store.store",
    "as_store": "xamm_data.store.store",
    "dedupe_sources": "xamm_data.store.store",
    "migrate_legacy": "xamm_data.store.store",
    "read_parquet_checked": "xamm_data.store.store",
    "renumber_trials": "xamm_data.store.store",
}
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
__all__ = sorted(_PUBLIC)  # noqa: PLE0605
