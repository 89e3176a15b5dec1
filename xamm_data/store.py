"""The dataset store: one Delta Lake table per kind, partitioned by machine.

Layout (``root`` defaults to ``$XAMM_HOME/store``)::

    <root>/<kind>/_delta_log/...                           the table's versions (delta-rs)
    <root>/<kind>/machine=<machine>/part-<sha256>.parquet  the rows

``kind`` is a data table (``benchmark_runs``, ``app_profiles``). The machine stays a real column
inside each file. Files are zstd-compressed, rows sorted by primary key, and the Parquet key-value
metadata key ``xamm`` holds the table name, schema version, units, primary key, the number of
source files and the first thousand of them, so a file describes itself without xamm. Each file
is named by its SHA-256 and checked against it on every read (:mod:`xamm_data.table_files`).

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

import contextlib
import io
import json
import random
import time
from datetime import datetime
from pathlib import Path
from typing import Literal, overload

import polars as pl

from xamm_data._version import __version__
from xamm_data.atomic import locked
from xamm_data.delta_log import (
    LOG_DIR,
    CorruptLogError,
    diagnose,
    head_problems,
    log_prev,
    write_head,
)
from xamm_data.locations import TableLocation, is_uri
from xamm_data.paths import default_store_root
from xamm_data.schema import DATA_KINDS, TableSchema, get_table
from xamm_data.store_append import (
    ConfigCounts,
    append_once,
    numbered_within,
    present_sources,
    source_keys,
)
from xamm_data.table_files import (
    METADATA_KEY,
    CorruptDataError,
    delta_schema,
    footer_metadata,
    footer_rows,
    parquet_bytes,
    read_part,
    sweep_temporaries,
    write_part,
)
from xamm_data.validate import ValidationError, conform, validate
from xamm_data.write_reports import PartitionReport, WriteReport, commit_record, config_key

LEGACY_FILE = "data.parquet"  # xamm 0.2's one file per partition, migrated on first use
MAX_COMMIT_ATTEMPTS = 50
_TRIAL_ORDER = ("run_date", "source_path", "source_sha256", "trial")


def renumber_trials(df: pl.DataFrame, schema: TableSchema) -> pl.DataFrame:
    """Set ``trial`` to the 0-based rank of each row among rows of identical configuration.

    Order: run date (unknown last), then source path, then source hash, then the reader's own
    trial number, so the numbering does not depend on ingest order.
    """
    if "trial" not in schema.primary_key or df.is_empty():
        return df
    key = config_key(schema)
    return df.sort(list(_TRIAL_ORDER), nulls_last=True).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over(key).alias("trial")
    )


def dedupe_sources(df: pl.DataFrame, schema: TableSchema) -> pl.DataFrame:
    """Keep one copy of rows that came from byte-identical files (same hash and configuration).

    The same bytes under two paths are one measurement, not two trials; the first path wins.
    """
    if df.is_empty():
        return df
    return df.sort("source_path").unique(
        subset=[*config_key(schema), "source_sha256"], keep="first", maintain_order=True
    )


class Store:
    """A machine-partitioned store of xamm tables, one Delta Lake table per kind (see the module
    docstring)."""

    def __init__(self, root: str | Path | None = None):
        root = default_store_root() if root is None else root
        # a local directory, or an object-store URI (s3://...)
        self.root = root if is_uri(root) else Path(root)
        # rows per configuration kept between this store's own appends (store_append)
        self.config_counts = ConfigCounts()

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    def _loc(self, kind: str) -> TableLocation:
        self._check_kind(kind)
        return TableLocation.of(self.root, kind)

    @staticmethod
    def _check_kind(kind: str) -> TableSchema:
        if kind not in DATA_KINDS:
            raise ValueError(f"unknown data kind {kind!r}; expected one of {', '.join(DATA_KINDS)}")
        return get_table(kind)

    def table_dir(self, kind: str) -> Path | str:
        """Where ``kind``'s Delta table lives.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).

        Returns:
            A directory, or a URI on an object store.
        """
        loc = self._loc(kind)
        return loc.local if loc.local is not None else loc.uri

    # -- versions ---------------------------------------------------------------------------------
    def _table(self, kind: str, version: int | None = None, as_of: datetime | None = None):
        """The Delta table of ``kind`` at ``version`` / ``as_of`` (latest by default), or None if
        there is none."""
        return self._snapshot(kind, version, as_of)[0]

    def _snapshot(self, kind: str, version: int | None = None, as_of: datetime | None = None):
        """(Delta table, its live files) of ``kind`` at ``version`` / ``as_of``; (None, no files)
        before the first write. The log is checked on the way: an unreadable log, or a latest
        version that is not the one xamm last committed, raises :class:`CorruptLogError` naming the
        table and log file."""
        from deltalake import DeltaTable  # delta-rs: imported when a table is opened

        loc = self._loc(kind)
        migrate_legacy(self, kind)
        if not loc.has_log():
            if version is not None or as_of is not None:
                raise FileNotFoundError(
                    f"the store {self.root} has no {kind} table, so no version of it"
                )
            return None, _file_frame(None)
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
            loc = self._loc(kind)
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
        if dt is not None and (problems := diagnose(kind, self._loc(kind))):
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

    def _files(
        self, kind: str, version: int | None = None, as_of: datetime | None = None
    ) -> pl.DataFrame:
        """(machine, path, size, rows) of every data file of ``kind`` at that version."""
        return self._snapshot(kind, version, as_of)[1]

    # -- reading ----------------------------------------------------------------------------------
    def machines(self, kind: str = "benchmark_runs", *, version: int | None = None) -> list[str]:
        """Machines with rows of ``kind`` in this store.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            version: the table version to list (default: the latest).

        Returns:
            The machine ids, sorted.
        """
        return sorted(set(self._files(kind, version).get_column("machine")))

    def has(self, kind: str, machine: str) -> bool:
        """Whether ``machine`` has rows of ``kind`` in this store.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            machine: a machine id.

        Returns:
            True when the latest version holds a data file of that partition.
        """
        return machine in self.machines(kind)

    def row_counts(self, kind: str) -> dict[str, int]:
        """Rows per machine of ``kind``, from the log's file statistics (no data file is read).

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).

        Returns:
            Machine id -> rows.
        """
        rows = self._files(kind).group_by("machine").agg(pl.col("rows").sum()).sort("machine")
        return dict(rows.iter_rows())

    def partition_files(
        self, kind: str, machine: str, *, version: int | None = None
    ) -> list[Path | str]:
        """The data files holding ``machine``'s rows of ``kind``.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            machine: a machine id.
            version: the table version (default: the latest).

        Returns:
            Paths, or URIs on an object store.
        """
        f = self._files(kind, version).filter(pl.col("machine") == machine)
        loc = self._loc(kind)
        return [loc.where(p) for p in f.get_column("path")]

    def partition_path(self, kind: str, machine: str) -> Path | str:
        """The single data file of ``machine``'s partition (``xamm store optimize`` makes it
        one).

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            machine: a machine id.

        Returns:
            Its path, or URI on an object store.
        """
        files = self.partition_files(kind, machine)
        if len(files) != 1:
            raise FileNotFoundError(
                f"{kind} for {machine!r} in {self.root} has {len(files)} data "
                "files, not one" + ("; `xamm store optimize` merges them" if files else "")
            )
        return files[0]

    def _read_machine(
        self,
        kind: str,
        schema: TableSchema,
        files: pl.DataFrame,
        machine: str,
        foreign_ok: bool = False,
    ) -> pl.DataFrame:
        loc = self._loc(kind)
        parts = []
        for path, size, rows in (
            files.filter(pl.col("machine") == machine).select("path", "size", "rows").iter_rows()
        ):
            data = read_part(loc, path, table=kind, machine=machine, foreign_ok=foreign_ok)
            part = pl.read_parquet(io.BytesIO(data), hive_partitioning=False)
            if problem := _entry_problem(kind, loc, machine, path, size, rows, len(data), part):
                raise CorruptLogError(problem)
            parts.append(part.with_columns(pl.lit(path).alias("_file")))
        if not parts:
            return schema.empty()
        # a file another tool wrote may keep the partition value in its path only, as Delta allows
        parts = [
            p
            if schema.partition_by in p.columns
            else p.with_columns(pl.lit(machine).alias(schema.partition_by))
            for p in parts
        ]
        if len(parts) > 1 and (
            problem := _duplicate_problem(
                kind, loc, machine, pl.concat([p.select("source_sha256", "_file") for p in parts])
            )
        ):
            raise CorruptLogError(problem)
        df = pl.concat([conform(p.drop("_file"), schema) for p in parts], how="vertical")
        return df.sort(list(schema.primary_key), nulls_last=True) if len(parts) > 1 else df

    @overload
    def read(
        self,
        kind: str,
        machine: str,
        *,
        lazy: Literal[False] = ...,
        version: int | None = ...,
        as_of: datetime | None = ...,
    ) -> pl.DataFrame: ...

    @overload
    def read(
        self,
        kind: str,
        machine: str,
        *,
        lazy: Literal[True],
        version: int | None = ...,
        as_of: datetime | None = ...,
    ) -> pl.LazyFrame: ...

    @overload
    def read(
        self,
        kind: str,
        machine: str,
        *,
        lazy: bool,
        version: int | None = ...,
        as_of: datetime | None = ...,
    ) -> pl.DataFrame | pl.LazyFrame: ...

    def read(
        self,
        kind: str,
        machine: str,
        *,
        lazy: bool = False,
        version: int | None = None,
        as_of: datetime | None = None,
    ) -> pl.DataFrame | pl.LazyFrame:
        """One machine's rows of ``kind``, every file verified before it is parsed.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            machine: a machine id.
            lazy: return a ``LazyFrame``.
            version: the table version to read (time travel).
            as_of: read the table as it was at this time.

        Returns:
            The rows, sorted by the table's key.
        """
        schema = self._check_kind(kind)
        files = self._files(kind, version, as_of)
        if machine not in set(files.get_column("machine")):
            raise FileNotFoundError(
                f"no {kind} for machine {machine!r} in store {self.root}"
                + (f" at version {version}" if version is not None else "")
            )
        df = self._read_machine(kind, schema, files, machine)
        return df.lazy() if lazy else df

    def scan(
        self,
        kind: str,
        *,
        machine: str | None = None,
        version: int | None = None,
        as_of: datetime | None = None,
    ) -> pl.LazyFrame:
        """Every machine's rows of ``kind`` (or one machine's), lazily.

        Read through polars' ``scan_delta`` once every data file it can read has been checked
        against its checksum (one at a time: memory is one file's, not the table's). Filters and
        column selections on the result reach the Parquet reader (predicate and projection
        pushdown); ``machine`` prunes the other partitions before anything is read.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            machine: one machine's partition only.
            version: the table version to read (time travel).
            as_of: read the table as it was at this time.

        Returns:
            The rows, sorted by machine and key.
        """
        schema = self._check_kind(kind)
        dt, files = self._snapshot(kind, version, as_of)
        if machine is not None:
            if machine not in set(files.get_column("machine")):
                raise FileNotFoundError(
                    f"no {kind} for machine {machine!r} in store {self.root}"
                    + (f" at version {version}" if version is not None else "")
                )
            files = files.filter(pl.col("machine") == machine)
        if files.is_empty():
            return schema.empty().lazy()
        loc = self._loc(kind)
        for part_of, path, size, rows in files.select(
            "machine", "path", "size", "rows"
        ).iter_rows():
            # raises before anything is parsed
            data = read_part(loc, path, table=kind, machine=part_of)
            if problem := _entry_problem(
                kind, loc, part_of, path, size, rows, len(data), footer_rows(data)
            ):
                raise CorruptLogError(problem)
        lf = pl.scan_delta(
            loc.uri, version=dt.version(), storage_options=loc.storage_options or None
        )
        if machine is not None:
            lf = lf.filter(pl.col("machine") == machine)
        have = set(lf.collect_schema().names())
        cols = [
            pl.col(c).cast(t) if c in have else pl.lit(None, dtype=t).alias(c)
            for c, t in schema.polars_schema.items()
        ]
        return lf.select(cols).sort(["machine", *schema.primary_key], nulls_last=True)

    def metadata(self, kind: str, machine: str) -> dict:
        """The ``xamm`` key-value metadata of a machine's (first) data file.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            machine: a machine id.

        Returns:
            Table name, schema version, units, primary key, the number of sources and the first
            of them, as written.
        """
        rel = self._files(kind).filter(pl.col("machine") == machine).get_column("path")[0]
        data = read_part(self._loc(kind), rel, table=kind, machine=machine)
        md = footer_metadata(data)
        if md is None:
            raise CorruptDataError(f"{kind} / {machine}: {rel} has no {METADATA_KEY!r} metadata")
        return md

    def verify(self, kind: str | None = None) -> list[str]:
        """Check the latest version of each table, log and data.

        Every log entry parses and replays consistently, the newest version is the one xamm
        committed, every live file is there with its checksum, size and row count, and no row is
        held twice.

        Args:
            kind: one table (default: every table in the store).

        Returns:
            The problems found, one line each (empty: all good).
        """
        problems = []
        for k in [kind] if kind else list(DATA_KINDS):
            loc = self._loc(k)
            if not loc.has_log():
                continue
            log_problems = diagnose(k, loc)
            problems += log_problems
            try:
                _, files = self._snapshot(k)
            except CorruptLogError as e:
                problems += [] if log_problems else [str(e)]
                continue
            problems += self._verify_files(k, files)
        return problems

    def _verify_files(self, kind: str, files: pl.DataFrame) -> list[str]:
        loc, problems = self._loc(kind), []
        for machine in files.get_column("machine").unique().sort():
            parts = []
            for path, size, rows in (
                files.filter(pl.col("machine") == machine)
                .select("path", "size", "rows")
                .iter_rows()
            ):
                try:
                    data = read_part(loc, path, table=kind, machine=machine)
                except CorruptDataError as e:
                    problems.append(str(e))
                    continue
                part = pl.read_parquet(io.BytesIO(data), hive_partitioning=False)
                if problem := _entry_problem(kind, loc, machine, path, size, rows, len(data), part):
                    problems.append(problem)
                parts.append(part.select("source_sha256").with_columns(pl.lit(path).alias("_file")))
            if len(parts) > 1 and (
                problem := _duplicate_problem(kind, loc, machine, pl.concat(parts))
            ):
                problems.append(problem)
        return problems

    # -- writing ----------------------------------------------------------------------------------
    def write(self, df: pl.DataFrame, kind: str) -> WriteReport:
        """Validate ``df`` as table ``kind`` and upsert it into its machine partitions, in one
        commit.

        Args:
            df: rows of the table.
            kind: a data table (``benchmark_runs``, ``app_profiles``).

        Returns:
            Per partition, the rows before, replaced, added and after, and the new version.

        Raises:
            ValidationError: a rule fails; nothing is written.
        """
        schema = self._check_kind(kind)
        new = (
            validate(renumber_trials(conform(df, schema), schema), schema)
            if df.height
            else schema.empty()
        )
        report = WriteReport(kind=kind)
        if new.is_empty():
            return report
        before = new.height
        new = dedupe_sources(new, schema)
        report.duplicate_sources_dropped = before - new.height
        sweep_temporaries(self._loc(kind))
        (report.partitions, report.version), report.attempts = self._retrying(
            kind, lambda: self._commit(new, schema)
        )
        return report

    def append(self, df: pl.DataFrame, kind: str, *, unheld_at: int | None = None) -> WriteReport:
        """Validate ``df`` as table ``kind`` and add the rows of sources the table does not hold
        yet, as one new data file per partition, in one commit; nothing already there is rewritten
        (see :mod:`xamm_data.store_append`). ``trial`` continues after the rows the table holds,
        in the order of ``df``'s rows.

        Args:
            df: rows of the table.
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            unheld_at: a version of the table at which the caller has checked that none of
                ``df``'s sources is held (an archive ingest knows it of every batch it commits in
                turn): while that is still the latest version, the stored sources are not scanned
                again. Any other version, or None, scans them.

        Returns:
            Per partition, the rows before, added and after, and the new version (None when
            every source was already held).

        Raises:
            ValidationError: a rule fails; nothing is written.
        """
        schema = self._check_kind(kind)
        report = WriteReport(kind=kind)
        if df.is_empty():
            return report
        new = conform(df, schema)
        before = new.height
        # the first of byte-identical copies, in the order given (trials follow that order)
        new = new.unique(
            subset=[*config_key(schema), "source_sha256"], keep="first", maintain_order=True
        )
        new = validate(numbered_within(new, schema), schema)
        report.duplicate_sources_dropped = before - new.height
        sweep_temporaries(self._loc(kind))
        (report.partitions, report.version), report.attempts = self._retrying(
            kind, lambda: append_once(self, new, schema, unheld_at)
        )
        report.already_held = new.height - report.rows_written
        return report

    def sources_present(self, kind: str, sha256s: list[str]) -> set[str]:
        """Which sources (by SHA-256) the latest version of ``kind`` holds rows of.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            sha256s: the hashes to look for.

        Returns:
            The hashes found.
        """
        return present_sources(self, self._check_kind(kind).name, sha256s)

    def source_keys(self, kind: str) -> pl.DataFrame:
        """The first 128 bits of every source hash the latest version of ``kind`` holds, as
        sorted ``UInt64`` columns ``hi`` and ``lo`` (16 bytes a source: how a resumed ingest
        skips what is stored with a search in memory; two hashes that agree on 128 bits are one
        source, as the SHA-256 they come from already assumes).

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).

        Returns:
            The keys, sorted by ``hi`` then ``lo``.
        """
        return source_keys(self, self._check_kind(kind).name)

    def _retrying(self, kind: str, attempt_once):
        """(``attempt_once()``'s result, attempts): re-run from a fresh read while a concurrent
        commit conflicts."""
        from deltalake.exceptions import CommitFailedError  # delta-rs: imported on use

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

    def _commit(
        self, new: pl.DataFrame, schema: TableSchema
    ) -> tuple[list[PartitionReport], int | None]:
        """Merge ``new`` into the partitions it touches at the latest version, write their files,
        commit once."""
        # delta-rs: imported on use
        from deltalake.transaction import AddAction, CommitProperties, RemoveAction

        kind, d = schema.name, self._loc(schema.name)
        dt, files = self._snapshot(kind)
        now = int(time.time() * 1000)
        actions: list = []  # delta-rs AddAction and RemoveAction
        reports = []
        for machine in sorted(new.get_column(schema.partition_by).unique().to_list()):
            part_new = new.filter(pl.col(schema.partition_by) == machine)
            old = self._read_machine(kind, schema, files, machine)
            kept = old.filter(
                ~pl.col("source_sha256").is_in(
                    part_new.get_column("source_sha256").unique().implode()
                )
            )
            merged = renumber_trials(pl.concat([kept, part_new], how="vertical"), schema)
            merged = validate(merged, schema).sort(list(schema.primary_key), nulls_last=True)
            rel, size = write_part(d, machine, parquet_bytes(merged, schema))
            old_files = files.filter(pl.col("machine") == machine)
            reports.append(
                PartitionReport(
                    machine,
                    old.height,
                    old.height - kept.height,
                    part_new.height,
                    merged.height,
                    d.where(rel),
                )
            )
            if old_files.height == 1 and old_files.get_column("path")[0] == rel:
                continue  # the same bytes: nothing to commit for this machine
            actions += [
                RemoveAction(p, True, now, sz, {"machine": machine})
                for p, sz in old_files.select("path", "size").iter_rows()
            ]
            actions.append(
                AddAction(
                    rel,
                    size,
                    {"machine": machine},
                    now,
                    True,
                    json.dumps({"numRecords": merged.height}),
                )
            )
        if not actions:
            return reports, None
        props = CommitProperties(custom_metadata={"xamm": commit_record(new, reports, d, dt)})
        return reports, self._commit_actions(kind, dt, actions, props)

    def _commit_actions(self, kind: str, dt, actions: list, props) -> int:
        """Commit ``actions`` in one transaction (creating the table on the first write); the new
        version."""
        from deltalake.transaction import create_table_with_add_actions  # delta-rs: imported on use

        if dt is None:
            # delta-rs: imported on use
            from deltalake.exceptions import CommitFailedError, DeltaError

            loc = self._loc(kind)
            try:
                create_table_with_add_actions(
                    loc.uri,
                    delta_schema(get_table(kind)),
                    actions,
                    mode="error",
                    partition_by=["machine"],
                    storage_options=loc.storage_options or None,
                    commit_properties=props,
                    name=kind,
                    description=_table_description(kind),
                )
            # another writer created the table first: re-read and merge again
            except DeltaError as e:
                if "already exists" in str(e):
                    raise CommitFailedError(str(e)) from e
                raise
            self._record_head(kind)
            return 0
        dt.create_write_transaction(
            actions,
            mode="append",
            schema=delta_schema(get_table(kind)),
            partition_by=["machine"],
            commit_properties=props,
        )
        return self._record_head(kind, dt)

    def _record_head(self, kind: str, dt=None) -> int:
        """Write the head record of the table's latest version (just committed; ``dt``, the table
        the commit went through, is brought up to it rather than re-read); that version."""
        from deltalake import DeltaTable  # delta-rs: imported on use

        loc = self._loc(kind)
        with self._log_guard(kind):
            if dt is None:
                dt = DeltaTable(loc.uri, storage_options=loc.storage_options or None)
            else:
                dt.update_incremental()
            files = _file_frame(dt)
        write_head(kind, loc, dt.version(), files)
        return dt.version()

    # -- housekeeping -----------------------------------------------------------------------------
    def optimize(self, kind: str) -> dict[str, int]:
        """Compact each machine's partition of ``kind`` into one checksummed data file.

        The commit changes no rows; files another tool appended are validated and rewritten.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).

        Returns:
            Per machine, how many data files its partition had before.
        """
        return self._retrying(kind, lambda: self._optimize_once(kind))[0]

    def _optimize_once(self, kind: str) -> dict[str, int]:
        # delta-rs: imported on use
        from deltalake.transaction import AddAction, CommitProperties, RemoveAction

        schema = self._check_kind(kind)
        dt, files = self._snapshot(kind)
        foreign = ~pl.col("path").str.contains(r"part-[0-9a-f]{64}\.parquet$")
        counts = (
            files.group_by("machine")
            .agg(pl.len(), foreign.any().alias("_f"))
            .filter((pl.col("len") > 1) | pl.col("_f"))
            .select("machine", "len")
            .sort("machine")
        )
        if dt is None or counts.is_empty():
            return {}
        now = int(time.time() * 1000)
        actions: list = []  # delta-rs AddAction and RemoveAction
        for machine, _ in counts.iter_rows():
            df = validate(
                renumber_trials(
                    self._read_machine(kind, schema, files, machine, foreign_ok=True), schema
                ),
                schema,
            )
            rel, size = write_part(
                self._loc(kind),
                machine,
                parquet_bytes(df.sort(list(schema.primary_key), nulls_last=True), schema),
            )
            actions += [
                RemoveAction(p, False, now, sz, {"machine": machine})
                for p, sz in files.filter(pl.col("machine") == machine)
                .select("path", "size")
                .iter_rows()
            ]
            actions.append(
                AddAction(
                    rel,
                    size,
                    {"machine": machine},
                    now,
                    False,
                    json.dumps({"numRecords": df.height}),
                )
            )
        what = {"optimize": True, "log_prev": log_prev(self._loc(kind), dt.version())}
        self._commit_actions(
            kind, dt, actions, CommitProperties(custom_metadata={"xamm": json.dumps(what)})
        )
        return dict(counts.iter_rows())

    def vacuum(self, kind: str, *, retention_hours: int = 168, dry_run: bool = False) -> list[str]:
        """Remove data files no version within ``retention_hours`` needs, and dead writers'
        temporaries. Versions older than that can no longer be read.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            retention_hours: keep what the versions of these last hours need.
            dry_run: list, remove nothing.

        Returns:
            The files removed (or that would be).
        """
        dt = self._table(kind)
        gone = [] if dry_run else [str(p) for p in sweep_temporaries(self._loc(kind))]
        if dt is None:
            return gone
        return gone + list(
            dt.vacuum(
                retention_hours=retention_hours, dry_run=dry_run, enforce_retention_duration=False
            )
        )


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


def _entry_problem(
    kind: str,
    loc: TableLocation,
    machine: str,
    path: str,
    size,
    rows,
    n_bytes: int,
    part: pl.DataFrame | int,
) -> str | None:
    """What the log says of one live file that its bytes contradict: the partition in its path, its
    size, its row count, the machine its rows name (None: all agree). ``part`` is the parsed file or
    its row count."""
    where = loc.display(path)
    if path.startswith("machine=") and not path.startswith(f"machine={machine}/"):
        return (
            f"{kind} / {machine}: the log files {where} under machine "
            f"{machine!r}, its path says otherwise"
        )
    if size is not None and size != n_bytes:
        return f"{kind} / {machine}: the log says {where} holds {size} bytes; it holds {n_bytes}"
    n_rows = part if isinstance(part, int) else part.height
    if rows is not None and rows != n_rows:
        return f"{kind} / {machine}: the log says {where} holds {rows} rows; it holds {n_rows}"
    if (
        isinstance(part, pl.DataFrame)
        and "machine" in part.columns
        and (part.get_column("machine") != machine).any()
    ):
        return f"{kind} / {machine}: {where} holds rows of another machine than its partition's"
    return None


def _duplicate_problem(kind: str, loc: TableLocation, machine: str, df: pl.DataFrame) -> str | None:
    """Rows of one source held in two live files of a partition (``df`` has a ``_file`` column).
    xamm keeps each source's rows in one file, so this means a file a later version replaced is
    still live."""
    twice = df.filter(pl.col("_file").n_unique().over("source_sha256") > 1)
    if twice.is_empty():
        return None
    return (
        f"{kind} / {machine}: {twice.height} rows of "
        f"{twice.get_column('source_sha256').n_unique()} source(s) "
        "are held in more than one of the partition's "
        f"{df.get_column('_file').n_unique()} live files "
        f"({loc.display(LOG_DIR)}: a file a later version replaced is "
        "still live, so the log's remove action "
        "was altered or lost)"
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


def migrate_legacy(store: Store, kind: str) -> None:
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
    from deltalake.transaction import AddAction, CommitProperties, create_table_with_add_actions

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
                actions.append(
                    AddAction(
                        rel,
                        size,
                        {"machine": machine},
                        now,
                        True,
                        json.dumps({"numRecords": df.height}),
                    )
                )
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
            store._record_head(kind)
        for p in legacy:  # kept, not deleted: the migration never loses the only copy
            backup = root / ".pre-delta" / kind / p.parent.name / LEGACY_FILE
            backup.parent.mkdir(parents=True, exist_ok=True)
            p.replace(backup)


def as_store(store: Store | str | Path | None) -> Store:
    """A :class:`Store` from a store, its root directory, or None (the default root,
    ``$XAMM_HOME/store``)."""
    return store if isinstance(store, Store) else Store(store)


def read_parquet_checked(
    path: str | Path | bytes, kind: str, *, name: str | None = None
) -> pl.DataFrame:
    """Read a Parquet file written by xamm (a path, or its bytes called ``name``) and check its
    schema version against this xamm's."""
    schema = get_table(kind)
    info = footer_metadata(path)
    if info is not None:
        major = info.get("schema_version", "0").split(".")[0]
        if info.get("table") != kind or major != schema.version.split(".")[0]:
            raise ValidationError(
                kind,
                "*",
                f"file {name or ('the given bytes' if isinstance(path, bytes) else path)} holds "
                f"{info.get('table')} "
                f"v{info.get('schema_version')}, this xamm reads v{schema.version}",
                0,
                [],
            )
    src = io.BytesIO(path) if isinstance(path, bytes) else path
    return validate(pl.read_parquet(src, hive_partitioning=False), schema)


__all__ = [
    "CorruptDataError",
    "CorruptLogError",
    "PartitionReport",
    "Store",
    "WriteReport",
    "as_store",
    "dedupe_sources",
    "migrate_legacy",
    "read_parquet_checked",
    "renumber_trials",
]
