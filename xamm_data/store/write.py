"""Writing a store's tables: a batch merged into the partitions it touches (:meth:`write`), or
added without rewriting anything (:meth:`append`, :mod:`xamm_data.store.append`), each in one
Delta commit; and housekeeping (:meth:`optimize`, :meth:`vacuum`)."""

from __future__ import annotations

import functools
import json
import numbers
import time

import polars as pl

from xamm_data.store.append import append_once, numbered_within, present_sources, source_keys
from xamm_data.store.delta_log import log_prev
from xamm_data.store.files import parquet_bytes, sweep_temporaries, write_part
from xamm_data.store.log import add_action, data_schema
from xamm_data.store.read import StoreReading
from xamm_data.store.reports import PartitionReport, WriteReport, commit_record, config_key
from xamm_data.store.rows import dedupe_sources, merge_numbered, renumber_trials
from xamm_data.tables.schema import TableSchema
from xamm_data.tables.validate import conform, validate

__all__ = ["StoreWriting"]


class StoreWriting(StoreReading):
    """Writing and housekeeping (see the module docstring)."""

    def write(self, df: pl.DataFrame, kind: str, *, checked: bool = False) -> WriteReport:
        """Validate ``df`` as table ``kind`` and upsert it into its machine partitions, in one
        commit.

        Args:
            df: rows of the table.
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            checked: the caller already validated ``df`` against this table's schema, kept one
                copy of byte-identical sources and numbered its trials (the ingest pipeline
                does, per source): the store then checks only what the merge changes, the trials
                of configurations the partition already holds.

        Returns:
            Per partition, the rows before, replaced, added and after, and the new version.

        Raises:
            ValidationError: a rule fails; nothing is written.
        """
        schema = data_schema(kind)
        report = WriteReport(kind=kind)
        if checked:
            new = df
        else:
            new = (
                validate(renumber_trials(conform(df, schema), schema), schema)
                if df.height
                else schema.empty()
            )
        if new.is_empty():
            return report
        if not checked:
            before = new.height
            new = dedupe_sources(new, schema)
            report.duplicate_sources_dropped = before - new.height
        sweep_temporaries(self.location(kind))
        (report.partitions, report.version), report.attempts = self.retrying(
            kind, lambda: self._commit(new, schema, checked)
        )
        return report

    def _commit(
        self, new: pl.DataFrame, schema: TableSchema, checked: bool = False
    ) -> tuple[list[PartitionReport], int | None]:
        """Merge ``new`` into the partitions it touches at the latest version, write their files,
        commit once (``checked``: see :meth:`write`)."""
        # delta-rs: imported on use
        from deltalake.transaction import CommitProperties, RemoveAction

        kind, d = schema.name, self.location(schema.name)
        dt, files = self.snapshot(kind)
        now = int(time.time() * 1000)
        actions: list = []  # delta-rs AddAction and RemoveAction
        reports = []
        for machine in sorted(new.get_column(schema.partition_by).unique().to_list()):
            part_new = new.filter(pl.col(schema.partition_by) == machine)
            old = self.scan_partition(kind, schema, files, machine).collect(engine="in-memory")
            kept = old.filter(
                ~pl.col("source_sha256").is_in(
                    part_new.get_column("source_sha256").unique().implode()
                )
            )
            if checked:
                merged = merge_numbered(kept, part_new, schema)
            else:
                merged = renumber_trials(pl.concat([kept, part_new], how="vertical"), schema)
                merged = validate(merged, schema)
            merged = merged.sort(list(schema.primary_key), nulls_last=True)
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
            actions.append(add_action(rel, size, machine, now, True, merged.height))
        if not actions:
            return reports, None
        props = CommitProperties(custom_metadata={"xamm": commit_record(new, reports, d, dt)})
        return reports, self.commit_actions(kind, dt, actions, props)

    def append(
        self, df: pl.DataFrame, kind: str, *, unheld_at: int | None = None, checked: bool = False
    ) -> WriteReport:
        """Validate ``df`` as table ``kind`` and add the rows of sources the table does not hold
        yet, as one new data file per partition, in one commit; nothing already there is rewritten
        (see :mod:`xamm_data.store.append`). ``trial`` continues after the rows the table holds,
        in the order of ``df``'s rows.

        Args:
            df: rows of the table.
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            unheld_at: a version of the table at which the caller has checked that none of
                ``df``'s sources is held (an archive ingest knows it of every batch it commits in
                turn): while that is still the latest version, the stored sources are not scanned
                again. Any other version, or None, scans them.
            checked: the caller already validated ``df`` against this table's schema (the
                ingest pipeline does, per source): the rows are not checked again.

        Returns:
            Per partition, the rows before, added and after, and the new version (None when
            every source was already held).

        Raises:
            ValidationError: a rule fails; nothing is written.
        """
        schema = data_schema(kind)
        report = WriteReport(kind=kind)
        if df.is_empty():
            return report
        new = df if checked else conform(df, schema)
        before = new.height
        # the first of byte-identical copies, in the order given (trials follow that order)
        new = new.unique(
            subset=[*config_key(schema), "source_sha256"], keep="first", maintain_order=True
        )
        new = numbered_within(new, schema)
        if not checked:
            new = validate(new, schema)
        report.duplicate_sources_dropped = before - new.height
        sweep_temporaries(self.location(kind))
        (report.partitions, report.version), report.attempts = self.retrying(
            kind, functools.partial(append_once, self, new, schema, unheld_at)
        )
        report.already_held = new.height - report.rows_written
        del new  # the batch goes before a checkpoint is written (an archive's peak memory)
        self.write_owed_checkpoint(kind)
        return report

    def sources_present(self, kind: str, sha256s: list[str]) -> set[str]:
        """Which sources (by SHA-256) the latest version of ``kind`` holds rows of.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).
            sha256s: the hashes to look for.

        Returns:
            The hashes found.
        """
        return present_sources(self, data_schema(kind).name, sha256s)

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
        return source_keys(self, data_schema(kind).name)

    def optimize(self, kind: str) -> dict[str, int]:
        """Compact each machine's partition of ``kind`` into one checksummed data file.

        The commit changes no rows; files another tool appended are validated and rewritten.

        Args:
            kind: a data table (``benchmark_runs``, ``app_profiles``).

        Returns:
            Per machine, how many data files its partition had before.
        """
        return self.retrying(kind, lambda: self._optimize_once(kind))[0]

    def _optimize_once(self, kind: str) -> dict[str, int]:
        # delta-rs: imported on use
        from deltalake.transaction import CommitProperties, RemoveAction

        schema = data_schema(kind)
        dt, files = self.snapshot(kind)
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
                    self.scan_partition(kind, schema, files, machine, foreign_ok=True).collect(
                        engine="in-memory"
                    ),
                    schema,
                ),
                schema,
            )
            rel, size = write_part(
                self.location(kind),
                machine,
                parquet_bytes(df.sort(list(schema.primary_key), nulls_last=True), schema),
            )
            actions += [
                RemoveAction(p, False, now, sz, {"machine": machine})
                for p, sz in files.filter(pl.col("machine") == machine)
                .select("path", "size")
                .iter_rows()
            ]
            actions.append(add_action(rel, size, machine, now, False, df.height))
        what = {"optimize": True, "log_prev": log_prev(self.location(kind), dt.version())}
        self.commit_actions(
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
        if isinstance(retention_hours, bool) or not isinstance(retention_hours, numbers.Integral):
            raise TypeError(f"retention_hours: {retention_hours!r}; expected whole hours")
        if retention_hours < 0:  # a cutoff in the future: files a running writer has not committed
            raise ValueError(f"retention_hours is {retention_hours}; expected 0 or more")
        dt = self.snapshot(kind)[0]
        gone = [] if dry_run else [str(p) for p in sweep_temporaries(self.location(kind))]
        if dt is None:
            return gone
        return gone + list(
            dt.vacuum(
                retention_hours=retention_hours, dry_run=dry_run, enforce_retention_duration=False
            )
        )
