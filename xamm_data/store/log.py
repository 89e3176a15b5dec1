"""A store's tables as Delta logs: where each lives, its versions and their live files (checked
against the head record xamm keeps), the commits that add versions, retried on a conflict, and the
one-time migration of xamm 0.2's layout. The base of :class:`~xamm_data.store.store.Store`."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import time
from datetime import datetime
from pathlib import Path

import polars as pl

from xamm_data._version import __version__
from xamm_data.atomic import locked
from xamm_data.errors import type_name
from xamm_data.paths import default_store_root
from xamm_data.store.counts import ConfigCounts
from xamm_data.store.delta_log import (
    LOG_DIR,
    CorruptLogError,
    created_files,
    diagnose,
    head_problems,
    nesting_problems,
    write_head,
)
from xamm_data.store.files import delta_schema, parquet_bytes, write_part
from xamm_data.store.locations import TableLocation, is_uri
from xamm_data.store.memory import release_freed_memory
from xamm_data.store.rows import read_parquet_checked, renumber_trials
from xamm_data.tables.schema import DATA_KINDS, TableSchema, get_table
from xamm_data.tables.validate import validate

__all__ = ["LEGACY_FILE", "MAX_COMMIT_ATTEMPTS", "StoreLog", "data_schema", "migrate_legacy"]

LEGACY_FILE = "data.parquet"  # xamm 0.2's one file per partition, migrated on first use
MAX_COMMIT_ATTEMPTS = 50
# delta-rs writes a checkpoint after every this many versions unless a table says otherwise
DEFAULT_CHECKPOINT_INTERVAL = 100

log = logging.getLogger(__name__)


def data_schema(kind: str) -> TableSchema:
    """The schema of data table ``kind``; a ``ValueError`` names the valid ones.

    Args:
        kind: ``benchmark_runs`` or ``app_profiles``.

    Returns:
        Its schema.
    """
    if kind not in DATA_KINDS:
        raise ValueError(f"unknown data kind {kind!r}; expected one of {', '.join(DATA_KINDS)}")
    return get_table(kind)


def add_action(rel: str, size: int, machine: str, now: int, data_change: bool, rows: int):
    """The Delta log's action adding one data file of a machine's partition.

    Args:
        rel: the file's path in the table.
        size: its bytes.
        machine: its partition.
        now: the commit's time, ms since the epoch.
        data_change: whether the commit changes rows (False: a compaction).
        rows: the rows it holds (the log's statistics).

    Returns:
        A delta-rs ``AddAction``.
    """
    from deltalake.transaction import AddAction  # delta-rs: imported on use

    stats = json.dumps({"numRecords": rows})
    return AddAction(rel, size, {"machine": machine}, now, data_change, stats)


class StoreLog:
    """Where a store's tables live and their versions (see the module docstring)."""

    def __init__(self, root: str | Path | None = None):
        root = default_store_root() if root is None else root
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(
                f"store: {type_name(root, article=True)}; expected a folder or an s3:// URI"
            )
        if not os.fspath(root):  # Path("") is the current folder: an unset variable's store
            raise ValueError("store: an empty path; expected a folder or an s3:// URI")
        # a local directory, or an object-store URI (s3://...)
        self.root = root if is_uri(root) else Path(root)
        # rows per configuration kept between this store's own appends (store_append)
        self.config_counts = ConfigCounts()
        # table -> the version whose checkpoint a commit left to its writer (checkpoint=False)
        self._owed: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    def location(self, kind: str) -> TableLocation:
        data_schema(kind)
        return TableLocation.of(self.root, kind)

    def _table(self, kind: str, version: int | None = None, as_of: datetime | None = None):
        """The Delta table of ``kind`` at ``version`` / ``as_of`` (latest by default), or None if
        there is none."""
        return self.snapshot(kind, version, as_of)[0]

    def snapshot(self, kind: str, version: int | None = None, as_of: datetime | None = None):
        """(Delta table, its live files) of ``kind`` at ``version`` / ``as_of``; (None, no files)
        before the first write. The log is checked on the way: an unreadable log, or a latest
        version that is not the one xamm last committed, raises :class:`CorruptLogError` naming the
        table and log file."""
        loc = self.location(kind)
        migrate_legacy(self, kind)
        if not loc.has_log():
            if version is not None or as_of is not None:
                raise FileNotFoundError(
                    f"the store {self.root} has no {kind} table, so no version of it"
                )
            return None, _file_frame(None)
        if problems := nesting_problems(kind, loc, version, every=as_of is not None):
            raise CorruptLogError(problems[0] + _more(problems))
        # delta-rs: imported when a table is opened (a store with none, predict's, never loads it)
        from deltalake import DeltaTable

        with self._log_guard(kind):
            dt = DeltaTable(loc.uri, storage_options=loc.storage_options or None)
            if version is not None:
                if not 0 <= version <= dt.version():
                    raise FileNotFoundError(
                        f"{kind} in {self.root} has versions 0..{dt.version()}, not {version}"
                    )
                dt.load_as_version(version)
            elif as_of is not None:
                dt.load_as_version(as_of)
            files = _file_frame(dt)
        if (
            version is None
            and as_of is None
            and (problems := head_problems(kind, loc, dt.version(), files))
        ):
            problems = diagnose(kind, loc) + problems  # the altered entry, where it can be named
            raise CorruptLogError(problems[0] + _more(problems))
        return dt, files

    @contextlib.contextmanager
    def _log_guard(self, kind: str):
        """Turn delta-rs failing on a log (an error, or a Rust panic) into one CorruptLogError
        naming the file."""
        try:
            yield
        except BaseException as e:  # pyo3's PanicException derives from BaseException
            if not _from_the_log_reader(e):
                raise
            loc = self.location(kind)
            problems = diagnose(kind, loc)
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            if not problems:
                problems = [f"{kind}: the log in {loc.display(LOG_DIR)} cannot be read: {first}"]
            raise CorruptLogError(problems[0] + _more(problems)) from e

    def table_metadata(self, kind: str) -> dict:
        """The table's own metadata.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).

        Returns:
            Table, schema version, primary key and units ({} before the first write).
        """
        dt = self._table(kind)
        if dt is None:
            return {}
        with self._log_guard(kind):
            return json.loads(dt.metadata().description or "{}")

    def version(self, kind: str) -> int | None:
        """The latest version of ``kind``'s table.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).

        Returns:
            The version, or None before the first write.
        """
        dt = self._table(kind)
        return None if dt is None else dt.version()

    def history(self, kind: str) -> pl.DataFrame:
        """One row per commit of ``kind``: version, time, operation and what it ingested.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).

        Returns:
            The commits, newest first.
        """
        dt = self._table(kind)
        # history shows every entry: check all
        if dt is not None and (problems := diagnose(kind, self.location(kind))):
            raise CorruptLogError(problems[0] + _more(problems))
        with self._log_guard(kind):
            commits = [] if dt is None else dt.history()
        rows = [
            {
                "version": h["version"],
                "timestamp": datetime.fromtimestamp(h["timestamp"] / 1000).isoformat(
                    timespec="seconds"
                ),
                "operation": h.get("operation"),
                "xamm": h.get("xamm"),
            }
            for h in commits
        ]
        return pl.DataFrame(
            rows,
            schema={
                "version": pl.Int64,
                "timestamp": pl.String,
                "operation": pl.String,
                "xamm": pl.String,
            },
        )

    def live_files(
        self, kind: str, version: int | None = None, as_of: datetime | None = None
    ) -> pl.DataFrame:
        """(machine, path, size, rows) of every data file of ``kind`` at that version."""
        return self.snapshot(kind, version, as_of)[1]

    def retrying(self, kind: str, attempt_once):
        """(``attempt_once()``'s result, attempts): re-run from a fresh read while a concurrent
        commit conflicts."""
        from deltalake.exceptions import CommitFailedError  # delta-rs: imported on use

        # what the caller read and let go leaves before delta-rs's commit adds its own memory
        release_freed_memory()
        # jitter only: which writer retries first never changes what is stored
        rng = random.Random()
        for attempt in range(1, MAX_COMMIT_ATTEMPTS + 1):
            try:
                return attempt_once(), attempt
            except CommitFailedError:
                time.sleep(min(2.0, 0.02 * 2 ** min(attempt, 6)) * (0.5 + rng.random()))
        raise RuntimeError(
            f"{kind} in {self.root}: gave up after {MAX_COMMIT_ATTEMPTS} conflicting commits"
        )

    def commit_actions(self, kind: str, dt, actions: list, props, checkpoint: bool = True) -> int:
        """Commit ``actions`` in one transaction (creating the table on the first write); the new
        version.

        Args:
            kind: a data table.
            dt: its Delta table at the version the actions were made against (None: no table
                yet).
            actions: delta-rs add and remove actions.
            props: the commit's properties.
            checkpoint: write the checkpoint delta-rs writes after a commit that ends a
                ``delta.checkpointInterval`` of versions; with False it is owed instead, and the
                writer writes it with :meth:`write_owed_checkpoint` once it has let go of its
                batch (the checkpoint's memory then comes on top of less).
        """
        from deltalake.transaction import (  # delta-rs: imported on use
            PostCommitHookProperties,
            create_table_with_add_actions,
        )

        hooks = None if checkpoint else PostCommitHookProperties(create_checkpoint=False)
        if dt is None:
            # delta-rs: imported on use
            from deltalake.exceptions import CommitFailedError, DeltaError

            loc = self.location(kind)
            try:
                create_table_with_add_actions(
                    loc.uri,
                    delta_schema(get_table(kind)),
                    actions,
                    mode="error",
                    partition_by=["machine"],
                    storage_options=loc.storage_options or None,
                    commit_properties=props,
                    post_commithook_properties=hooks,
                    name=kind,
                    description=_table_description(kind),
                )
            # another writer created the table first: re-read and merge again
            except DeltaError as e:
                if "already exists" in str(e):
                    raise CommitFailedError(str(e)) from e
                raise
            self._record_head(kind, created=True)
            return 0
        dt.create_write_transaction(
            actions,
            mode="append",
            schema=delta_schema(get_table(kind)),
            partition_by=["machine"],
            commit_properties=props,
            post_commithook_properties=hooks,
        )
        version = self._record_head(kind, dt)
        if not checkpoint and (version + 1) % _checkpoint_interval(dt) == 0:
            self._owed[kind] = version
        return version

    def write_owed_checkpoint(self, kind: str) -> int | None:
        """Write the checkpoint a commit of ``kind`` with ``checkpoint=False`` owes, at the
        version that owes it (what delta-rs would have written after that commit). A checkpoint
        only spares readers a replay of the log: one that cannot be written is logged, and the
        commit stands.

        Args:
            kind: a data table.

        Returns:
            The version checkpointed, or None (none owed, or not written).
        """
        from deltalake import DeltaTable  # delta-rs: imported on use

        version = self._owed.pop(kind, None)
        if version is None:
            return None
        loc = self.location(kind)
        try:
            DeltaTable(
                loc.uri, version=version, storage_options=loc.storage_options or None
            ).create_checkpoint()
        except Exception as e:
            if not (isinstance(e, OSError) or _from_the_log_reader(e)):
                raise
            log.warning("%s in %s: no checkpoint at version %d (%s)", kind, self.root, version, e)
            return None
        return version

    def _record_head(self, kind: str, dt=None, created: bool = False) -> int:
        """Write the head record of the table's latest version (just committed; ``dt``, the table
        the commit went through, is brought up to it rather than re-read); that version.

        Args:
            kind: the table.
            dt: the Delta table the commit went through (None: opened here).
            created: the commit created the table: its first version's files are read from its
                log entry instead of opening the table.
        """
        loc = self.location(kind)
        if created:
            entry, files = created_files(kind, loc)
            write_head(kind, loc, 0, files, entry)
            return 0
        from deltalake import DeltaTable  # delta-rs: imported on use

        with self._log_guard(kind):
            if dt is None:
                dt = DeltaTable(loc.uri, storage_options=loc.storage_options or None)
            else:
                dt.update_incremental()
            files = _file_frame(dt)
        write_head(kind, loc, dt.version(), files)
        return dt.version()


def _checkpoint_interval(dt) -> int:
    """The versions between checkpoints a Delta table asks for (``delta.checkpointInterval``;
    delta-rs's default, 100, when it names none)."""
    value = dt.metadata().configuration.get("delta.checkpointInterval")
    return int(value) if value else DEFAULT_CHECKPOINT_INTERVAL


def _from_the_log_reader(e: BaseException) -> bool:
    """Whether delta-rs (its errors, or a Rust panic through pyo3) or pyarrow reading its actions
    raised ``e``."""
    module = type(e).__module__.split(".")[0]
    return (
        module in ("_internal", "deltalake", "pyarrow", "pyo3_runtime")
        or type(e).__name__ == "PanicException"
    )


def _more(problems: list[str]) -> str:
    return (
        (f" (and {len(problems) - 1} more problem(s); `xamm datasets verify` lists them)")
        if len(problems) > 1
        else ""
    )


def _table_description(kind: str) -> str:
    """The table's own metadata (its Delta ``description``, JSON; delta-rs accepts no custom
    properties): what it holds, in which schema version, key and units."""
    schema = get_table(kind)
    return json.dumps(
        {
            "table": kind,
            "schema_version": schema.version,
            "primary_key": list(schema.primary_key),
            "units": schema.units,
            "xamm_version": __version__,
        },
        sort_keys=True,
    )


def _file_frame(dt) -> pl.DataFrame:
    """(machine, path, size, rows) of every data file of an opened Delta table (an empty frame for
    None)."""
    a = pl.DataFrame(dt.get_add_actions(flatten=True)) if dt is not None else pl.DataFrame()
    if a.is_empty():
        return pl.DataFrame(
            schema={"machine": pl.String, "path": pl.String, "size": pl.Int64, "rows": pl.Int64}
        )
    return a.select(
        pl.col("partition.machine").alias("machine"),
        "path",
        pl.col("size_bytes").alias("size"),
        pl.col("num_records").cast(pl.Int64).alias("rows"),
    ).sort("machine", "path")


def migrate_legacy(store: StoreLog, kind: str) -> None:
    """Move a table in xamm 0.2's layout (``machine=<m>/data.parquet``, no log) into a Delta table,
    once: one commit holds every machine, then the old files move to ``<root>/.pre-delta/``. Safe to
    interrupt."""
    if is_uri(store.root):  # xamm 0.2 wrote local stores only
        return
    root = Path(store.root)
    d = root / kind
    if not any(d.glob(f"machine=*/{LEGACY_FILE}")):
        return
    # delta-rs: imported on use
    from deltalake.transaction import CommitProperties, create_table_with_add_actions

    schema = get_table(kind)
    with locked(root / f".{kind}.migrate.lock"):
        legacy = sorted(d.glob(f"machine=*/{LEGACY_FILE}"))
        if legacy and not (d / "_delta_log").is_dir():
            now, actions, rows = int(time.time() * 1000), [], {}
            for p in legacy:
                machine = p.parent.name.split("=", 1)[1]
                df = validate(renumber_trials(read_parquet_checked(p, kind), schema), schema)
                rel, size = write_part(
                    TableLocation.of(store.root, kind),
                    machine,
                    parquet_bytes(df.sort(list(schema.primary_key), nulls_last=True), schema),
                )
                actions.append(add_action(rel, size, machine, now, True, df.height))
                rows[machine] = df.height
            what = {
                "migrated_from": "xamm 0.2 (one Parquet file per machine)",
                "rows": rows,
                "xamm_version": __version__,
            }
            create_table_with_add_actions(
                str(d),
                delta_schema(schema),
                actions,
                mode="error",
                partition_by=["machine"],
                name=kind,
                description=_table_description(kind),
                commit_properties=CommitProperties(custom_metadata={"xamm": json.dumps(what)}),
            )
            store._record_head(kind, created=True)
        for p in legacy:  # kept, not deleted: the migration never loses the only copy
            backup = root / ".pre-delta" / kind / p.parent.name / LEGACY_FILE
            backup.parent.mkdir(parents=True, exist_ok=True)
            p.replace(backup)
