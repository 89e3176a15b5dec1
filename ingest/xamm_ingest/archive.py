"""A centre's archive of profiles into one table: parsed in parallel, committed in batches,
resumable.

``xamm-ingest caliper`` and ``xamm-ingest hpctoolkit`` go through here. The directories are walked
lazily, one directory at a time in name order, and each source is hashed (SHA-256) as its chunk is
formed; sources the table held when the run began (an earlier run, or the committed part of an
interrupted one) are skipped before they are parsed. The rest is read in chunks, on local
processes or on the workers of a Dask cluster (``executor="dask"``). Every ``batch_files`` sources,
in walk order, the rows are checked, given their features and validated as one frame, and
committed in one Delta commit through :meth:`Store.append <xamm_data.store.Store.append>`, which
adds files, rewrites nothing and leaves out any source the table holds already (a byte-identical
copy read twice is stored once). At most a few chunks are in flight and no list of the corpus is
kept: memory is set by the batch and the libraries, not by the size of the corpus (measured in
``benchmarks/bench_archive.py``). An ingest killed at any moment leaves every batch before the
kill committed and nothing half-written; run again, it ends with the table an uninterrupted run
writes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from xamm_data.hashing import dir_sha256, file_sha256
from xamm_data.store import Store, WriteReport, as_store
from xamm_data.store_append import find_keys, numbered_within
from xamm_ingest.dispatch import (
    _checked,
    _finish_isolated,
    _Outcome,
    _read_one,
    _rows_frame,
    _tally,
    validate_by_source,
)
from xamm_ingest.formats import get_format
from xamm_ingest.machine_names import forget_node_facts, record_node_facts
from xamm_ingest.profiles import CALIPER_SUFFIXES, file_task
from xamm_ingest.records import Bounds
from xamm_ingest.report import IngestReport, Rejected
from xamm_ingest.sources import Plan, Task, as_paths, ingest_root, walk_files

__all__ = [
    "ARCHIVE_FORMATS",
    "DEFAULT_BATCH_FILES",
    "EXECUTORS",
    "ArchiveReport",
    "check_batch",
    "ingest_archive",
    "read_chunk",
]

log = logging.getLogger(__name__)

ARCHIVE_FORMATS = ("caliper", "hpctoolkit")
DEFAULT_BATCH_FILES = 1000  # sources per commit
CHUNK_FILES = 64  # sources per task sent to a local worker (it only parses)
DASK_CHUNK_FILES = 256  # sources per task sent to a Dask worker (it parses and checks)
EXECUTORS = ("local", "dask")
CONNECT_TIMEOUT_S = 10


@dataclass
class ArchiveReport(IngestReport):
    """An archive ingest: counts instead of the rows (which went to the store batch by batch)."""

    rows: int = 0
    apps: set[str] = field(default_factory=set)
    machines: set[str] = field(default_factory=set)
    already_stored: int = 0  # sources skipped: the table held them (same SHA-256)
    copies: int = 0  # byte-identical copies of a source read once
    commits: list[int] = field(default_factory=list)
    rows_written: int = 0
    seconds: float = 0.0

    def summary(self) -> dict:
        """The counts (see :meth:`IngestReport.summary`), with the batches committed.

        Returns:
            The counts: sources read and rejected, rows read and written, sources already stored,
            identical copies, the versions committed and the seconds taken.
        """
        out = super().summary()
        out.update(
            rows=self.rows,
            machines=sorted(self.machines),
            apps=sorted(self.apps),
            rows_written=self.rows_written,
            already_stored=self.already_stored,
            identical_copies=self.copies,
            commits=self.commits,
            seconds=round(self.seconds, 3),
        )
        return out


def read_chunk(tasks: list[Task], opts: dict) -> list[tuple[_Outcome, list[dict]]]:
    """Read a chunk of sources (on a worker): each source's outcome and rows.

    Plain Python only: a forked worker must not use the polars thread pool of the process it was
    forked from, so the rows become a frame where they are committed.

    Args:
        tasks: sources of one format.
        opts: the format's options.

    Returns:
        (outcome, rows) per source; the outcome holds the error of a rejected one.
    """
    return [_read_one(task, opts)[:2] for task in tasks]


def read_checked_chunk(
    tasks: list[Task], fmt: str, opts: dict
) -> tuple[list[_Outcome], pl.DataFrame | None]:
    """Hash, read and check a chunk of sources on a Dask worker (a process of its own, where
    polars is free to run), so the client only commits.

    Args:
        tasks: sources of one format.
        fmt: the format.
        opts: the format's options.

    Returns:
        What :func:`check_batch` returns for the chunk.
    """
    hashed = [t if t.sha256 else dataclasses.replace(t, sha256=_sha(t.path)) for t in tasks]
    return check_batch(read_chunk(hashed, opts), fmt, opts)


def _sha(path: Path) -> str:
    try:  # a file (nearly every source): no stat to ask first
        return file_sha256(path)
    except IsADirectoryError:  # an HPCToolkit database
        return dir_sha256(path)


def check_batch(
    results: list[tuple[_Outcome, list[dict]]], fmt: str, opts: dict
) -> tuple[list[_Outcome], pl.DataFrame | None]:
    """The rows of a batch of sources, checked, with their features, validated, as one frame (the
    cost of each polars call is paid once a batch); a source that fails any step is rejected
    alone.

    Args:
        results: what :func:`read_chunk` returned.
        fmt: the format read.
        opts: the format's options.

    Returns:
        Each source's outcome and the rows of those not rejected.
    """
    spec = get_format(fmt)
    outcomes = [o for o, _ in results]
    rows_frame = _rows_frame(outcomes, [r for _, r in results], opts, spec.table)
    if rows_frame is None:
        return outcomes, None
    frame = _checked(rows_frame, spec, outcomes, opts)
    if frame.is_empty():
        return outcomes, None
    side = IngestReport(frame=spec.table.empty(), table=spec.table.name)
    frame = _finish_isolated(frame, spec, side, opts)
    frame = frame.drop([c for c in frame.columns if c.startswith("_")])
    # trials within the batch (the store continues them after the rows it holds)
    frame, bad = validate_by_source(numbered_within(frame, spec.table), spec.table)
    by_rel = {o.rel: o for o in outcomes}
    for r in side.rejected + bad:
        out = by_rel.get(r.path) or next((o for o in outcomes if o.path == r.path), None)
        if out is not None and out.error is None:
            out.error = Rejected(out.path, r.reason, r.problem)
    return outcomes, frame


def _tasks(fmt: str, paths: list[Path], opts: dict, report: ArchiveReport) -> Iterator[Task]:
    """The sources to read, lazily, in walk order (HPCToolkit databases, which are few, from the
    format's own plan)."""
    found = Plan(root=ingest_root(paths))
    found.rejected, found.ignored = report.rejected, report.ignored  # listed as they are met
    if fmt != "caliper":
        plan = get_format(fmt).plan(paths, opts)
        report.rejected += plan.rejected
        report.ignored += plan.ignored
        yield from plan.tasks
        return
    configs: dict = {}
    for f in walk_files(paths, found):
        if task := file_task(fmt, f, CALIPER_SUFFIXES, found, configs):
            yield task


def _count(fmt: str, paths: list[Path], opts: dict) -> int:
    """How many sources :func:`_tasks` will give (a walk that keeps nothing), for the progress
    bar's total."""
    return sum(1 for _ in _tasks(fmt, paths, opts, ArchiveReport(frame=pl.DataFrame())))


def _prefixes(sha256s) -> pl.Series:
    """The first 64 bits of each hash, sorted."""
    return pl.Series([int(h[:16], 16) for h in sha256s], dtype=pl.UInt64).sort()


def _any_in(sorted_: pl.Series, values: pl.Series) -> bool:
    if sorted_.is_empty() or values.is_empty():
        return False
    at = sorted_.search_sorted(values).clip(0, len(sorted_) - 1)
    return bool((sorted_.gather(at) == values).any())


class _Held:
    """The sources the table held when the run began, as the sorted first 128 bits of their hashes
    (16 bytes a source, read once): whether a source is held is a search in memory, so resuming an
    archive costs what hashing its files costs, not a scan of the table per batch.

    It also follows the run's own commits (their prefixes, and the version each made), so it can
    tell :meth:`Store.append <xamm_data.store.Store.append>` at which version a batch's sources
    are known not to be held: while no other writer has committed in between, a commit need not
    scan the stored sources again (at a million rows, the largest cost of a commit)."""

    def __init__(self, store: Store | None, kind: str):
        self.store, self.kind = store, kind
        # the version first: a commit landing before the keys are read ends the vouching
        self.version = store.version(kind) if store is not None else None
        keys = (
            store.source_keys(kind)
            if store is not None
            else pl.DataFrame(schema={"hi": pl.UInt64, "lo": pl.UInt64})
        )
        self.hi, self.lo = keys["hi"].to_numpy(), keys["lo"].to_numpy()
        self.mine = pl.Series([], dtype=pl.UInt64)  # prefixes this run committed
        self.vouching = store is not None

    def held_among(self, sha256s: list[str]) -> set[str]:
        """Which of ``sha256s`` the table held when the run began."""
        if not len(self.hi) or not sha256s:
            return set()
        q_hi = np.array([int(h[:16], 16) for h in sha256s], dtype=np.uint64)
        q_lo = np.array([int(h[16:32], 16) for h in sha256s], dtype=np.uint64)
        at = find_keys(self.hi, self.lo, q_hi, q_lo)
        return {h for h, i in zip(sha256s, at) if i >= 0}

    def unheld(self, tasks: list[Task]) -> list[Task]:
        """``tasks`` without those the table holds."""
        held = self.held_among([t.sha256 for t in tasks if t.sha256])
        return [t for t in tasks if t.sha256 not in held]

    def unheld_at(self, sha256s: list[str]) -> int | None:
        """The version at which none of ``sha256s`` (already filtered by :meth:`held_among`) is
        held, or None when the run cannot tell: one may be a copy of a source it committed, or
        another writer has committed since."""
        if not self.vouching or self.version is None or _any_in(self.mine, _prefixes(sha256s)):
            return None
        return self.version

    def committed(self, sha256s: list[str], version: int) -> None:
        """The run committed ``sha256s`` as ``version``."""
        expected = 0 if self.version is None else self.version + 1
        self.vouching = self.vouching and version == expected
        self.version = version
        self.mine = pl.concat([self.mine, _prefixes(sha256s)]).sort()


def _hashed(t: Task) -> Task:
    """``t`` with its source's hash (built field by field: ``dataclasses.replace`` costs more
    than the hash of a small file)."""
    return Task(t.fmt, t.path, t.root, t.machine, t.run, t.defaults, t.why_no_machine, _sha(t.path))


def _chunks(tasks: Iterator[Task], size: int, held: _Held, report: ArchiveReport):
    """``tasks`` hashed, without the held ones, in lists of ``size``."""
    while chunk := list(itertools.islice(tasks, size)):
        yield from _unheld([_hashed(t) for t in chunk], held, report)


def _plain_chunks(tasks: Iterator[Task], size: int) -> Iterator[list[Task]]:
    """``tasks`` in lists of ``size``, as they are (the workers hash them)."""
    while chunk := list(itertools.islice(tasks, size)):
        yield chunk


def _unheld(chunk: list[Task], held: _Held, report: ArchiveReport):
    kept = held.unheld(chunk)
    report.already_stored += len(chunk) - len(kept)
    if kept:
        yield kept


@contextlib.contextmanager
def _submitter(executor: str, workers: int, scheduler: str | None, several: bool, fmt: str):
    """(a function that sends a chunk to the executor and returns a future, how many chunks to keep
    in flight): ``read_chunk`` on local processes (in this process when there is one chunk, or one
    worker), ``read_checked_chunk`` on Dask workers."""
    if executor == "dask":
        with _dask_client(scheduler, workers) as client:
            n = max(len(client.scheduler_info().get("workers", {})), 1)

            def submit(chunk, opts):
                return client.submit(read_checked_chunk, chunk, fmt, opts, pure=False)

            yield submit, 2 * n + 1
        return
    if workers <= 1 or not several:
        yield _inline, 1
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield lambda chunk, opts: pool.submit(read_chunk, chunk, opts), 2 * workers + 1


def _inline(chunk: list[Task], opts: dict) -> Future:
    fut: Future = Future()
    fut.set_result(read_chunk(chunk, opts))
    return fut


@contextlib.contextmanager
def _dask_client(scheduler: str | None, workers: int):
    """A client of the scheduler at ``scheduler``, or of a LocalCluster of ``workers`` processes."""
    try:
        from dask.distributed import Client, LocalCluster  # the dask extra: only with dask
    except ImportError:
        raise ValueError(
            "--executor dask needs dask.distributed: pip install 'xamm[dask]'"
        ) from None
    if not logging.getLogger("xamm_ingest").isEnabledFor(logging.DEBUG):
        # Dask's own lines (start-up, a slow event loop, a nanny's restarts) only with -vv: what
        # goes wrong reaches the user as xamm's one line
        logging.getLogger("distributed").setLevel(logging.ERROR)
    if scheduler:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as e:
            raise ValueError(
                f"no Dask scheduler answered at {scheduler} within {CONNECT_TIMEOUT_S} s ({e}); "
                "expected the address a running scheduler prints, e.g. tcp://head:8786"
            ) from None
        with client:
            yield client
        return
    with contextlib.ExitStack() as stack:
        try:  # a worker that dies while it starts: one line, nothing read or written yet
            # the scheduler serves HTTP whatever the dashboard setting: on a free port (":0"),
            # never 8787, which another cluster may hold (Dask then warns on stderr)
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
                )
            )
            client = stack.enter_context(Client(cluster))
        except (RuntimeError, OSError, TimeoutError) as e:
            first = (
                str(e).strip().splitlines()[0].rstrip(".") if str(e).strip() else type(e).__name__
            )
            raise ValueError(
                f"the local Dask cluster did not start ({first}: a worker died while it "
                "started); nothing was read or written: rerun, or use --executor processes"
            ) from None
        yield client


def _in_order(submit: Callable, chunks: Iterator[list[Task]], opts: dict, window: int) -> Iterator:
    """Each chunk's result in walk order, with at most ``window`` chunks in flight."""
    pending: deque = deque()
    for chunk in chunks:
        pending.append(submit(chunk, opts))
        if len(pending) >= window:
            break
    while pending:
        result = pending.popleft().result()
        nxt = next(chunks, None)
        if nxt is not None:
            pending.append(submit(nxt, opts))
        yield result


def _progress(enabled: bool, total: int):
    """A rich progress bar of sources (count, rate, time left), or a stand-in that shows
    nothing."""
    if not enabled:
        return contextlib.nullcontext(lambda n: None)
    # rich: only when a progress bar is asked for
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    @contextlib.contextmanager
    def bar():
        with Progress(
            TextColumn("reading sources"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=True,
        ) as p:
            task = p.add_task("read", total=total, rate="")
            t0 = time.perf_counter()

            def advance(n: int) -> None:
                done = p.tasks[0].completed + n
                rate = done / max(time.perf_counter() - t0, 1e-9)
                p.update(task, advance=n, rate=f"{rate:,.0f} files/s")

            yield advance

    return bar()


class _Batcher:
    """Collects what the workers send and commits it every ``batch_files`` sources: raw rows from
    local processes, checked here as one frame (polars' cost per call is paid per batch, not per
    chunk), or frames a Dask worker checked already."""

    def __init__(self, store: Store | None, fmt: str, opts: dict, batch_files: int, report):
        self.store, self.fmt, self.opts, self.batch_files = store, fmt, opts, batch_files
        self.report: ArchiveReport = report
        self.held = _Held(store, get_format(fmt).table.name)
        self.results: list[tuple[_Outcome, list[dict]]] = []
        self.frames: list[pl.DataFrame | None] = []
        self.checked = 0  # sources behind self.frames
        self.last: WriteReport | None = None

    def add(self, results: list[tuple[_Outcome, list[dict]]]) -> None:
        self.results += results
        while len(self.results) >= self.batch_files:
            self.commit(self.batch_files)

    def add_checked(self, outcomes: list[_Outcome], frame: pl.DataFrame | None) -> None:
        """A chunk a worker checked: sources the table held when the run began are counted as
        such and left out; the rest wait for the batch to fill."""
        if frame is not None and frame.height:
            shas = frame.get_column("source_sha256").unique().to_list()
            if gone := self.held.held_among(shas):
                frame = frame.filter(~pl.col("source_sha256").is_in(sorted(gone)))
                self.report.already_stored += len(gone)
                kept_paths = set(frame.get_column("source_path").to_list())
                outcomes = [o for o in outcomes if o.error or o.rel in kept_paths]
            self.frames.append(frame)
        _tally(self.report, outcomes)
        self.checked += len(outcomes)
        if self.checked >= self.batch_files:
            self.commit()

    def commit(self, n: int | None = None) -> None:
        """Commit what is collected: the first ``n`` raw sources (all by default), checked here and
        tallied, with any frames workers checked."""
        batch, self.results = self.results[:n], self.results[len(self.results[:n]) :]
        frames, self.frames, self.checked = self.frames, [], 0
        if batch:
            outcomes, frame = check_batch(batch, self.fmt, self.opts)
            _tally(self.report, outcomes)
            frames.append(frame)
        frames = [f for f in frames if f is not None and f.height]
        if frames:
            self._append(pl.concat(frames, how="vertical"))

    def _append(self, frame: pl.DataFrame) -> None:
        self.report.rows += frame.height
        self.report.apps.update(frame.get_column("app").unique().to_list())
        self.report.machines.update(frame.get_column("machine").unique().to_list())
        if self.store is None:
            return
        shas = frame.get_column("source_sha256").unique().to_list()
        kind = get_format(self.fmt).table.name
        w = self.store.append(frame, kind, unheld_at=self.held.unheld_at(shas))
        if w.version is not None:
            self.report.commits.append(w.version)
            self.held.committed(shas, w.version)
        self.report.rows_written += w.rows_written
        self.report.copies += w.duplicate_sources_dropped + w.already_held
        self.last = w


def ingest_archive(
    fmt: str,
    paths,
    *,
    store: Store | str | Path | None = None,
    dry_run: bool = False,
    batch_files: int = DEFAULT_BATCH_FILES,
    workers: int | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    progress: bool = False,
    **opts,
) -> ArchiveReport:
    """Read a corpus of profiles and commit it in batches, skipping sources already stored.

    Args:
        fmt: ``caliper`` or ``hpctoolkit``.
        paths: files, directories, or a list of them.
        store: the store (a :class:`Store` or its root, local or ``s3://``).
        dry_run: read and validate only; nothing is written.
        batch_files: sources per commit.
        workers: parsing processes (local), or the LocalCluster's workers (dask without a
            scheduler); default: the CPUs.
        executor: ``local`` (processes on this machine) or ``dask`` (dask.distributed).
        scheduler: the address of a running Dask scheduler (``tcp://host:8786``); without it a
            LocalCluster is started.
        progress: show a progress bar (sources, rate, time left).
        **opts: the format's options (``spec``, ``metadata_map``, ``bounds``, ``debug``).

    Returns:
        The counts: sources read, rejected (with reasons), skipped as already stored, rows
        written and the versions committed.
    """
    _check_call(fmt, executor, batch_files)
    t0 = time.perf_counter()
    spec = get_format(fmt)
    opts.setdefault("bounds", Bounds())
    paths = as_paths(paths)
    report = ArchiveReport(frame=spec.table.empty(), table=spec.table.name)
    forget_node_facts()
    st = None if dry_run else as_store(store)
    total = _count(fmt, paths, opts) if progress else 0
    batcher = _Batcher(st, fmt, opts, batch_files, report)
    tasks = _tasks(fmt, paths, opts, report)
    if executor == "dask":  # the workers hash, read and check: the client only commits
        chunks = _plain_chunks(tasks, min(DASK_CHUNK_FILES, batch_files))
    else:
        chunks = _chunks(tasks, CHUNK_FILES, batcher.held, report)
    workers = workers or os.cpu_count() or 1
    with _progress(progress, total) as advance:
        _read_and_commit(chunks, fmt, opts, batcher, executor, workers, scheduler, advance)
    batcher.commit()
    report.write = batcher.last
    if st is not None and report.rows_written:
        report.notes.extend(record_node_facts())
    report.seconds = time.perf_counter() - t0
    _log_done(fmt, report)
    return report


def _log_done(fmt: str, report: ArchiveReport) -> None:
    log.info(
        "%s: %d source(s) read, %d rejected, %d already stored, %d row(s) written in %d commit(s)",
        fmt,
        report.sources_read,
        len(report.rejected),
        report.already_stored,
        report.rows_written,
        len(report.commits),
    )


def _check_call(fmt: str, executor: str, batch_files: int) -> None:
    """The caller's mistakes, told before anything is read."""
    if fmt not in ARCHIVE_FORMATS:
        raise ValueError(f"archive ingest reads {', '.join(ARCHIVE_FORMATS)}, not {fmt!r}")
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; expected one of {', '.join(EXECUTORS)}")
    if batch_files < 1:
        raise ValueError(f"batch_files must be >= 1, not {batch_files}")


def _read_and_commit(chunks, fmt, opts, batcher, executor, workers, scheduler, advance) -> None:
    """Read the chunks on the executor and hand each to the batcher as it comes back, in walk
    order; the progress bar counts sources read and skipped."""
    report = batcher.report
    first = [c for c in (next(chunks, None), next(chunks, None)) if c is not None]
    skipped = 0
    several = len(first) > 1
    with _submitter(executor, workers, scheduler, several, fmt) as (submit, window):
        work = itertools.chain(first, chunks)
        for result in _in_order(submit, work, opts, window):
            if executor == "dask":
                outcomes, frame = result
                batcher.add_checked(outcomes, frame)
                advance(len(outcomes))
            else:
                batcher.add(result)
                advance(len(result) + report.already_stored - skipped)
            skipped = report.already_stored
