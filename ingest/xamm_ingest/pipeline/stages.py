"""The stages every source goes through, whatever the executor and the commit: hash it and read
it alone (its bytes read once, where the process that reads it hashes it), build the rows of a
chunk as one frame, check its records, run the format's cross-source step, validate against the
table.

A source is isolated at every stage: **any** exception raised while reading or checking it (an
:class:`~xamm_ingest.errors.IngestError` with its own message, or a ``ValueError``, ``KeyError``,
polars error, ... from input nobody foresaw) becomes a rejection naming the file, the exception type
and its message, and the other sources go on. A bad record inside a good source drops only that
record (:mod:`xamm_ingest.records`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from xamm_data.hashing import dir_sha256, hash_file
from xamm_data.store.append import numbered_within
from xamm_data.store.store import dedupe_sources, renumber_trials
from xamm_data.tables.schema import TableSchema
from xamm_data.tables.validate import ValidationError, validate
from xamm_ingest._frozen import built
from xamm_ingest.errors import IngestError
from xamm_ingest.format import Format, get_format
from xamm_ingest.machine_names import names_pinned, take_aliases, take_unknown
from xamm_ingest.pipeline.row_frames import frame_of_sources
from xamm_ingest.readers.base import relative_path
from xamm_ingest.records import (
    DroppedRecord,
    check_benchmark_records,
    flag_app_records,
    raw_schema,
)
from xamm_ingest.report import IngestReport, Rejected
from xamm_ingest.sources import Task

__all__ = [
    "Outcome",
    "check_batch",
    "checked",
    "combine",
    "finish_isolated",
    "hashed",
    "read_chunk",
    "read_one",
    "rows_frame",
    "tally",
    "unexpected",
    "unreadable",
    "validate_by_source",
]


@dataclass
class Outcome:
    """What reading one source gave: its error, or its notes and dropped records (rows go in the
    chunk's frame)."""

    path: str
    rel: str = ""
    error: Rejected | None = None
    notes: list[str] = field(default_factory=list)
    dropped: list[DroppedRecord] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # registry aliases the reader resolved
    shared: dict = field(default_factory=dict)  # columns all its rows hold (ReadResult.shared)
    # (its hash, the stat of the open file) where the file was hashed as it was read, for the
    # caller's records of unchanged files (FileHashes); None: hashed before, or a directory
    hashed: tuple[str, os.stat_result] | None = None


def unexpected(path: Path, e: Exception) -> Rejected:
    """The rejection of a source that raised what no reader foresaw: the file, the exception's type
    and its message (one line, at most 300 characters)."""
    text = " ".join(str(e).split())[:300] or "(no message)"
    return Rejected(
        str(path),
        f"{path}: {type(e).__name__}: {text} (an input xamm did not "
        "expect; the other sources "
        "were read; --debug shows the traceback)",
        problem=f"{type(e).__name__}: {text}",
    )


def _rel(task: Task) -> str:
    return relative_path(task.path, task.root, task.link)


def _sha(
    path: Path, keep: bool = False
) -> tuple[str, bool | None, bytes | None, os.stat_result | None]:
    """(a source's hash, whether its path is a symbolic link (None: not known), its bytes where
    ``keep`` kept them, the ``stat`` of the open file (None: a directory))."""
    try:  # a file (nearly every source): no stat to ask first
        got = hash_file(path, keep=keep)
        return got.sha256, got.link, got.data, got.stat
    except IsADirectoryError:  # an HPCToolkit database
        return dir_sha256(path), None, None, None


def hashed(
    t: Task, sha256: str | None = None, link: bool | None = None, data: bytes | None = None
) -> Task:
    """``t`` with its source's hash (``sha256``, else read, which tells whether its path is a
    link: ``link`` where the caller read it; ``data``: the bytes hashed, for its reader), its
    other fields as they are (:func:`~xamm_ingest._frozen.built`: ``dataclasses.replace`` costs
    more than the hash of a small file).

    Args:
        t: the source.
        sha256: its hash, where the caller took it.
        link: whether its path is a symbolic link, where the caller's read told.
        data: the bytes the caller hashed (its reader parses them rather than read the file).
    """
    if t.sha256:
        return t
    if not sha256:
        sha256, link, _, _ = _sha(t.path)
    return built(Task, {**t.__dict__, "sha256": sha256, "link": link, "data": data})


def unreadable(path: Path, e: OSError) -> IngestError:
    """The error of a source its hash cannot read: gone since the walk listed it, or not readable.

    Args:
        path: the source.
        e: what reading it raised.
    """
    why = e.strerror or type(e).__name__
    return IngestError(path, f"cannot be read ({why}); expected a readable file")


def _hashed_here(task: Task) -> tuple[Task, tuple[str, os.stat_result] | None]:
    """(``task`` hashed where it is read, its bytes kept for its reader: one read of the file, and
    the rows hold the hash of the bytes parsed; what that read found, for
    :attr:`Outcome.hashed`)."""
    if task.sha256:  # hashed by the caller (to skip what the table holds): read again
        return task, None
    try:
        sha256, link, data, st = _sha(task.path, keep=True)
    except OSError as e:
        raise unreadable(task.path, e) from None
    return hashed(task, sha256, link, data), (None if st is None else (sha256, st))


def read_one(task: Task, opts: dict) -> tuple[Outcome, list[dict], pl.DataFrame | None]:
    """Read one source (hashed here unless the caller hashed it): its outcome, and its rows
    (dicts) or frame. No polars work here beyond a reader's own: this runs in forked workers,
    where polars' thread pool must stay idle.

    Args:
        task: the source.
        opts: the format's options (``debug`` re-raises what no reader foresaw).
    """
    take_aliases()
    take_unknown()
    rel, found = "", None
    try:
        task, found = _hashed_here(task)
        rel = _rel(task)
        res = get_format(task.fmt).read(task, opts)
        path = str(task.path)
        # the outcome made once it is known: its defaults are four containers a reading replaces
        out = Outcome(
            path,
            rel,
            None,
            [*res.notes, *take_unknown()],
            [DroppedRecord(path, *d) for d in res.dropped],
            take_aliases(),
            res.shared,
            found,
        )
        return out, res.rows, res.frame
    except IngestError as e:
        error = Rejected(e.path, str(e), e.problem)
    except Exception as e:  # one source never sinks the others
        if opts.get("debug"):
            raise
        error = unexpected(task.path, e)
    return Outcome(str(task.path), rel or _rel(task), error, hashed=found), [], None


Result = tuple[Outcome, list[dict], pl.DataFrame | None]  # what reading one source gave


def read_chunk(tasks: list[Task], opts: dict) -> list[Result]:
    """Read a chunk of sources (on a worker): each source's outcome, rows and frame.

    Plain Python only: a forked worker must not use the polars thread pool of the process it was
    forked from, so the rows become a frame where they are checked.

    Args:
        tasks: sources of one format.
        opts: the format's options.
    """
    with names_pinned(), _collection_paused():
        return [read_one(task, opts) for task in tasks]


@contextlib.contextmanager
def _collection_paused():
    """The cyclic garbage collector paused while a chunk is read: a reading's objects go when
    their last reference does, and a collection every few hundred of them finds nothing to free
    (what cycles a reading leaves, the collections after the chunk take)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _rows_schema(table: TableSchema) -> dict[str, pl.DataType]:
    """The polars schema readers' rows of ``table`` are built with (benchmark rows carry integer
    columns as floats and internal columns until their records are checked)."""
    return raw_schema() if table.name == "benchmark_runs" else dict(table.polars_schema)


def rows_frame(
    outcomes: list[Outcome], rows: list[list[dict]], opts: dict, table: TableSchema
) -> pl.DataFrame | None:
    """One frame of every source's rows; a source whose rows do not fit the schema is rejected
    alone.

    Args:
        outcomes: each source's outcome (a misfit's error is set here).
        rows: each source's rows.
        opts: the format's options.
        table: the table the rows go to.
    """
    sources = [(out.shared, rs) for out, rs in zip(outcomes, rows) if rs]
    if not sources:
        return None
    schema = _rows_schema(table)
    try:
        return frame_of_sources(sources, schema)
    except Exception:
        pass
    keep = []
    for out, rs in zip(outcomes, rows):
        try:
            if rs:
                frame_of_sources([(out.shared, rs)], schema)
                keep.append((out.shared, rs))
        except Exception as e:
            if opts.get("debug"):
                raise
            out.error = unexpected(Path(out.path), e)
    return frame_of_sources(keep, schema) if keep else None


def validate_by_source(
    frame: pl.DataFrame, schema: TableSchema
) -> tuple[pl.DataFrame, list[Rejected]]:
    """Validate the whole frame; if it fails, validate each source's rows and drop the failing
    sources.

    Args:
        frame: rows of many sources (``source_path`` tells them apart).
        schema: the table.
    """
    try:
        return validate(frame, schema), []
    except (ValidationError, pl.exceptions.PolarsError):
        pass
    good, bad = [], []
    for (path,), part in frame.group_by(["source_path"], maintain_order=True):
        try:
            good.append(validate(part, schema))
        except ValidationError as e:
            bad.append(
                Rejected(
                    path, f"{path}: {e}", problem=f"breaks rule [{e.rule}] of column {e.column!r}"
                )
            )
        except Exception as e:
            bad.append(unexpected(Path(path), e))
    return (pl.concat(good) if good else schema.empty()), bad


def tally(report: IngestReport, outcomes: list[Outcome]) -> None:
    """Count each outcome into ``report``: its rejection, or its notes (a note every source repeats
    is said once), aliases and dropped records."""
    seen = set(report.notes)
    for out in outcomes:
        if out.error:
            report.rejected.append(out.error)
            continue
        report.sources_read += 1
        for note in out.notes:
            if note not in seen:
                seen.add(note)
                report.notes.append(note)
        report.aliases.update(out.aliases)
        report.dropped.extend(out.dropped)


def _region_problems(frame: pl.DataFrame) -> dict[str, str]:
    """Per source path, what its regions break
    (:func:`~xamm_data.tables.regions.region_problems`)."""
    if "regions" not in frame.columns:
        return {}
    # the region contract (and its profile types, pydantic): only for a table of profiles
    from xamm_data.tables.regions import region_problems

    rows = (
        frame.select("source_path", "regions")
        .filter(pl.col("regions").list.len() > 0)
        .explode("regions", empty_as_null=False)
        .unnest("regions")
    )
    return region_problems(rows, "source_path")


def _checked_profiles(frame: pl.DataFrame, outcomes: list[Outcome], opts: dict) -> pl.DataFrame:
    """A profile is one sample: a row that breaks a plausibility rule, or whose regions break the
    region contract (checked for the whole chunk at once), rejects its source."""
    flagged = flag_app_records(frame, opts.get("bounds"))
    by_rel = {o.rel: o for o in outcomes}
    for rel, problem in _region_problems(flagged).items():
        e = IngestError(by_rel[rel].path, problem, record="regions")
        by_rel[rel].error = Rejected(e.path, str(e), e.problem)
    bad = flagged.filter(pl.col("_why").is_not_null())
    for rel, why in bad.select("source_path", "_why").iter_rows():
        if by_rel[rel].error is None:
            e = IngestError(by_rel[rel].path, why["rule"], record=why["field"])
            by_rel[rel].error = Rejected(e.path, str(e), e.problem)
    failed = [o.rel for o in outcomes if o.error is not None]
    return flagged.filter(pl.col("_why").is_null() & ~pl.col("source_path").is_in(failed)).drop(
        "_why"
    )


def _checked_benchmarks(frame: pl.DataFrame, outcomes: list[Outcome], opts: dict) -> pl.DataFrame:
    """A benchmark record that breaks a rule is dropped alone, credited to its source; a source the
    checks choke on is rejected alone."""
    good = {o.rel for o in outcomes if o.error is None}
    frame = frame.filter(pl.col("source_path").is_in(list(good)))
    by_rel = {o.rel: o for o in outcomes}
    try:
        frame, dropped, notes = check_benchmark_records(frame, opts.get("bounds"))
    except Exception:  # find the source the checks choke on, and keep the others
        if opts.get("debug"):
            raise
        frames, dropped, notes = [], [], []
        for (rel,), part in frame.group_by(["source_path"], maintain_order=True):
            try:
                kept, more, said = check_benchmark_records(part, opts.get("bounds"))
                frames.append(kept)
                dropped += more
                notes += said
            except Exception as e:
                by_rel[rel].error = unexpected(Path(by_rel[rel].path), e)
        frame = pl.concat(frames) if frames else frame.clear()
    for rel, note in notes:
        by_rel[rel].notes.append(note)
    for d in dropped:
        out = by_rel[d.path]
        out.dropped.append(dataclasses.replace(d, path=out.path))
    return frame


# the record rules of each table (a new table brings its own)
RECORD_CHECKS = {"benchmark_runs": _checked_benchmarks, "app_profiles": _checked_profiles}


def checked(frame: pl.DataFrame, fmt: Format, outcomes: list[Outcome], opts: dict) -> pl.DataFrame:
    """The record rules of the format's table over a chunk's rows.

    Args:
        frame: the chunk's rows (:func:`rows_frame`).
        fmt: the format read.
        outcomes: each source's outcome (rejections and dropped records are credited here).
        opts: the format's options (``bounds``).
    """
    return RECORD_CHECKS[fmt.rows_table.name](frame, outcomes, opts)


def finish_isolated(frame: pl.DataFrame, fmt: Format, report, opts: dict) -> pl.DataFrame:
    """The format's cross-source step (merging, features); if it fails, redo it per directory and
    reject the sources of a directory where it still fails (one run's files share a directory).

    Args:
        frame: checked rows of many sources.
        fmt: the format.
        report: where the step's rejections, drops and notes go.
        opts: the format's options.
    """
    try:
        return fmt.finish(frame, report, opts)
    except Exception:
        if opts.get("debug"):
            raise
    parts = []
    folder = pl.col("source_path").str.replace(r"/?[^/]*$", "")
    for (_,), part in frame.with_columns(folder.alias("_folder")).group_by(
        ["_folder"], maintain_order=True
    ):
        try:
            parts.append(fmt.finish(part.drop("_folder"), report, opts))
        except Exception as e:
            for path in part.get_column("source_path").unique(maintain_order=True).to_list():
                report.rejected.append(unexpected(Path(path), e))
    return pl.concat(parts, how="vertical") if parts else frame.clear()


def combine(frame: pl.DataFrame, fmt: Format, report: IngestReport, opts: dict) -> pl.DataFrame:
    """Every source's checked rows into the table's frame: byte-identical copies once, the
    cross-source step, trials numbered, validated by source.

    Args:
        frame: the checked rows of every source.
        fmt: the format.
        report: where what is dropped or rejected is said.
        opts: the format's options.
    """
    before = frame.height
    frame = dedupe_sources(frame, fmt.rows_table)
    if frame.height < before:
        report.notes.append(
            f"dropped {before - frame.height} row(s) from byte-identical copies of the same file"
        )
    frame = finish_isolated(frame, fmt, report, opts)
    frame = renumber_trials(
        frame.drop([c for c in frame.columns if c.startswith("_")]), fmt.rows_table
    )
    frame, bad = validate_by_source(frame, fmt.rows_table)
    report.rejected.extend(bad)
    return renumber_trials(frame, fmt.rows_table) if bad else frame


def check_batch(
    results: list[tuple[Outcome, list[dict], pl.DataFrame | None]], fmt: Format, opts: dict
) -> tuple[list[Outcome], pl.DataFrame | None, IngestReport | None]:
    """The rows of a batch of sources, checked, with the cross-source step, validated, as one frame
    (the cost of each polars call is paid once a batch); a source that fails any step is rejected
    alone.

    Args:
        results: what :func:`read_chunk` returned (each source's rows are emptied once the
            batch's frame holds them).
        fmt: the format read.
        opts: the format's options.

    Returns:
        Each source's outcome, the rows of those not rejected, and what the cross-source step
        said (its dropped records, notes and merges; None when there were no rows).
    """
    outcomes = [r[0] for r in results]
    frames = [f for _, _, f in results if f is not None and f.height]
    rows = rows_frame(outcomes, [r[1] for r in results], opts, fmt.rows_table)
    for _, source_rows, _ in results:
        source_rows.clear()  # the frame holds them: their dicts go before the checks and commit
    if rows is not None:
        frames.append(checked(rows, fmt, outcomes, opts))
    frames = [f for f in frames if f.height]
    if not frames:
        return outcomes, None, None
    side = IngestReport(frame=fmt.rows_table.empty(), table=fmt.rows_table.name)
    frame = finish_isolated(pl.concat(frames, how="vertical"), fmt, side, opts)
    frame = frame.drop([c for c in frame.columns if c.startswith("_")])
    # trials within the batch (the store continues them after the rows it holds)
    frame, bad = validate_by_source(numbered_within(frame, fmt.rows_table), fmt.rows_table)
    by_rel = {o.rel: o for o in outcomes}
    for r in side.rejected + bad:
        out = by_rel.get(r.path) or next((o for o in outcomes if o.path == r.path), None)
        if out is not None and out.error is None:
            out.error = r  # as one commit reports it: the source as the step names it
    return outcomes, frame, side
