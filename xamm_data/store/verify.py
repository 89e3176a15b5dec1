"""Checking a store's tables: every log entry parses and replays, the newest version is the one
xamm committed, every live file is there with its checksum, size and row count, and no row is held
twice."""

from __future__ import annotations

import io

import polars as pl

from xamm_data.store.delta_log import LOG_DIR, CorruptLogError, diagnose
from xamm_data.store.files import CorruptDataError, read_part
from xamm_data.store.locations import TableLocation
from xamm_data.store.log import StoreLog
from xamm_data.tables.schema import DATA_KINDS

__all__ = ["StoreVerifying", "duplicate_problem", "entry_problem"]


class StoreVerifying(StoreLog):
    """:meth:`verify` (see the module docstring)."""

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
            loc = self.location(k)
            if not loc.has_log():
                continue
            log_problems = diagnose(k, loc)
            problems += log_problems
            try:
                _, files = self.snapshot(k)
            except CorruptLogError as e:
                problems += [] if log_problems else [str(e)]
                continue
            problems += self._verify_files(k, files)
        return problems

    def _verify_files(self, kind: str, files: pl.DataFrame) -> list[str]:
        loc, problems = self.location(kind), []
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
                if problem := entry_problem(kind, loc, machine, path, size, rows, len(data), part):
                    problems.append(problem)
                parts.append(part.select("source_sha256").with_columns(pl.lit(path).alias("_file")))
            if len(parts) > 1 and (
                problem := duplicate_problem(kind, loc, machine, pl.concat(parts))
            ):
                problems.append(problem)
        return problems


def entry_problem(
    kind: str,
    loc: TableLocation,
    machine: str,
    path: str,
    size,
    rows,
    n_bytes: int,
    part: pl.DataFrame | int,
    *,
    foreign_rows: bool = False,
) -> str | None:
    """What the log says of one live file that its bytes contradict: the partition in its path, its
    size, its row count, the machine its rows name (None: all agree). ``part`` is the parsed file or
    its row count; ``foreign_rows`` says, for a count, that a row names another machine."""
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
    if foreign_rows or (
        isinstance(part, pl.DataFrame)
        and "machine" in part.columns
        and (part.get_column("machine") != machine).any()
    ):
        return f"{kind} / {machine}: {where} holds rows of another machine than its partition's"
    return None


def duplicate_problem(kind: str, loc: TableLocation, machine: str, df: pl.DataFrame) -> str | None:
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
