"""The data files of the store's Delta tables: content-addressed Parquet, verified on every read.

A data file is named by the SHA-256 of its bytes (``machine=<m>/part-<sha256>.parquet``), so the
checksum is recorded in the Delta log the moment the file is committed, and a reader checks the
bytes against the name before parsing anything: a flipped bit is an error naming the table, machine
and file, never different numbers, and a corrupt file is never handed to the Parquet decoder.

Files are written to a hidden temporary name carrying the host and process id, then renamed; a later
writer removes temporaries whose process is gone (:func:`sweep_temporaries`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import socket
import uuid
from pathlib import Path

import polars as pl

from xamm_data._version import __version__
from xamm_data.errors import XammError
from xamm_data.store.locations import TableLocation
from xamm_data.store.parquet_depth import ParquetDepthError, checked_depth
from xamm_data.tables.schema import TableSchema

METADATA_KEY = "xamm"
_PART = re.compile(r"(?:^|/)part-(?P<sha>[0-9a-f]{64})\.parquet$")
_TMP = re.compile(r"^\.xamm-tmp-(?P<host>[^-]+)-(?P<pid>\d+)-[0-9a-f]{32}\.parquet$")


class CorruptDataError(XammError, RuntimeError):
    """A stored data file does not match the checksum it was committed with."""


MAX_LISTED_SOURCES = 1000


def file_metadata(df: pl.DataFrame, schema: TableSchema) -> dict:
    """The ``xamm`` key-value metadata of a data file: table, schema version, units, key, how
    many sources and the first :data:`MAX_LISTED_SOURCES` of them (every row names its own
    source; a footer listing a million would be past what Parquet readers accept)."""
    sources = (
        df.select("source_path", "source_sha256", "source_format", "reader")
        .unique()
        .sort("source_path", "source_sha256")
    )
    return {
        "table": schema.name,
        "schema_version": schema.version,
        "primary_key": list(schema.primary_key),
        "units": schema.units,
        "xamm_version": __version__,
        "n_sources": sources.height,
        "sources": sources.head(MAX_LISTED_SOURCES).to_dicts(),
    }


def parquet_bytes(df: pl.DataFrame, schema: TableSchema) -> bytes:
    """``df`` as zstd Parquet with xamm's metadata in the footer's key-value metadata, written by
    polars (no pyarrow in the writing process): the same rows always give the same bytes."""
    buf = io.BytesIO()
    df.write_parquet(
        buf,
        compression="zstd",
        # zstd's default level: level 9 makes files about 10% smaller for twice the CPU, and its
        # compressor's memory stays with the writing process (about 30 MB over an archive's run)
        compression_level=3,
        statistics=True,
        metadata={METADATA_KEY: json.dumps(file_metadata(df, schema), sort_keys=True)},
    )
    return buf.getvalue()


def footer_metadata(source: str | Path | bytes, name: str | None = None) -> dict | None:
    """The ``xamm`` metadata of a Parquet file (a path or its bytes), or None when it has none.

    Read from the footer's key-value metadata, where xamm's writer puts it and where pyarrow's
    writer (earlier xamm versions) put it beside the Arrow schema's copy; the footer's depth is
    checked first (:func:`~xamm_data.store.parquet_depth.checked_depth`, naming the file
    ``name``)."""
    checked_depth(source, name)
    md = pl.read_parquet_metadata(io.BytesIO(source) if isinstance(source, bytes) else source)
    raw = md.get(METADATA_KEY)
    return None if raw is None else json.loads(raw)


def footer_rows(data: bytes) -> int:
    """The number of rows a Parquet file's footer records."""
    return int(pl.scan_parquet(io.BytesIO(data)).select(pl.len()).collect().item())


def delta_schema(schema: TableSchema):
    """``schema`` as delta-rs's ``Schema``, through arro3 (delta-rs's own Arrow binding), so that
    committing loads no pyarrow."""
    from arro3.core import Table  # delta-rs's dependency: imported when a table is committed
    from deltalake import Schema  # delta-rs: imported on use

    return Schema.from_arrow(Table.from_arrow(schema.empty()).schema)


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:40] or "host"


def write_part(loc: TableLocation, machine: str, data: bytes) -> tuple[str, int]:
    """Write ``data`` as a content-addressed file of ``machine``'s partition; (path relative to the
    table, size). An identical file already there is reused."""
    sha = hashlib.sha256(data).hexdigest()
    rel = f"machine={machine}/part-{sha}.parquet"
    if loc.size(rel) == len(data):
        return rel, len(data)
    loc.put(rel, data, tmp_name=f".xamm-tmp-{_host()}-{os.getpid()}-{uuid.uuid4().hex}.parquet")
    return rel, len(data)


def read_part(
    loc: TableLocation, rel: str, *, table: str, machine: str, foreign_ok: bool = False
) -> bytes:
    """The bytes of a committed data file, checked against the SHA-256 in its name. A file another
    tool wrote (no checksum in its name) is refused unless ``foreign_ok`` (``xamm store optimize``
    rewrites it)."""
    m = _PART.search(rel)
    where = loc.display(rel)
    if m is None and foreign_ok:
        return _shallow(loc.read_bytes(rel), f"{table} / {machine}: {where}")
    if m is None:
        raise CorruptDataError(
            f"{table} / {machine}: {where} has no checksum in its name; xamm "
            "cannot verify it "
            "(was it written by another tool? run `xamm store optimize` to "
            "rewrite it)"
        )
    try:
        data = loc.read_bytes(rel)
    except FileNotFoundError as e:
        raise CorruptDataError(
            f"{table} / {machine}: {where} is in the table's log but missing from storage"
        ) from e
    if hashlib.sha256(data).hexdigest() != m["sha"]:
        raise CorruptDataError(
            f"{table} / {machine}: {where} does not match the SHA-256 it was "
            "committed with "
            "(the file changed in storage); no rows were read from it. "
            "Restore it, or re-ingest "
            "its sources"
        )
    return _shallow(data, f"{table} / {machine}: {where}")


def _shallow(data: bytes, where: str) -> bytes:
    """``data``, a Parquet file polars can be given (:mod:`~xamm_data.store.parquet_depth`)."""
    try:
        checked_depth(data, where)
    except ParquetDepthError as e:
        raise CorruptDataError(f"{e}; no rows were read from it") from None
    return data


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_temporaries(loc: TableLocation) -> list[Path]:
    """Remove temporary files this host's dead processes left in a local table's partitions; return
    them (an object store has none: its writes need no temporary)."""
    gone: list[Path] = []
    table_dir = loc.local
    if table_dir is None or not table_dir.is_dir():
        return gone
    host = _host()
    for p in table_dir.glob("machine=*/.xamm-tmp-*"):
        m = _TMP.match(p.name)
        if m and m["host"] == host and not _alive(int(m["pid"])):
            p.unlink(missing_ok=True)
            gone.append(p)
    return gone
