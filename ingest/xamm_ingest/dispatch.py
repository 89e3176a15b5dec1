"""One dispatcher for every ingest format: paths -> discovery -> per-source read -> per-source
checks -> one commit.

A file, a directory (searched recursively) or a list of them goes through the format's discovery
(:mod:`xamm_ingest.formats`). Each source is then read and checked on its own: **any** exception
raised while reading or checking it (an :class:`~xamm_ingest.errors.IngestError` with its own
message, or a ``ValueError``, ``KeyError``, polars error, ... from input nobody foresaw) becomes a
rejection naming the file, the exception type and its message, and the other sources go on. A bad
record inside a good source drops only that record (:mod:`xamm_ingest.records`). The surviving rows
are validated per source against the table schema and written to the store in one commit.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path

import polars as pl

import xamm_ingest.babelstream  # noqa: F401  (registers babelstream)
import xamm_ingest.profiles  # noqa: F401  (registers hpctoolkit, caliper, table)
import xamm_ingest.rajaperf  # noqa: F401  (registers rajaperf)
from xamm_data.regions import region_problems
from xamm_data.schema import BENCHMARK_RUNS, TableSchema
from xamm_data.store import Store, as_store, dedupe_sources, renumber_trials
from xamm_data.validate import ValidationError, validate
from xamm_ingest.errors import IngestError
from xamm_ingest.formats import FORMATS, get_format
from xamm_ingest.machine_names import (
    forget_node_facts,
    record_node_facts,
    take_aliases,
    take_unknown,
)
from xamm_ingest.rajaperf import AGREE_RTOL
from xamm_ingest.readers.base import ReadResult
from xamm_ingest.readers.table import load_mapping
from xamm_ingest.records import (
    Bounds,
    DroppedRecord,
    check_benchmark_records,
    flag_app_records,
    raw_schema,
)
from xamm_ingest.report import IngestReport, Rejected
from xamm_ingest.sources import Task, as_paths

log = logging.getLogger(__name__)


@dataclass
class _Outcome:
    """What reading one source gave: its error, or its notes and dropped records (rows go in the
    batch frame)."""

    path: str
    rel: str = ""
    error: Rejected | None = None
    notes: list[str] = field(default_factory=list)
    dropped: list[DroppedRecord] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # registry aliases the reader resolved


def _unexpected(path: Path, e: Exception) -> Rejected:
    text = " ".join(str(e).split())[:300] or "(no message)"
    return Rejected(
        str(path),
        f"{path}: {type(e).__name__}: {text} (an input xamm did not "
        "expect; the other sources "
        "were read; --debug shows the traceback)",
        problem=f"{type(e).__name__}: {text}",
    )


def _read_one(task: Task, opts: dict) -> tuple[_Outcome, list[dict], pl.DataFrame | None]:
    """Read one source: its outcome, and its rows (dicts) or frame. No polars work here beyond a
    reader's own: this runs in forked workers, where polars' thread pool must stay idle."""
    out = _Outcome(str(task.path), rel=_rel(task))
    take_aliases()
    take_unknown()
    try:
        res = get_format(task.fmt).read(task, opts)
        out.notes = [*res.notes, *take_unknown()]
        out.aliases = take_aliases()
        out.dropped = [DroppedRecord(str(task.path), *d) for d in res.dropped]
        return out, res.rows, res.frame
    except IngestError as e:
        out.error = Rejected(e.path, str(e), e.problem)
    except Exception as e:  # one source never sinks the others
        if opts.get("debug"):
            raise
        out.error = _unexpected(task.path, e)
    return out, [], None


def _rel(task: Task) -> str:
    try:
        return task.path.resolve().relative_to(task.root.resolve()).as_posix()
    except ValueError:
        return task.path.name


def _rows_schema(table: TableSchema) -> dict[str, pl.DataType]:
    """The polars schema readers' rows of ``table`` are built with."""
    return raw_schema() if table is BENCHMARK_RUNS else dict(table.polars_schema)


def _rows_frame(
    outcomes: list[_Outcome],
    rows: list[list[dict]],
    opts: dict,
    table: TableSchema = BENCHMARK_RUNS,
) -> pl.DataFrame | None:
    """One frame of every source's rows; a source whose rows do not fit the schema is rejected
    alone."""
    flat = [r for rs in rows for r in rs]
    if not flat:
        return None
    schema = _rows_schema(table)
    try:
        return pl.from_dicts(flat, schema=schema, strict=True)
    except Exception:
        pass
    keep = []
    for out, rs in zip(outcomes, rows):
        try:
            if rs:
                pl.from_dicts(rs, schema=schema, strict=True)
                keep.extend(rs)
        except Exception as e:
            if opts.get("debug"):
                raise
            out.error = _unexpected(Path(out.path), e)
    return pl.from_dicts(keep, schema=schema, strict=True) if keep else None


def _run_batch(
    batch: list[Task], opts: dict
) -> tuple[list[_Outcome], pl.DataFrame | None, list[pl.DataFrame]]:
    """Read a batch of sources: their outcomes, their rows as one columnar frame, and frames of
    table readers."""
    outcomes, rows, frames = [], [], []
    for task in batch:
        out, rs, frame = _read_one(task, opts)
        outcomes.append(out)
        rows.append(rs)
        if frame is not None and frame.height:
            frames.append(frame)
    table = get_format(batch[0].fmt).table if batch else BENCHMARK_RUNS
    return outcomes, _rows_frame(outcomes, rows, opts, table), frames


def _batches(tasks: list[Task], workers: int, opts: dict, progress: bool):
    size = max(1, min(64, -(-len(tasks) // (max(workers, 1) * 4))))
    batches = [tasks[i : i + size] for i in range(0, len(tasks), size)]
    ex = ProcessPoolExecutor(max_workers=workers) if workers > 1 and len(tasks) >= 16 else None
    try:
        it = (
            ex.map(_run_batch, batches, repeat(opts))
            if ex
            else map(_run_batch, batches, repeat(opts))
        )
        if progress and len(batches) > 1:
            from rich.progress import track  # only when a progress bar is asked for

            it = track(it, total=len(batches), description="reading sources", transient=True)
        yield from it
    finally:
        if ex is not None:
            ex.shutdown()


def validate_by_source(
    frame: pl.DataFrame, schema: TableSchema
) -> tuple[pl.DataFrame, list[Rejected]]:
    """Validate the whole frame; if it fails, validate each source's rows and drop the failing
    sources."""
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
            bad.append(_unexpected(Path(path), e))
    return (pl.concat(good) if good else schema.empty()), bad


def _read_plan(plan, spec, report: IngestReport, opts: dict, workers: int, progress: bool) -> None:
    """Read every planned source in batches, tally each outcome into ``report`` and set its frame
    to the checked, combined rows."""
    frames = []
    for outcomes, rows_frame, table_frames in _batches(plan.tasks, workers, opts, progress):
        frames.extend(table_frames)
        if rows_frame is not None:
            frames.append(_checked(rows_frame, spec, outcomes, opts))
        _tally(report, outcomes)
    if frames:
        report.frame = _combine(pl.concat(frames, how="vertical"), spec, report, opts)


def read_sources(
    fmt: str,
    paths: str | Path | Iterable[str | Path],
    *,
    workers: int | None = None,
    progress: bool = False,
    **opts,
) -> IngestReport:
    """Read ``paths`` as format ``fmt`` into a validated frame.

    Args:
        fmt: one of :data:`~xamm_ingest.formats.FORMATS`.
        paths: files, directories, or a list of them.
        workers: processes reading in parallel.
        progress: show a progress bar.
        **opts: the format's options: ``machine``, ``rtol``, ``bounds`` (rajaperf); ``spec``
            (hpctoolkit, caliper); ``mapping`` (table); ``debug`` re-raises unexpected errors
            instead of rejecting the source.

    Returns:
        The report: ``frame`` (the rows), ``rejected`` sources and ``dropped`` records, each
        with its reason.
    """
    spec = get_format(fmt)
    if fmt == "table":
        if opts.get("mapping") is None:
            raise ValueError("table ingest needs --mapping FILE.toml")
        opts["table_mapping"] = load_mapping(opts["mapping"])
    opts.setdefault("bounds", Bounds())
    t0 = time.perf_counter()
    forget_node_facts()
    plan = spec.plan(as_paths(paths), opts)
    log.info(
        "%s: %d source(s) to read, %d file(s) with nothing to ingest, %d refused at discovery",
        fmt,
        len(plan.tasks),
        len(plan.ignored),
        len(plan.rejected),
    )
    report = IngestReport(
        frame=spec.table.empty(),
        table=spec.table.name,
        ignored=plan.ignored,
        rejected=list(plan.rejected),
        aliases=take_aliases(),
        notes=take_unknown(),
    )
    _read_plan(plan, spec, report, opts, workers or min(os.cpu_count() or 1, 8), progress)
    log.info(
        "%s: %d row(s) from %d source(s) in %.2f s; %d source(s) rejected, %d record(s) dropped",
        fmt,
        report.frame.height,
        report.sources_read,
        time.perf_counter() - t0,
        len(report.rejected),
        len(report.dropped),
    )
    return report


def _tally(report: IngestReport, outcomes: list[_Outcome]) -> None:
    seen = set(report.notes)  # a note every source repeats (an unknown machine) is said once
    for out in outcomes:
        if out.error:
            report.rejected.append(out.error)
            continue
        report.sources_read += 1
        report.notes.extend(n for n in out.notes if n not in seen and not seen.add(n))
        report.aliases.update(out.aliases)
        report.dropped.extend(out.dropped)


def read_results(
    fmt: str, results: list[tuple[str, ReadResult | IngestError]], **opts
) -> IngestReport:
    """The dispatcher's record checks, cross-source step and validation over sources read elsewhere
    (the profiles of a Thicket in memory): ``results`` pairs each source's name (its
    ``source_path``) with what reading it gave, or the error it raised. Options as in
    :func:`read_sources`."""
    spec = get_format(fmt)
    opts.setdefault("bounds", Bounds())
    report = IngestReport(frame=spec.table.empty(), table=spec.table.name)
    outcomes, rows = [], []
    for name, res in results:
        out = _Outcome(name, rel=name)
        if isinstance(res, IngestError):
            out.error = Rejected(res.path, str(res), res.problem)
        else:
            out.notes, out.dropped = res.notes, [DroppedRecord(name, *d) for d in res.dropped]
        outcomes.append(out)
        rows.append([] if out.error else res.rows)
    frame = _rows_frame(outcomes, rows, opts)
    checked = _checked(frame, spec, outcomes, opts) if frame is not None else None
    _tally(report, outcomes)
    if checked is not None and checked.height:
        report.frame = _combine(checked, spec, report, opts)
    return report


def _checked_profiles(frame: pl.DataFrame, outcomes: list[_Outcome], opts: dict) -> pl.DataFrame:
    """A profile is one sample: a row that breaks a plausibility rule, or whose regions break the
    region contract (checked for the whole batch at once), rejects its source."""
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


def _region_problems(frame: pl.DataFrame) -> dict[str, str]:
    """Per source path, what its regions break (:func:`xamm_data.regions.region_problems`)."""
    if "regions" not in frame.columns:
        return {}
    rows = (
        frame.select("source_path", "regions")
        .filter(pl.col("regions").list.len() > 0)
        .explode("regions")
        .unnest("regions")
    )
    return region_problems(rows, "source_path")


def _checked(frame: pl.DataFrame, spec, outcomes: list[_Outcome], opts: dict) -> pl.DataFrame:
    """Record-level checks over a batch's rows; dropped records are credited to their source."""
    if spec.table is not BENCHMARK_RUNS:
        return _checked_profiles(frame, outcomes, opts)
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
                by_rel[rel].error = _unexpected(Path(by_rel[rel].path), e)
        frame = pl.concat(frames) if frames else frame.clear()
    for rel, note in notes:
        by_rel[rel].notes.append(note)
    for d in dropped:
        out = by_rel[d.path]
        out.dropped.append(dataclasses.replace(d, path=out.path))
    return frame


def _combine(frame: pl.DataFrame, spec, report: IngestReport, opts: dict) -> pl.DataFrame:
    before = frame.height
    frame = dedupe_sources(frame, spec.table)
    if frame.height < before:
        report.notes.append(
            f"dropped {before - frame.height} row(s) from byte-identical copies of the same file"
        )
    frame = _finish_isolated(frame, spec, report, opts)
    frame = renumber_trials(frame.drop([c for c in frame.columns if c.startswith("_")]), spec.table)
    frame, bad = validate_by_source(frame, spec.table)
    report.rejected.extend(bad)
    return renumber_trials(frame, spec.table) if bad else frame


def _finish_isolated(frame: pl.DataFrame, spec, report: IngestReport, opts: dict) -> pl.DataFrame:
    """The format's cross-source step (merging, features); if it fails, redo it per directory and
    reject the sources of a directory where it still fails (one run's files share a directory)."""
    try:
        return spec.finish(frame, report, opts)
    except Exception:
        if opts.get("debug"):
            raise
    parts = []
    folder = pl.col("source_path").str.replace(r"/?[^/]*$", "")
    for (_,), part in frame.with_columns(folder.alias("_folder")).group_by(
        ["_folder"], maintain_order=True
    ):
        try:
            parts.append(spec.finish(part.drop("_folder"), report, opts))
        except Exception as e:
            for path in part.get_column("source_path").unique(maintain_order=True).to_list():
                report.rejected.append(_unexpected(Path(path), e))
    return pl.concat(parts, how="vertical") if parts else frame.clear()


def ingest_sources(
    fmt: str,
    paths,
    *,
    store: Store | str | Path | None = None,
    dry_run: bool = False,
    strict: bool = False,
    **kw,
) -> IngestReport:
    """Read (see :func:`read_sources`) and write the rows to the store in one commit.

    Args:
        fmt: a registered format.
        paths: files, directories, or a list of them.
        store: the store (a :class:`Store` or its root; default ``$XAMM_HOME/store``).
        dry_run: read and validate only; nothing is written.
        strict: write nothing if any source was rejected or any record dropped.
        **kw: the format's options.

    Returns:
        The report: ``frame`` (the rows), ``rejected`` sources and ``dropped`` records, each
        with its reason, and the version written.
    """
    report = read_sources(fmt, paths, **kw)
    if dry_run or (strict and (report.rejected or report.dropped)) or report.frame.is_empty():
        return report
    st = as_store(store)
    report.write = st.write(report.frame, report.table)
    report.notes.extend(record_node_facts())
    return report


def read_rajaperf(
    paths,
    *,
    machine: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    rtol: float = AGREE_RTOL,
    bounds: Bounds | None = None,
    debug: bool = False,
) -> IngestReport:
    """Read RAJAPerf outputs into a validated ``benchmark_runs`` frame.

    Args:
        paths: files, directories, or a list of them.
        machine: the machine of every source (CSV runs carry none; Caliper files must agree).
        workers: processes reading in parallel (default: the CPUs, at most 8).
        progress: show a progress bar.
        rtol: the agreement required between CSV and Caliper times of the same run.
        bounds: the physical plausibility bounds (:class:`~xamm_ingest.records.Bounds`).
        debug: re-raise unexpected errors instead of rejecting the source.

    Returns:
        The report: ``frame`` (the rows), ``rejected`` sources and ``dropped`` records, each
        with its reason.
    """
    return read_sources(
        "rajaperf",
        paths,
        workers=workers,
        progress=progress,
        machine=machine,
        rtol=rtol,
        bounds=bounds or Bounds(),
        debug=debug,
    )


def ingest_rajaperf(
    paths,
    *,
    store: Store | str | Path | None = None,
    dry_run: bool = False,
    strict: bool = False,
    **kw,
) -> IngestReport:
    """Read RAJAPerf outputs (see :func:`read_rajaperf`) and write them to the store in one
    commit.

    Args:
        paths: files, directories, or a list of them.
        store: the store (a :class:`Store` or its root; default ``$XAMM_HOME/store``).
        dry_run: read and validate only; nothing is written.
        strict: write nothing if any source was rejected or any record dropped.
        **kw: :func:`read_rajaperf`'s options (``machine``, ``workers``, ``bounds``, ...).

    Returns:
        The report: ``frame`` (the rows), ``rejected`` sources and ``dropped`` records, each
        with its reason, and the version written.
    """
    return ingest_sources("rajaperf", paths, store=store, dry_run=dry_run, strict=strict, **kw)


def read_babelstream(
    paths,
    *,
    machine: str | None = None,
    device: str | None = None,
    compiler: str | None = None,
    implementation: str | None = None,
    path_patterns: list[str] | tuple[str, ...] = (),
    workers: int | None = None,
    progress: bool = False,
    bounds: Bounds | None = None,
    debug: bool = False,
    one_device: bool = False,
) -> IngestReport:
    """Read BabelStream outputs into a validated ``benchmark_runs`` frame (``Stream_*`` rows).

    Args:
        paths: files, directories, or a list of them.
        machine: the machine of every file (BabelStream records none).
        device: ``cpu`` or ``gpu`` for runs that do not name their device.
        compiler: the compiler of every file (BabelStream records none).
        implementation: the implementation of runs that name none (``--csv`` output), e.g.
            ``CUDA``.
        path_patterns: regular expressions searched in each file's path under the ingest root;
            the first that matches supplies its named groups ``machine``, ``compiler``,
            ``device``.
        workers: processes reading in parallel (default: the CPUs, at most 8).
        progress: show a progress bar.
        bounds: the physical plausibility bounds (:class:`~xamm_ingest.records.Bounds`).
        debug: re-raise unexpected errors instead of rejecting the source.
        one_device: the device names one machine's runs print are one device; without it, runs
            of one machine naming two devices of one kind are refused.

    Returns:
        The report: ``frame`` (the rows), ``rejected`` sources and ``dropped`` records, each
        with its reason.
    """
    return read_sources(
        "babelstream",
        paths,
        one_device=one_device,
        workers=workers,
        progress=progress,
        machine=machine,
        device=device,
        compiler=compiler,
        implementation=implementation,
        path_patterns=tuple(path_patterns),
        bounds=bounds,
        debug=debug,
    )


def ingest_babelstream(
    paths,
    *,
    store: Store | str | Path | None = None,
    dry_run: bool = False,
    strict: bool = False,
    **kw,
) -> IngestReport:
    """Read BabelStream outputs (see :func:`read_babelstream`) and write them in one commit.

    Args:
        paths: files, directories, or a list of them.
        store: the store (a :class:`Store` or its root; default ``$XAMM_HOME/store``).
        dry_run: read and validate only; nothing is written.
        strict: write nothing if any source was rejected or any record dropped.
        **kw: :func:`read_babelstream`'s options (``machine``, ``path_patterns``, ...).

    Returns:
        The report, with the version written.
    """
    return ingest_sources("babelstream", paths, store=store, dry_run=dry_run, strict=strict, **kw)


def _check_profile_call(fmt: str, spec) -> None:
    """A profile format, and the spec the files cannot supply (their application's name): the
    caller's mistakes, told before any file is read."""
    if fmt not in FORMATS or get_format(fmt).table.name != "app_profiles":
        raise ValueError(f"unknown format {fmt!r}; expected one of hpctoolkit, caliper, table")
    if fmt != "table" and spec is None:
        raise ValueError(
            f"{fmt} profiles need spec=SampleSpec(app=...) (the CLI's --app): the files do not "
            "name their application"
        )


def read_profiles(
    fmt: str,
    paths,
    spec=None,
    *,
    mapping: str | Path | None = None,
    debug: bool = False,
    workers: int = 1,
) -> IngestReport:
    """Read application profiles into ``app_profiles`` rows.

    Args:
        fmt: ``hpctoolkit``, ``caliper`` or ``table``.
        paths: files, directories, or a list of them.
        spec: what every sample is (app, machine, parameters, ranks, ...).
        mapping: the column mapping of a ``table``.
        debug: re-raise unexpected errors instead of rejecting the source.
        workers: processes reading in parallel.

    Returns:
        The report: ``frame`` (the rows), ``rejected`` sources and ``dropped`` records, each
        with its reason.
    """
    _check_profile_call(fmt, spec)
    return read_sources(fmt, paths, workers=workers, spec=spec, mapping=mapping, debug=debug)


def ingest_profiles(
    fmt: str,
    paths,
    spec=None,
    *,
    mapping=None,
    store: Store | str | Path | None = None,
    dry_run: bool = False,
    strict: bool = False,
    debug: bool = False,
) -> IngestReport:
    """Read application profiles (see :func:`read_profiles`) and write them to the store in
    one commit.

    Args:
        fmt: ``hpctoolkit``, ``caliper`` or ``table``.
        paths: files, directories, or a list of them.
        spec: what every sample is (app, machine, parameters, ranks, ...).
        mapping: the column mapping of a ``table``.
        store: the store (a :class:`Store` or its root; default ``$XAMM_HOME/store``).
        dry_run: read and validate only; nothing is written.
        strict: write nothing if any source was rejected or any record dropped.
        debug: re-raise unexpected errors instead of rejecting the source.

    Returns:
        The report: ``frame`` (the rows), ``rejected`` sources and ``dropped`` records, each
        with its reason, and the version written.
    """
    _check_profile_call(fmt, spec)
    return ingest_sources(
        fmt,
        paths,
        store=store,
        dry_run=dry_run,
        strict=strict,
        workers=1,
        spec=spec,
        mapping=mapping,
        debug=debug,
    )
