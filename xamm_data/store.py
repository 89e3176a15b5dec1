"""The local dataset store: validated Parquet, partitioned by machine.

Layout (``root`` defaults to ``$XAMM_HOME/store``)::

    <root>/<kind>/machine=<machine>/data.parquet

``kind`` is a data table (``benchmark_runs``, ``app_profiles``). The machine stays a real column
inside each file. Files are zstd-compressed, rows sorted by primary key, and the Parquet key-value
metadata key ``xamm`` holds the table name, schema version, units, primary key and the list of
source files, so a file describes itself without xamm.

Writes are upserts under a lock: rows from a source file already in the partition (same SHA-256)
are replaced, never duplicated; ``trial`` is renumbered over the union so runs ingested in separate
batches keep distinct trials. Each partition is rewritten through a temporary file and a rename,
so a crash leaves the previous file intact.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from xamm_data._version import __version__
from xamm_data.atomic import atomic_path, locked
from xamm_data.paths import default_store_root
from xamm_data.schema import DATA_KINDS, TableSchema, get_table
from xamm_data.validate import ValidationError, conform, validate

METADATA_KEY = b"xamm"
PARQUET_FILE = "data.parquet"
_TRIAL_ORDER = ("run_date", "source_path", "source_sha256", "trial")


@dataclass
class PartitionReport:
    """What one write did to one machine partition."""

    machine: str
    rows_before: int
    rows_replaced: int
    rows_added: int
    rows_after: int
    path: Path


@dataclass
class WriteReport:
    """What :meth:`Store.write` did, per machine partition."""

    kind: str
    partitions: list[PartitionReport] = field(default_factory=list)
    duplicate_sources_dropped: int = 0

    @property
    def rows_written(self) -> int:
        return sum(p.rows_added for p in self.partitions)


def _config_key(schema: TableSchema) -> list[str]:
    return [c for c in schema.primary_key if c != "trial"]


def renumber_trials(df: pl.DataFrame, schema: TableSchema) -> pl.DataFrame:
    """Set ``trial`` to the 0-based rank of each row among rows of identical configuration.

    Order: run date (unknown last), then source path, then source hash, then the reader's own
    trial number, so the numbering does not depend on ingest order.
    """
    if "trial" not in schema.primary_key or df.is_empty():
        return df
    key = _config_key(schema)
    return (
        df.sort(list(_TRIAL_ORDER), nulls_last=True)
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(key).alias("trial"))
    )


def dedupe_sources(df: pl.DataFrame, schema: TableSchema) -> pl.DataFrame:
    """Keep one copy of rows that came from byte-identical files (same hash and configuration).

    The same bytes under two paths are one measurement, not two trials; the first path wins.
    """
    if df.is_empty():
        return df
    return df.sort("source_path").unique(subset=[*_config_key(schema), "source_sha256"], keep="first",
                                         maintain_order=True)


class Store:
    """A local, machine-partitioned Parquet store of xamm tables."""

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else default_store_root()

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    @staticmethod
    def _check_kind(kind: str) -> TableSchema:
        if kind not in DATA_KINDS:
            raise ValueError(f"unknown data kind {kind!r}; expected one of {', '.join(DATA_KINDS)}")
        return get_table(kind)

    def partition_path(self, kind: str, machine: str) -> Path:
        """Path of the Parquet file holding ``machine``'s rows of ``kind``."""
        self._check_kind(kind)
        return self.root / kind / f"machine={machine}" / PARQUET_FILE

    def machines(self, kind: str = "benchmark_runs") -> list[str]:
        """Machines with a partition of ``kind`` in this store, sorted."""
        base = self.root / kind
        if not base.is_dir():
            return []
        return sorted(
            p.parent.name.split("=", 1)[1]
            for p in base.glob(f"machine=*/{PARQUET_FILE}")
        )

    def has(self, kind: str, machine: str) -> bool:
        return self.partition_path(kind, machine).is_file()

    def read(self, kind: str, machine: str, *, lazy: bool = False) -> pl.DataFrame | pl.LazyFrame:
        """Read one machine's partition of ``kind``."""
        path = self.partition_path(kind, machine)
        if not path.is_file():
            raise FileNotFoundError(f"no {kind} for machine {machine!r} in store {self.root}")
        lf = _scan(path, self._check_kind(kind))
        return lf if lazy else lf.collect()

    def scan(self, kind: str) -> pl.LazyFrame:
        """Lazily scan every machine partition of ``kind``."""
        schema = self._check_kind(kind)
        files = [self.partition_path(kind, m) for m in self.machines(kind)]
        if not files:
            return schema.empty().lazy()
        return _scan(files, schema)

    def metadata(self, kind: str, machine: str) -> dict:
        """The ``xamm`` key-value metadata of a partition file."""
        import pyarrow.parquet as pq  # pyarrow: ~0.2 s to import; only when Parquet metadata is read or written

        md = pq.read_schema(self.partition_path(kind, machine)).metadata or {}
        return json.loads(md[METADATA_KEY])

    def write(self, df: pl.DataFrame, kind: str) -> WriteReport:
        """Validate ``df`` as table ``kind`` and upsert it into its machine partitions.

        Raises :class:`~xamm_data.validate.ValidationError` (and writes nothing) if any rule fails.
        """
        schema = self._check_kind(kind)
        new = validate(renumber_trials(conform(df, schema), schema), schema) if df.height else schema.empty()
        report = WriteReport(kind=kind)
        if new.is_empty():
            return report
        before = new.height
        new = dedupe_sources(new, schema)
        report.duplicate_sources_dropped = before - new.height
        machines = sorted(new.get_column(schema.partition_by).unique().to_list())
        # Validate every merged partition before writing any, so a bad batch writes nothing.
        staged: list[tuple[str, pl.DataFrame, PartitionReport]] = []
        with locked(self.root / kind / ".lock"):
            for machine in machines:
                part_new = new.filter(pl.col(schema.partition_by) == machine)
                path = self.partition_path(kind, machine)
                old = _scan(path, schema).collect() if path.is_file() else schema.empty()
                shas = part_new.get_column("source_sha256").unique()
                kept = old.filter(~pl.col("source_sha256").is_in(shas.implode()))
                merged = renumber_trials(pl.concat([kept, part_new], how="vertical"), schema)
                merged = validate(merged, schema).sort(list(schema.primary_key), nulls_last=True)
                staged.append((machine, merged, PartitionReport(
                    machine=machine, rows_before=old.height, rows_replaced=old.height - kept.height,
                    rows_added=part_new.height, rows_after=merged.height, path=path)))
            for machine, merged, rep in staged:
                self._write_partition(merged, schema, rep.path)
                report.partitions.append(rep)
        return report

    def _write_partition(self, df: pl.DataFrame, schema: TableSchema, path: Path) -> None:
        sources = (
            df.select("source_path", "source_sha256", "source_format", "reader")
            .unique().sort("source_path", "source_sha256")
        )
        meta = {
            "table": schema.name,
            "schema_version": schema.version,
            "primary_key": list(schema.primary_key),
            "units": schema.units,
            "xamm_version": __version__,
            "sources": sources.to_dicts(),
        }
        table = df.to_arrow()
        table = table.replace_schema_metadata({METADATA_KEY: json.dumps(meta, sort_keys=True).encode()})
        with atomic_path(path) as tmp:
            import pyarrow.parquet as pq  # pyarrow: ~0.2 s to import; only when Parquet metadata is read or written

            pq.write_table(table, tmp, compression="zstd", compression_level=9, use_dictionary=True,
                           write_statistics=True)

def as_store(store: "Store | str | Path | None") -> "Store":
    """A :class:`Store` from a store, its root directory, or None (the default root, ``$XAMM_HOME/store``)."""
    return store if isinstance(store, Store) else Store(store)


def _scan(files, schema: TableSchema) -> pl.LazyFrame:
    """Scan partition files as this schema: columns added by a later minor version read as null."""
    return pl.scan_parquet(files, hive_partitioning=False, schema=schema.polars_schema, missing_columns="insert")


def read_parquet_checked(path: str | Path, kind: str) -> pl.DataFrame:
    """Read a Parquet file written by xamm and check its schema version against this xamm's."""
    schema = get_table(kind)
    import pyarrow.parquet as pq  # pyarrow: ~0.2 s to import; only when Parquet metadata is read or written

    md = (pq.read_schema(path).metadata or {}).get(METADATA_KEY)
    if md is not None:
        info = json.loads(md)
        major = info.get("schema_version", "0").split(".")[0]
        if info.get("table") != kind or major != schema.version.split(".")[0]:
            raise ValidationError(kind, "*", f"file {path} holds {info.get('table')} v{info.get('schema_version')}, "
                                  f"this xamm reads v{schema.version}", 0, [])
    return validate(pl.read_parquet(path, hive_partitioning=False), schema)


__all__ = ["Store", "as_store", "WriteReport", "PartitionReport", "renumber_trials", "dedupe_sources", "read_parquet_checked"]
