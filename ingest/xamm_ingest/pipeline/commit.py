"""How read sources reach the store: all at once in one commit (:class:`Whole`), or every
``batch_files`` sources in one Delta commit each (:class:`Batches`), skipping what the table held
when the run began (:class:`Held`), so that a rerun resumes where an interrupted one stopped."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import polars as pl

from xamm_data.hashing import dir_sha256, hash_file
from xamm_data.store.counts import find_keys
from xamm_data.store.store import Store, WriteReport
from xamm_ingest.format import Format
from xamm_ingest.pipeline.file_hashes import FileHashes, regular, stat_key
from xamm_ingest.pipeline.stages import (
    Outcome,
    check_batch,
    checked,
    combine,
    hashed,
    rows_frame,
    tally,
    unreadable,
)
from xamm_ingest.report import ArchiveReport, IngestReport, Rejected
from xamm_ingest.sources import Task

__all__ = ["Batches", "Held", "Whole", "chunks", "note_hashed"]


def _prefixes(sha256s) -> pl.Series:
    """The first 64 bits of each hash, sorted."""
    return pl.Series([int(h[:16], 16) for h in sha256s], dtype=pl.UInt64).sort()


def _any_in(sorted_: pl.Series, values: pl.Series) -> bool:
    if sorted_.is_empty() or values.is_empty():
        return False
    at = sorted_.search_sorted(values).clip(0, len(sorted_) - 1)
    return bool((sorted_.gather(at) == values).any())


class Held:
    """The sources the table held when the run began, as the sorted first 128 bits of their hashes
    (16 bytes a source, read once): whether a source is held is a search in memory, so resuming an
    archive costs its walk and the files it must hash, not a scan of the table per batch.

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
        self.keys = keys
        self._arrays: tuple[Any, Any] | None = None  # numpy arrays, made at the first search
        self.mine = pl.Series([], dtype=pl.UInt64)  # prefixes this run committed
        self.vouching = store is not None

    def held_among(self, sha256s: list[str]) -> set[str]:
        """Which of ``sha256s`` the table held when the run began."""
        if self.keys.is_empty() or not sha256s:
            return set()
        prefixes = [(int(h[:16], 16), int(h[16:32], 16)) for h in sha256s]
        return {h for h, held in zip(sha256s, self.held_prefixes(prefixes)) if held}

    def held_prefixes(self, prefixes: list[tuple[int, int]]) -> list[bool]:
        """Whether the table held each hash, given by its first 128 bits as two integers."""
        if self.keys.is_empty() or not prefixes:
            return [False] * len(prefixes)
        import numpy as np  # a fifth of an ingest's start-up: only with stored sources to search

        if self._arrays is None:
            self._arrays = (self.keys["hi"].to_numpy(), self.keys["lo"].to_numpy())
        q = np.array(prefixes, dtype=np.uint64).reshape(-1, 2)
        hi, lo = self._arrays
        return (find_keys(hi, lo, q[:, 0], q[:, 1]) >= 0).tolist()

    def unheld(self, tasks: list[Task], group_of: Callable | None = None) -> list[Task]:
        """``tasks`` without those the table holds; with ``group_of``, without every group one of
        whose sources it holds (a group is committed whole, so one held source means all were)."""
        held = self.held_among([t.sha256 for t in tasks if t.sha256])
        if group_of is None:
            return [t for t in tasks if t.sha256 not in held]
        gone = {group_of(t) for t in tasks if t.sha256 in held}
        return [t for t in tasks if group_of(t) not in gone]

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


def chunks(
    tasks: Iterator[Task], size: int, group_of: Callable | None = None
) -> Iterator[list[Task]]:
    """``tasks`` in lists of ``size``; with ``group_of``, a list is only cut between groups (it
    grows past ``size`` to end its group).

    Args:
        tasks: the sources, in walk order.
        size: sources per list.
        group_of: a source's group (sources the format's cross-source step must see together).
    """
    if group_of is None:
        while chunk := list(itertools.islice(tasks, size)):
            yield chunk
        return
    group: list[Task] = []
    last = object()
    for t in tasks:
        key = group_of(t)
        if len(group) >= size and key != last:
            yield group
            group = []
        group.append(t)
        last = key
    if group:
        yield group


def unheld_chunks(
    chunked: Iterator[list[Task]],
    held: Held,
    report: ArchiveReport,
    group_of,
    hashes: FileHashes | None = None,
    hash_here: bool = False,
):
    """Each chunk without what the table held when the run began (counted in
    ``report.already_stored``); chunks left empty are not sent. A chunk is hashed here where the
    table holds sources to skip (or ``hash_here``); else each source is hashed where it is read,
    from the bytes its reader parses, and :func:`note_hashed` records what that read found.

    Args:
        chunked: the sources, a chunk at a time.
        held: what the table held.
        report: the run's report.
        group_of: the format's groups (a group with one held source is held whole).
        hashes: the recorded hashes of unchanged files (a file whose recorded hash is held is
            not read), which this run's hashes join.
        hash_here: hash every source here (the workers' view of the files may not be this
            process's: a Dask cluster's).
    """
    for chunk in chunked:
        refused: list[Rejected] = []
        read, skipped = _hashed(chunk, held, hashes, hash_here, refused)
        report.rejected += refused
        kept = held.unheld(read, group_of)
        if skipped and group_of is not None:
            gone = {group_of(t) for t in skipped}
            kept = [t for t in kept if group_of(t) not in gone]
        report.already_stored += len(chunk) - len(refused) - len(kept)
        report.unread += len(skipped)
        if kept:
            yield kept


def _hashed(
    chunk: list[Task], held: Held, hashes: FileHashes | None, hash_here: bool, refused: list
) -> tuple[list[Task], list[Task]]:
    """(the chunk's sources, hashed where it must be here; those skipped unread: their recorded
    hash is held); a source that cannot be hashed joins ``refused``, not sent."""
    if held.keys.is_empty() and not hash_here:  # nothing to skip: hashed where read, once
        return chunk, []
    if hashes is None or held.keys.is_empty() or not hashes.trusted:  # each read is recorded
        got = [_readable(t, lambda t: _noted(t, hashes), refused) for t in chunk]
        return [t for t in got if t is not None], []
    stats = [_stat(t) if not t.sha256 else None for t in chunk]
    keyed = [(i, s) for i, s in enumerate(stats) if s is not None]
    known = hashes.known([s[0] for _, s in keyed])
    hits = [(i, p) for (i, _), p in zip(keyed, known) if p is not None]
    skip = {i for (i, _), h in zip(hits, held.held_prefixes([p for _, p in hits])) if h}
    read = []
    for i, (t, s) in enumerate(zip(chunk, stats)):
        if i in skip or (one := _readable(t, hashed, refused)) is None:
            continue
        if s is not None and one.sha256:  # read after that stat
            hashes.note(s[0], one.sha256, s[1])
        read.append(one)
    return read, [chunk[i] for i in sorted(skip)]


def _readable(t: Task, hash_one: Callable[[Task], Task], refused: list) -> Task | None:
    """``hash_one(t)``; None, with ``t``'s rejection in ``refused``, where it cannot be read (gone
    since the walk listed it, or not readable): a source sent unhashed would escape the check of
    what the table holds."""
    try:
        return hash_one(t)
    except OSError as e:
        err = unreadable(t.path, e)
        refused.append(Rejected(err.path, str(err), err.problem))
        return None


def _absolute(path) -> str:
    text = os.fspath(path)
    return text if os.path.isabs(text) else os.path.join(os.getcwd(), text)


def _stat(t: Task) -> tuple[bytes, os.stat_result] | None:
    """(the key, the stat) of a source that is a regular file; None for a directory or a file
    ``stat`` cannot see (its read says why, as without records)."""
    path = _absolute(t.path)
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (stat_key(path, st), st) if regular(st) else None


def _noted(t: Task, hashes: FileHashes | None) -> Task:
    """``t`` hashed from its bytes, the hash recorded with the ``stat`` of the open file."""
    if t.sha256:
        return t
    path = _absolute(t.path)
    try:
        got = hash_file(path)
    except IsADirectoryError:  # an HPCToolkit database
        return hashed(t, dir_sha256(path))
    if hashes is not None and regular(got.stat):
        hashes.note(stat_key(path, got.stat), got.sha256, got.stat)
    return hashed(t, got.sha256, got.link)


def note_hashed(hashes: FileHashes | None, outcomes: list[Outcome]) -> None:
    """Record the hash of each source hashed where it was read, with the ``stat`` of the file
    that read opened (:attr:`Outcome.hashed <xamm_ingest.pipeline.stages.Outcome>`).

    Args:
        hashes: the records (None: keep none).
        outcomes: what reading a chunk's sources gave.
    """
    if hashes is None:
        return
    cwd = os.getcwd()  # once for the chunk, not a system call per source
    for out in outcomes:
        if out.hashed is not None and regular(out.hashed[1]):
            path = out.path if os.path.isabs(out.path) else os.path.join(cwd, out.path)
            hashes.note(stat_key(path, out.hashed[1]), *out.hashed)


CHECK_FILES = 1000  # sources whose rows become one frame at once in an ingest
CHECK_ROWS = 2000  # or rows


class Whole:
    """Every source's rows, made a frame ``check_files`` sources (or :data:`CHECK_ROWS` rows) at a
    time as they come back, so that rows wait as Python objects for one such batch only; checked
    once, at the end, over every source's frame (polars' cost per check is paid once per commit,
    not per batch), and combined into one frame (``report.frame``) for one commit."""

    def __init__(
        self, fmt: Format, opts: dict, report: IngestReport, check_files: int = CHECK_FILES
    ):
        self.fmt, self.opts, self.report, self.check_files = fmt, opts, report, check_files
        self.frames: list[pl.DataFrame] = []  # table readers' frames (their checks are their own)
        self.unchecked: list[pl.DataFrame] = []  # the rows' frames, to be checked
        self.outcomes: list[Outcome] = []
        self.waiting: list[tuple[Outcome, list[dict], pl.DataFrame | None]] = []
        self.rows = 0  # rows waiting

    def add(self, results: list[tuple[Outcome, list[dict], pl.DataFrame | None]]) -> None:
        """A chunk's results: made a frame once ``check_files`` sources or :data:`CHECK_ROWS` rows
        wait (rows wait as Python objects, larger than the frame they become)."""
        self.waiting += results
        self.rows += sum(len(r[1]) for r in results)
        if len(self.waiting) >= self.check_files or self.rows >= CHECK_ROWS:
            self._frame()

    def _frame(self) -> None:
        """The waiting sources' table readers' frames kept, and their rows made a frame (a source
        whose rows do not fit the table is rejected alone)."""
        results, self.waiting, self.rows = self.waiting, [], 0
        outcomes = [r[0] for r in results]
        self.frames += [f for _, _, f in results if f is not None and f.height]
        rows = rows_frame(outcomes, [r[1] for r in results], self.opts, self.fmt.rows_table)
        if rows is not None:
            self.unchecked.append(rows)
        self.outcomes += outcomes

    def close(self) -> None:
        """Every source's rows checked (the record rules, over one frame), counted into the report,
        and combined and validated into one frame."""
        if self.waiting:
            self._frame()
        if self.unchecked:
            rows = pl.concat(self.unchecked, how="vertical")
            self.unchecked = []
            self.frames.append(checked(rows, self.fmt, self.outcomes, self.opts))
            del rows
        tally(self.report, self.outcomes)
        if self.frames:
            frame = pl.concat(self.frames, how="vertical")
            self.frames = []
            self.report.frame = combine(frame, self.fmt, self.report, self.opts)


class Batches:
    """Collects what the workers send and commits it every ``batch_files`` sources: raw results
    from local processes, checked here as one frame (polars' cost per call is paid per batch, not
    per chunk), or frames a Dask worker checked already. A format whose sources come in groups is
    committed a whole chunk (whole groups) at a time."""

    def __init__(self, store: Store | None, fmt: Format, opts: dict, batch_files: int, report):
        self.store, self.fmt, self.opts, self.batch_files = store, fmt, opts, batch_files
        self.report: ArchiveReport = report
        self.held = Held(store, fmt.rows_table.name)
        self.results: list = []
        self.frames: list[pl.DataFrame | None] = []
        self.checked = 0  # sources behind self.frames
        self.last: WriteReport | None = None

    def add(self, results: list) -> None:
        """A chunk read on a local process."""
        self.results += results
        if self.fmt.group_of is not None:
            if len(self.results) >= self.batch_files:
                self.commit()
            return
        while len(self.results) >= self.batch_files:
            self.commit(self.batch_files)

    def add_checked(self, outcomes: list[Outcome], frame: pl.DataFrame | None, side) -> None:
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
        tally(self.report, outcomes)
        self._said(side)
        self.checked += len(outcomes)
        if self.checked >= self.batch_files:
            self.commit()

    def _said(self, side: IngestReport | None) -> None:
        """What a batch's cross-source step said, into the run's report (its rejections reach it
        through the sources' outcomes: :func:`~xamm_ingest.pipeline.stages.check_batch`)."""
        if side is None:
            return
        self.report.dropped += side.dropped
        self.report.notes += [n for n in side.notes if n not in self.report.notes]
        self.report.merged_rows += side.merged_rows

    def commit(self, n: int | None = None) -> None:
        """Commit what is collected: the first ``n`` raw sources (all by default), checked here and
        tallied, with any frames workers checked."""
        batch, self.results = self.results[:n], self.results[len(self.results[:n]) :]
        frames, self.frames, self.checked = self.frames, [], 0
        if batch:
            outcomes, frame, side = check_batch(batch, self.fmt, self.opts)
            tally(self.report, outcomes)
            self._said(side)
            frames.append(frame)
        rows = [f for f in frames if f is not None and f.height]
        if rows:
            self._append(pl.concat(rows, how="vertical"))

    def _append(self, frame: pl.DataFrame) -> None:
        self.report.rows += frame.height
        for column, seen in (("app", self.report.apps), ("machine", self.report.machines)):
            if column in frame.columns:
                seen.update(frame.get_column(column).drop_nulls().unique().to_list())
        if self.store is None:
            return
        shas = frame.get_column("source_sha256").unique().to_list()
        # every source was checked once, by the stages (check_batch)
        w = self.store.append(
            frame, self.fmt.rows_table.name, unheld_at=self.held.unheld_at(shas), checked=True
        )
        if w.version is not None:
            self.report.commits.append(w.version)
            self.held.committed(shas, w.version)
        self.report.rows_written += w.rows_written
        self.report.copies += w.duplicate_sources_dropped + w.already_held
        self.last = w
