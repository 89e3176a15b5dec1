"""One ingest pipeline for every format: paths -> discovery -> per-source read -> per-source checks
-> the format's cross-source step -> validation -> the store.

Two things are parameters, never the format's name:

* the **executor** where sources are read: ``serial``, ``processes`` (local processes) or ``dask``
  (the workers of a Dask cluster, which also check and finish their chunk);
* the **commit**: ``once`` (every source read, then one commit; ``strict`` writes nothing if any
  source was rejected or any record dropped) or ``batches`` (every ``batch_files`` sources one
  Delta commit through :meth:`Store.append <xamm_data.store.Store.append>`; sources the table held
  when the run began are skipped before they are parsed, so a rerun resumes; the directories are
  walked lazily and memory is set by the batch, not the corpus).

A format whose cross-source step needs several sources together (one RAJAPerf run's CSV and
Caliper files) names its groups (:attr:`Format.group_of <xamm_ingest.format.Format.group_of>`):
batches are cut only between groups. An ingest killed at any moment leaves every batch before the
kill committed and nothing half-written; run again, it ends with the table an uninterrupted run
writes.
"""

from __future__ import annotations

import itertools
import logging
import numbers
import os
import time
from collections.abc import Iterable
from pathlib import Path

from xamm_data.store.store import Store, as_store
from xamm_ingest.choices import DEFAULT_BATCH_FILES, EXECUTORS, canonical_executor
from xamm_ingest.errors import IngestError
from xamm_ingest.format import Format, get_format
from xamm_ingest.machine_names import (
    forget_node_facts,
    record_node_facts,
    take_aliases,
    take_unknown,
)
from xamm_ingest.pipeline.commit import Batches, Whole, chunks, note_hashed, unheld_chunks
from xamm_ingest.pipeline.executors import (
    in_order,
    progress_bar,
    submitter,
)
from xamm_ingest.pipeline.file_hashes import FileHashes
from xamm_ingest.pipeline.stages import (
    Outcome,
    Result,
    check_batch,
    read_chunk,
    validate_by_source,
)
from xamm_ingest.readers.base import ReadResult
from xamm_ingest.records import Bounds, DroppedRecord
from xamm_ingest.report import ArchiveReport, IngestReport, Rejected
from xamm_ingest.sources import Plan, as_paths, ingest_root

__all__ = [
    "COMMITS",
    "DEFAULT_BATCH_FILES",
    "EXECUTORS",
    "ArchiveReport",
    "IngestReport",
    "check_batch",
    "ingest",
    "read",
    "read_chunk",
    "read_results",
    "validate_by_source",
]

log = logging.getLogger("xamm_ingest.pipeline")

COMMITS = ("once", "batches")
CHUNK_FILES = 64  # sources per task sent to a local worker (it only parses)
DASK_CHUNK_FILES = 256  # sources per task sent to a Dask worker (it parses and checks)
# Below this many sources a read of them all takes about a second at most, and local processes
# (each started, each chunk's rows pickled back) cost more CPU than they save in wall time.
POOL_MIN_FILES = 256


def _prepared(fmt: str | Format, opts: dict) -> tuple[Format, dict]:
    spec = fmt if isinstance(fmt, Format) else get_format(fmt)
    spec.rows_table  # noqa: B018  (a format read for prediction only is refused here)
    opts = spec.prepare(dict(opts))
    if opts.get("bounds") is None:
        opts["bounds"] = Bounds()
    return spec, opts


def _at_least_one(name: str, value: object, default: int) -> int:
    """``value`` of the argument ``name`` checked: a whole number >= 1, or None for ``default``
    (a count the command line refuses below 1 is refused here too, not read as the default).

    Args:
        name: the argument (``workers``, ``batch_files``).
        value: what the caller passed.
        default: what None stands for.
    """
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")
    return int(value)


def read(
    fmt: str | Format,
    paths: str | Path | Iterable[str | Path],
    *,
    workers: int | None = None,
    executor: str = "processes",
    progress: bool = False,
    **opts,
) -> IngestReport:
    """Read ``paths`` as format ``fmt`` into one validated frame (``report.frame``); nothing is
    written.

    Args:
        fmt: a format's name (:func:`~xamm_ingest.format.list_formats`) or the format.
        paths: files, directories, or a list of them.
        workers: processes reading in parallel, at least 1 (default: the CPUs, at most 8).
        executor: ``processes`` or ``serial``.
        progress: show a progress bar.
        **opts: the format's options (``machine``, ``rtol``, ``spec``, ``mapping``, ``bounds``,
            ...); ``debug`` re-raises unexpected errors instead of rejecting the source.

    Returns:
        The report: ``frame`` (the rows), ``rejected`` sources and ``dropped`` records, each
        with its reason.
    """
    spec, opts = _prepared(fmt, opts)
    executor = canonical_executor(executor)
    if executor == "dask":
        raise ValueError(
            "the dask executor commits in batches (commit='batches'); reading every source "
            "before one commit (--strict) runs here or on local processes"
        )
    t0 = time.perf_counter()
    forget_node_facts()
    plan = spec.plan(as_paths(paths), opts)
    log.info(
        "%s: %d source(s) to read, %d file(s) with nothing to ingest, %d refused at discovery",
        *(spec.name, len(plan.tasks), len(plan.ignored), len(plan.rejected)),
    )
    report = IngestReport(
        frame=spec.rows_table.empty(),
        table=spec.rows_table.name,
        ignored=plan.ignored,
        rejected=list(plan.rejected),
        aliases=take_aliases(),
        notes=take_unknown(),
    )
    workers = _at_least_one("workers", workers, min(os.cpu_count() or 1, 8))
    _read_whole(spec, plan, opts, report, executor, workers, progress)
    log.info(
        "%s: %d row(s) from %d source(s) in %.2f s; %d source(s) rejected, %d record(s) dropped",
        *(spec.name, report.frame.height, report.sources_read, time.perf_counter() - t0),
        *(len(report.rejected), len(report.dropped)),
    )
    return report


def _read_whole(
    spec: Format, plan: Plan, opts: dict, report: IngestReport, executor, workers, progress
) -> None:
    """Read every planned source in chunks on the executor, checking each chunk as it comes back,
    and set ``report.frame`` to the combined rows."""
    n = len(plan.tasks)
    size = max(1, min(CHUNK_FILES, -(-n // (max(workers, 1) * 4))))
    sink = Whole(spec, opts, report)
    several = workers > 1 and n >= POOL_MIN_FILES
    with (
        progress_bar(progress and n > size, n) as advance,
        submitter(executor, workers, None, several, spec.name) as (submit, window),
    ):
        for results in in_order(submit, chunks(iter(plan.tasks), size), opts, window):
            sink.add(results)
            advance(len(results))
    sink.close()


def read_results(
    fmt: str | Format, results: list[tuple[str, ReadResult | IngestError]], **opts
) -> IngestReport:
    """The record checks, cross-source step and validation over sources read elsewhere (the
    profiles of a Thicket in memory).

    Args:
        fmt: the format the rows are of.
        results: each source's name (its ``source_path``) with what reading it gave, or the error
            it raised.
        **opts: the format's options, as for :func:`read`.
    """
    spec = fmt if isinstance(fmt, Format) else get_format(fmt)
    opts = dict(opts)
    if opts.get("bounds") is None:
        opts["bounds"] = Bounds()
    report = IngestReport(frame=spec.rows_table.empty(), table=spec.rows_table.name)
    sink = Whole(spec, opts, report)
    batch: list[Result] = []
    for name, res in results:
        out = Outcome(name, rel=name)
        if isinstance(res, IngestError):
            out.error = Rejected(res.path, str(res), res.problem)
            batch.append((out, [], None))
        else:
            out.notes, out.dropped = res.notes, [DroppedRecord(name, *d) for d in res.dropped]
            out.shared = res.shared
            batch.append((out, res.rows, res.frame))
    sink.add(batch)
    sink.close()
    return report


def ingest(
    fmt: str | Format,
    paths,
    *,
    store: Store | str | Path | None = None,
    commit: str | None = None,
    dry_run: bool = False,
    strict: bool = False,
    batch_files: int = DEFAULT_BATCH_FILES,
    workers: int | None = None,
    executor: str = "processes",
    scheduler: str | None = None,
    progress: bool = False,
    update_machines: bool = False,
    rehash: bool = False,
    **opts,
) -> IngestReport:
    """Read ``paths`` as format ``fmt`` and write the rows to the store.

    Args:
        fmt: a format's name or the format.
        paths: files, directories, or a list of them.
        store: the store (a :class:`Store` or its root, local or ``s3://``; default
            ``$XAMM_HOME/store``).
        commit: ``once`` or ``batches`` (default: :attr:`Format.batched`; ``once`` if ``strict``).
        dry_run: read and validate only; nothing is written.
        strict: write nothing if any source was rejected or any record dropped (``once`` only).
        batch_files: sources per commit (``batches``).
        workers: reading processes or a Dask LocalCluster's workers, >= 1 (default: the CPUs).
        executor: ``serial``, ``processes`` or ``dask`` (``batches`` only).
        scheduler: a running Dask scheduler (``tcp://host:8786``); else a LocalCluster.
        progress: show a progress bar (sources, rate, time left).
        update_machines: let an ``xamm.toml``'s ``[node]`` change a known machine's facts.
        rehash: hash every file from its bytes (:mod:`~xamm_ingest.pipeline.file_hashes`).
        **opts: the format's options.

    Returns:
        An :class:`IngestReport` (``once``: the rows in ``frame``, the version written) or an
        :class:`ArchiveReport` (``batches``: counts, sources already stored, the versions).
    """
    spec = fmt if isinstance(fmt, Format) else get_format(fmt)
    if _commit_of(spec, commit, strict) == "batches":
        return _ingest_batches(
            spec,
            paths,
            store=store,
            dry_run=dry_run,
            batch_files=batch_files,
            workers=workers,
            executor=executor,
            scheduler=scheduler,
            progress=progress,
            update_machines=update_machines,
            rehash=rehash,
            **opts,
        )
    report = read(spec, paths, workers=workers, executor=executor, progress=progress, **opts)
    if dry_run or (strict and (report.rejected or report.dropped)) or report.frame.is_empty():
        return report
    return _written(report, store, update_machines)


def _written(report: IngestReport, store, update_machines: bool) -> IngestReport:
    """``report`` with its rows written to ``store`` in one commit, and the node facts recorded."""
    # the stages checked every source once (combine): the store checks only what the merge changes
    report.write = as_store(store).write(report.frame, report.table, checked=True)
    report.notes.extend(record_node_facts(update_machines))
    return report


def _commit_of(spec: Format, commit: str | None, strict: bool) -> str:
    """The commit asked for, else the format's own; ``strict`` reads everything first."""
    commit = commit or ("once" if strict or not spec.batched else "batches")
    if commit not in COMMITS:
        raise ValueError(f"unknown commit {commit!r}; expected one of {', '.join(COMMITS)}")
    if commit == "batches" and strict:
        raise ValueError("strict reads everything before writing: it commits once, not in batches")
    return commit


def _ingest_batches(
    fmt: Format,
    paths,
    /,
    *,
    store,
    dry_run,
    batch_files,
    workers,
    executor,
    scheduler,
    progress,
    update_machines=False,
    rehash=False,
    **opts,
) -> ArchiveReport:
    """:func:`ingest` with ``commit="batches"``."""
    batch_files = _at_least_one("batch_files", batch_files, DEFAULT_BATCH_FILES)
    workers = _at_least_one("workers", workers, os.cpu_count() or 1)
    executor = canonical_executor(executor)
    t0 = time.perf_counter()
    spec, opts = _prepared(fmt, opts)
    paths = as_paths(paths)
    report = ArchiveReport(frame=spec.rows_table.empty(), table=spec.rows_table.name)
    forget_node_facts()
    st = None if dry_run else as_store(store)
    total = _count(spec, paths, opts) if progress else 0
    sink = Batches(st, spec, opts, batch_files, report)
    found = Plan(root=ingest_root(paths))
    found.rejected, found.ignored = report.rejected, report.ignored  # listed as they are met
    tasks = spec.tasks(paths, opts, found)
    workers_hash = executor == "dask" and spec.group_of is None  # and check; no records kept
    hashes = None if st is None or workers_hash else FileHashes.open(rehash=rehash)
    chunked = _chunked(spec, tasks, executor, batch_files, sink, hashes)
    try:
        with progress_bar(progress, total) as advance:
            _read_and_commit(
                chunked, spec, opts, sink, executor, workers, scheduler, advance, hashes=hashes
            )
    finally:
        if hashes is not None:
            hashes.close()
    sink.commit()
    report.write = sink.last
    if st is not None and report.rows_written:
        report.notes.extend(record_node_facts(update_machines))
    report.seconds = time.perf_counter() - t0
    log.info(
        "%s: %d source(s) read, %d rejected, %d already stored, %d row(s) written in %d commit(s)",
        spec.name,
        report.sources_read,
        len(report.rejected),
        report.already_stored,
        report.rows_written,
        len(report.commits),
    )
    return report


def _chunked(spec: Format, tasks, executor: str, batch_files: int, sink: Batches, hashes):
    """The chunks to send: under Dask without groups, as walked (its workers hash, read and
    check, and their view of the files may not be this process's); else without what the table
    held (:func:`~xamm_ingest.pipeline.commit.unheld_chunks`).

    Args:
        spec: the format.
        tasks: the walk's sources.
        executor: ``serial``, ``processes`` or ``dask``.
        batch_files: sources per commit.
        sink: the run's batches (what the table held, the report).
        hashes: the records of unchanged files, or None.
    """
    if executor == "dask" and spec.group_of is None:
        return chunks(tasks, min(DASK_CHUNK_FILES, batch_files))
    size = DASK_CHUNK_FILES if executor == "dask" else CHUNK_FILES
    if executor == "dask" or spec.group_of is not None:  # a batch ends with a chunk
        size = min(size, batch_files)
    held = (sink.held, sink.report, spec.group_of, hashes)
    return unheld_chunks(chunks(tasks, size, spec.group_of), *held, hash_here=executor == "dask")


def _count(spec: Format, paths: list[Path], opts: dict) -> int:
    """How many sources the walk will give (a walk that keeps nothing), for the progress bar."""
    plan = Plan(root=ingest_root(paths))
    return sum(1 for _ in spec.tasks(paths, opts, plan))


def _first_chunks(chunked, files: int) -> list:
    """The walk's first chunks, until there are two holding ``files`` sources or the walk ends."""
    first: list = []
    n = 0
    while (n < files or len(first) < 2) and (chunk := next(chunked, None)) is not None:
        first.append(chunk)
        n += len(chunk)
    return first


def _read_and_commit(
    chunked, spec, opts, sink, executor, workers, scheduler, advance, hashes=None
) -> None:
    """Read the chunks on the executor and hand each to the sink as it comes back, in walk order,
    and the hashes taken where sources were read to ``hashes`` (the records of unchanged files,
    or None); the progress bar counts sources read and skipped."""
    report = sink.report
    first = _first_chunks(chunked, POOL_MIN_FILES)
    several = len(first) > 1 and sum(map(len, first)) >= POOL_MIN_FILES
    skipped = 0
    with submitter(executor, workers, scheduler, several, spec.name) as (submit, window):
        for result in in_order(submit, itertools.chain(first, chunked), opts, window):
            if executor == "dask":
                outcomes, frame, side = result
                sink.add_checked(outcomes, frame, side)
                advance(len(outcomes))
            else:
                note_hashed(hashes, [r[0] for r in result])
                sink.add(result)
                advance(len(result) + report.already_stored - skipped)
            skipped = report.already_stored
