"""The named calls of the ingest API: ``read_rajaperf``, ``ingest_babelstream``,
``ingest_profiles``, ``ingest_archive``, ... Each is one line over the one pipeline
(:mod:`xamm_ingest.pipeline`): ``read``/``ingest`` with the format's name and options.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from xamm_data.store.store import Store
from xamm_ingest import pipeline
from xamm_ingest.format import list_formats
from xamm_ingest.formats.rajaperf import AGREE_RTOL
from xamm_ingest.pipeline import DEFAULT_BATCH_FILES
from xamm_ingest.records import Bounds
from xamm_ingest.report import ArchiveReport, IngestReport

__all__ = [
    "ingest_archive",
    "ingest_babelstream",
    "ingest_profiles",
    "ingest_rajaperf",
    "ingest_sources",
    "read_babelstream",
    "read_profiles",
    "read_rajaperf",
    "read_sources",
]


def read_sources(fmt: str, paths: str | Path | Iterable[str | Path], **opts) -> IngestReport:
    """Read ``paths`` as format ``fmt`` into a validated frame: :func:`xamm_ingest.pipeline.read`.

    Args:
        fmt: a format's name.
        paths: files, directories, or a list of them.
        **opts: ``workers``, ``progress`` and the format's options.

    Returns:
        The report: ``frame`` (the rows), ``rejected`` sources and ``dropped`` records.
    """
    return pipeline.read(fmt, paths, **opts)


def ingest_sources(
    fmt: str,
    paths,
    *,
    store: Store | str | Path | None = None,
    dry_run: bool = False,
    strict: bool = False,
    **kw,
) -> IngestReport:
    """Read ``paths`` (see :func:`read_sources`) and write the rows in one commit:
    :func:`xamm_ingest.pipeline.ingest` with ``commit="once"``.

    Args:
        fmt: a format's name.
        paths: files, directories, or a list of them.
        store: the store (a :class:`Store` or its root; default ``$XAMM_HOME/store``).
        dry_run: read and validate only; nothing is written.
        strict: write nothing if any source was rejected or any record dropped.
        **kw: the format's options.

    Returns:
        The report, with the version written.
    """
    return pipeline.ingest(
        fmt, paths, store=store, commit="once", dry_run=dry_run, strict=strict, **kw
    )


def ingest_archive(
    fmt: str,
    paths,
    *,
    store: Store | str | Path | None = None,
    dry_run: bool = False,
    batch_files: int = DEFAULT_BATCH_FILES,
    **opts,
) -> ArchiveReport:
    """Read a corpus and commit it in batches, skipping sources already stored:
    :func:`xamm_ingest.pipeline.ingest` with ``commit="batches"``.

    Args:
        fmt: a format's name (any format: one whose sources come in groups is cut between them).
        paths: files, directories, or a list of them.
        store: the store (a :class:`Store` or its root, local or ``s3://``).
        dry_run: read and validate only; nothing is written.
        batch_files: sources per commit.
        **opts: ``workers``, ``executor``, ``scheduler``, ``progress``, ``rehash`` and the
            format's options.

    Returns:
        The counts: sources read, rejected (with reasons), skipped as already stored, rows
        written and the versions committed.
    """
    report = pipeline.ingest(
        fmt, paths, store=store, commit="batches", dry_run=dry_run, batch_files=batch_files, **opts
    )
    assert isinstance(report, ArchiveReport)  # what commit="batches" returns
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
    one_node: bool = False,
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
        one_node: a CPU and a GPU one machine's runs name are one node's; without it (and
            without a registry record of the machine with both), those runs are refused.

    Returns:
        The report: ``frame`` (the rows), ``rejected`` sources and ``dropped`` records, each
        with its reason.
    """
    return read_sources(
        "babelstream",
        paths,
        one_device=one_device,
        one_node=one_node,
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
    """A profile format: the caller's mistake, told before any file is read (the format's
    ``prepare`` asks for the spec the files cannot supply)."""
    names = [f.name for f in list_formats(ingests=True) if f.rows_table.name == "app_profiles"]
    if fmt not in names:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(names)}")


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
