"""The dataset store: one Delta Lake table per kind, partitioned by machine.

Layout (``root`` defaults to ``$XAMM_HOME/store``)::

    <root>/<kind>/_delta_log/...                           the table's versions (delta-rs)
    <root>/<kind>/machine=<machine>/part-<sha256>.parquet  the rows

``kind`` is a data table (``benchmark_runs``, ``app_profiles``). The machine stays a real column
inside each file. Files are zstd-compressed, rows sorted by primary key, and the Parquet key-value
metadata key ``xamm`` holds the table name, schema version, units, primary key, the number of
source files and the first thousand of them, so a file describes itself without xamm. Each file
is named by its SHA-256 and checked against it on every read (:mod:`xamm_data.store.files`).

A write is one Delta commit, whatever the number of machines: it validates the whole batch, merges
it into the partitions it touches (rows from a source already there, same SHA-256, are replaced,
never duplicated; ``trial`` is renumbered over each partition so batches keep distinct trials),
writes their new files, then commits "remove the old files, add the new" in one transaction
carrying what was ingested. A process killed at any moment leaves the previous version or the new
one. Concurrent writers (other processes, other hosts on a shared file system) retry on a
conflicting commit, re-reading first.

``read``/``scan``/``load_dataset`` take ``version=`` or ``as_of=`` (time travel);
:meth:`Store.history` lists the commits. A store in the layout of xamm 0.2
(``machine=<m>/data.parquet`` without a log) is migrated on first use, once, its old files kept
under ``<root>/.pre-delta/``.
"""

from __future__ import annotations

from pathlib import Path

from xamm_data.store.delta_log import CorruptLogError
from xamm_data.store.files import CorruptDataError
from xamm_data.store.locations import TableLocation
from xamm_data.store.log import migrate_legacy
from xamm_data.store.reports import PartitionReport, WriteReport
from xamm_data.store.rows import dedupe_sources, read_parquet_checked, renumber_trials
from xamm_data.store.verify import StoreVerifying
from xamm_data.store.write import StoreWriting


class Store(StoreWriting, StoreVerifying):
    """A machine-partitioned store of xamm tables, one Delta Lake table per kind (see the module
    docstring). Its concerns live in their own modules: the log and versions
    (:mod:`~xamm_data.store.log`), reading (:mod:`~xamm_data.store.read`), writing and
    housekeeping (:mod:`~xamm_data.store.write`, :mod:`~xamm_data.store.append`) and checking
    (:mod:`~xamm_data.store.verify`)."""

    def table_dir(self, kind: str) -> Path | str:
        """Where ``kind``'s Delta table lives.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).

        Returns:
            A directory, or a URI on an object store.
        """
        loc = self.location(kind)
        return loc.local if loc.local is not None else loc.uri


def as_store(store: Store | str | Path | None) -> Store:
    """A :class:`Store` from a store, its root directory, or None (the default root,
    ``$XAMM_HOME/store``)."""
    return store if isinstance(store, Store) else Store(store)


__all__ = [
    "CorruptDataError",
    "CorruptLogError",
    "PartitionReport",
    "Store",
    "TableLocation",
    "WriteReport",
    "as_store",
    "dedupe_sources",
    "migrate_legacy",
    "read_parquet_checked",
    "renumber_trials",
]
